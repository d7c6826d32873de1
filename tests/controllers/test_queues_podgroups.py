"""Queue controller (defaults, parent, Open/Closing/Closed, counts) and PodGroups for plain pods."""

from __future__ import annotations

from pumice.clock import VirtualClock
from pumice.controllers import ControllerManager
from pumice.store import MemoryStore
from tests.builders import queue
from tests.builders import vcjob as job

from .harness import PODGROUPS, QUEUES, Cluster, command


def _state(c: Cluster, name: str) -> str:
    return str(c.store.get(QUEUES, None, name)["status"]["state"])


def test_root_and_default_exist_from_the_start_and_parents_default_to_root() -> None:
    store = MemoryStore()
    ControllerManager(store, VirtualClock())
    names = [q["metadata"]["name"] for q in store.list(QUEUES)[0]]
    assert names == ["default", "root"]
    assert store.get(QUEUES, None, "root")["spec"]["reclaimable"] is False
    c = Cluster()
    c.apply([queue("team")])
    team = c.store.get(QUEUES, None, "team")
    assert team["spec"]["parent"] == "root" and team["spec"]["weight"] == 1 and team["status"]["state"] == "Open"


def test_close_queue_closes_children_and_reopen_restores_them() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([queue("org", deserved={"cpu": "8"}), queue("team-a", parent="org", deserved={"cpu": "4"}),
             queue("team-b", parent="org", deserved={"cpu": "4"})])
    c.apply([job("busy", queue="team-a")])
    c.run_until(lambda: c.phase("busy") == "Running")
    c.apply([command("close-b", "CloseQueue", "Queue", "team-b")])
    assert _state(c, "team-b") == "Closed"
    c.apply([command("close-org", "CloseQueue", "Queue", "org")])
    assert (_state(c, "org"), _state(c, "team-a"), _state(c, "team-b")) == ("Closed", "Closing", "Closed")
    marks = {n: c.store.get(QUEUES, None, n)["metadata"].get("annotations", {}) for n in ("team-a", "team-b")}
    assert marks["team-a"] == {"volcano.sh/closed-by-parent": "org"} and marks["team-b"] == {}
    c.apply([command("open-a", "OpenQueue", "Queue", "team-a")])
    assert _state(c, "team-a") == "Closing"  # a child cannot open while its parent is closed
    c.store.delete("jobs.batch.volcano.sh", "default", "busy")
    c.manager.sync()
    assert _state(c, "team-a") == "Closed"  # Closing -> Closed once its PodGroups are gone
    c.apply([command("open-org", "OpenQueue", "Queue", "org")])
    assert (_state(c, "org"), _state(c, "team-a"), _state(c, "team-b")) == ("Open", "Open", "Closed")
    assert c.store.list("commands.bus.volcano.sh", "default")[0] == []


def test_queue_status_counts_podgroups_per_phase() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([job("a"), job("b", cpu="100")])  # b never fits
    for _ in range(3):
        c.step()
    status = c.store.get(QUEUES, None, "default")["status"]
    assert status["running"] == 1
    assert status["pending"] + status.get("inqueue", 0) == 1


def test_plain_pod_gets_a_podgroup_and_is_scheduled() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "solo", "namespace": "default",
                        "annotations": {"scheduling.volcano.sh/group-min-member": "1"}},
           "spec": {"schedulerName": "volcano", "containers": [
               {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}]},
           "status": {"phase": "Pending"}}
    (created,) = c.apply([pod])
    (pg,) = c.store.list(PODGROUPS, "default")[0]
    assert pg["metadata"]["name"] == f"podgroup-{created['metadata']['uid']}"
    assert pg["spec"] == {"minMember": 1, "minResources": {"cpu": "500m"}, "queue": "default"}
    solo = c.store.get("pods", "default", "solo")
    assert solo["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pg["metadata"]["name"]
    c.run_until(lambda: bool(c.store.get("pods", "default", "solo")["spec"].get("nodeName")))
    c.store.delete("pods", "default", "solo")
    c.manager.sync()
    assert c.store.list(PODGROUPS, "default")[0] == []


def test_pods_of_other_schedulers_are_left_alone() -> None:
    c = Cluster()
    c.apply([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "k8s", "namespace": "default"},
              "spec": {"containers": [{"name": "c", "image": "x"}]}}])
    assert c.store.list(PODGROUPS, "default")[0] == []


def test_manager_asks_no_controller_while_the_store_stands_still() -> None:
    store = MemoryStore()
    manager = ControllerManager(store, VirtualClock())
    asked: list[str] = []
    for controller in manager.controllers:
        pending = controller.pending  # type: ignore[attr-defined]
        controller.pending = lambda p=pending, c=controller: asked.append(type(c).__name__) or p()  # type: ignore
    manager.sync()
    assert asked  # the first sync looks at every controller
    asked.clear()
    manager.sync()
    assert asked == []  # nothing changed since: nobody is asked
    store.create(QUEUES, queue("team"))
    assert manager.sync() is True  # a write is seen: the new queue gets its parent and state
    assert store.get(QUEUES, None, "team")["spec"]["parent"] == "root"
    assert asked
