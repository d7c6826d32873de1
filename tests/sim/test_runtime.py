"""``Cluster``: the parts wired together, stepping and advancing a virtual clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pumice.runtime import Cluster, admitted_deletes, admitted_resources, admitted_updates
from pumice.sim import load_openb
from pumice.store import Gone, MemoryStore
from pumice.store.jsonutil import copy_json
from tests.builders import node, pod, podgroup

NODE = node("n1", cpu="4", memory="8Gi", pods="10")


def timed(name: str, seconds: int, cpu: str = "1") -> list[dict[str, Any]]:
    """A one-pod PodGroup whose pod runs ``seconds`` on a simulated node."""
    return [podgroup(name, queue="default"),
            pod(name, group=name, cpu=cpu, annotations={"pumice.io/duration": str(seconds)})]


def phase(c: Cluster, name: str) -> str:
    return c.store.get("pods", "default", name).get("status", {}).get("phase", "Pending")


def test_run_until_places_runs_and_finishes() -> None:
    c = Cluster()
    t0 = c.clock.now()
    c.apply([NODE, *timed("a", 30), *timed("b", 90, cpu="4")])
    c.run_until(t0 + 10)
    assert phase(c, "a") == "Running" and phase(c, "b") == "Pending"  # b needs the whole node
    c.run_until(t0 + 31)
    assert phase(c, "a") == "Succeeded" and phase(c, "b") == "Running"
    assert c.clock.now() == t0 + 31
    assert c.run_idle() == t0 + 30 + 90  # b ran from t0+30, when a freed the node
    assert phase(c, "b") == "Succeeded"
    assert c.next_wakeup() is None


def test_idle_time_costs_nothing() -> None:
    c = Cluster()
    t0 = c.clock.now()
    c.apply([NODE, *timed("long", 30 * 86400)])
    c.run_until(t0 + 60 * 86400)
    assert phase(c, "long") == "Succeeded"
    assert c.cycles <= 3


def test_apply_updates_like_kubectl() -> None:
    c = Cluster()
    c.apply([NODE])
    c.apply([{**NODE, "metadata": {"name": "n1", "labels": {"zone": "a"}}, "spec": {"unschedulable": True}}])
    node = c.store.get("nodes", None, "n1")
    assert node["metadata"]["labels"] == {"zone": "a"} and node["spec"]["unschedulable"] is True
    assert node["status"]["allocatable"]["cpu"] == "4"  # status kept
    assert c.delete([{"kind": "Node", "metadata": {"name": "n1"}}, {"kind": "Node", "metadata": {"name": "x"}}]) == 1


def test_default_queues_exist() -> None:
    c = Cluster()
    c.step()
    names = {q["metadata"]["name"] for q in c.store.list("queues.scheduling.volcano.sh")[0]}
    assert {"root", "default"} <= names


def test_status_only_cycles_are_deferred_in_virtual_time() -> None:
    lazy, eager = Cluster(), Cluster(lazy_status=False)
    for c in (lazy, eager):
        t0 = c.clock.now()
        c.apply([NODE, *timed("a", 30)])
        c.run_until(t0 + 100)
        assert phase(c, "a") == "Succeeded"
        group = c.store.get("podgroups.scheduling.volcano.sh", "default", "a")
        assert group["status"]["succeeded"] == 1  # final status written either way (flush at the end)
    assert lazy.cycles < eager.cycles


def test_the_admission_hook_leaves_alone_the_writes_it_is_not_shown(shared: Path) -> None:
    """The store skips the hook outside ``admitted_resources()`` (deletions: ``admitted_deletes()``): the hook
    must not care about those writes."""
    from pumice.admission import Admission  # type: ignore[attr-defined, unused-ignore]

    scope, updates, deletes = admitted_resources(), admitted_updates(), admitted_deletes()
    raw = Admission()
    skipped: set[str] = set()

    def spy(op: str, resource: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> Any:
        before = (copy_json(new), copy_json(old))
        result = raw(op, resource, new, old)
        if resource not in {"DELETE": deletes, "UPDATE": updates}.get(op, scope):
            skipped.add(f"{op} {resource}" if op != "CREATE" else resource)
            assert result is None and (new, old) == before, (op, resource)
        return result

    store = MemoryStore(admission=spy)
    raw.attach(store)
    c = Cluster(store=store)
    openb = shared / "data" / "openb"
    for sc in (load_openb(openb, limit=20, as_jobs=True), load_openb(openb, limit=20)):
        c.apply(sc.nodes[:4])
        for action in sc.timeline:
            c.apply(action.objects)
    c.run_idle()
    c.delete([{"kind": "Pod", "metadata": {"name": p["metadata"]["name"]}} for p in store.list("pods")[0][:5]])
    c.run_idle()
    assert {"UPDATE pods/status", "UPDATE pods/binding", "UPDATE podgroups.scheduling.volcano.sh/status",
            "UPDATE queues.scheduling.volcano.sh/status", "DELETE pods", "DELETE podgroups.scheduling.volcano.sh"} \
        <= skipped


def test_apply_can_hand_objects_over_without_their_caller_seeing_system_fields() -> None:
    c = Cluster()
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}},
            "status": {"capacity": {"cpu": "4"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    stored_node, stored_pod = c.apply([node, pod], copy=False, owned=True)
    assert node["metadata"] == {"name": "n1", "labels": {"a": "b"}}  # no uid, no resourceVersion...
    assert pod["metadata"] == {"name": "p", "namespace": "ns"}
    assert stored_node["metadata"]["uid"] and stored_pod["metadata"]["uid"]
    assert stored_node["metadata"]["labels"] is node["metadata"]["labels"]  # the rest is the store's now, shared
    # admission defaults a pod's priority in a new spec; what it does not change is shared, uncopied
    assert stored_pod["spec"]["containers"] is pod["spec"]["containers"]
    assert stored_pod["spec"]["priority"] == 0 and "priority" not in pod["spec"]


def test_a_cluster_keeps_the_event_log_it_is_given() -> None:
    assert Cluster().store.history == 10_000  # type: ignore[attr-defined]
    short = Cluster(history=8)
    for i in range(20):
        short.store.create("configmaps", {"metadata": {"name": f"c{i}", "namespace": "ns"}})
    with pytest.raises(Gone):
        short.store.watch("configmaps", resource_version="2")
