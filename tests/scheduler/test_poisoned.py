"""Poisoned objects (past admission, yet unreadable by a component: a bad quantity, an affinity of the wrong
shape, a priority string, ...) are reported once and skipped; every other job keeps being scheduled."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.api.wellformed import forget, problem
from pumice.runtime import Cluster
from tests.fuzz import strategies as S

JOBS = "jobs.batch.volcano.sh"


def node(name: str, cpu: str = "64") -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "256Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
                **spec}}


def job(name: str, replicas: int = 2) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano", "minAvailable": replicas, "tasks": [{
                "name": "t", "replicas": replicas, "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


#: What issue 15 names, and the other ways a pod can be unreadable that admission lets through.
POISONED_PODS = {
    "bad-quantity": pod("bad-quantity", cpu="lots"),
    "bad-affinity": pod("bad-affinity", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}}),
    "affinity-string": pod("affinity-string", affinity="x"),
    "priority-string": pod("priority-string", priority="high"),
    "spec-string": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "spec-string", "namespace": "default"},
                    "spec": "x"},
    "containers-string": pod("containers-string", containers="x"),
    "node-selector-list": pod("node-selector-list", nodeSelector=["a"]),
    "tolerations-wrong": pod("tolerations-wrong", tolerations=[{"key": 1}]),
    "resources-string": pod("resources-string", containers=[{"name": "c", "resources": "x"}]),
}


def _bound(cluster: Cluster, names: list[str]) -> dict[str, str]:
    specs = {n: cluster.store.get("pods", "default", n).get("spec") for n in names}
    return {n: (spec.get("nodeName") if isinstance(spec, dict) else "") or "" for n, spec in specs.items()}


def _malformed_events(cluster: Cluster) -> dict[str, int]:
    events = cluster.store.list("events", "default")[0]
    counted: dict[str, int] = {}
    for event in events:
        if event.get("reason") == "Malformed":
            name = event["involvedObject"]["name"]
            counted[name] = counted.get(name, 0) + int(event.get("count") or 1)
    return counted


def _past_admission(cluster: Cluster, resource: str, obj: dict[str, Any], *,
                    patch: dict[str, Any] | None = None) -> None:
    """Write ``obj`` (or ``patch`` the object it names) as admission never saw it (a data directory from before a
    check, a status write): with the store's admission hook set aside for this one write (validation and priority
    admission refuse a priority string at the door now)."""
    gate = cluster.store._gate  # type: ignore[attr-defined]
    hook, gate.hook = gate.hook, None
    try:
        if patch is None:
            cluster.store.create(resource, obj)
        else:
            cluster.store.patch(resource, obj["metadata"].get("namespace"), obj["metadata"]["name"], patch)
    finally:
        gate.hook = hook


def test_every_good_pod_and_job_is_bound_among_poisoned_ones(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    cluster = Cluster()
    cluster.apply([node("n1"), node("n2")])
    good: list[str] = []
    for i, bad in enumerate(POISONED_PODS.values()):  # interleaved: good, bad, good, bad, ...
        cluster.store.create("pods", pod(f"good-{i}"))
        good.append(f"good-{i}")
        _past_admission(cluster, "pods", bad)
        cluster.store.create(JOBS, job(f"job-{i}"))
    cluster.store.create("pods", pod("good-last"))
    good.append("good-last")
    for _ in range(5):
        cluster.step()
        cluster.clock.advance_to(cluster.clock.now() + 1)
    assert all(_bound(cluster, good).values()), _bound(cluster, good)
    job_pods = [p for p in cluster.store.list("pods", "default")[0] if p["metadata"]["name"].startswith("job-")]
    assert len(job_pods) == 2 * len(POISONED_PODS)
    assert all(p["spec"].get("nodeName") for p in job_pods)
    assert not any(_bound(cluster, list(POISONED_PODS)).values())
    # each poisoned pod is reported once: one Warning event (not folded into a count), one scheduler log line
    assert _malformed_events(cluster) == dict.fromkeys(POISONED_PODS, 1)
    for name in POISONED_PODS:
        said = [r for r in caplog.records if r.name == "pumice.scheduler" and f"default/{name}:" in r.getMessage()]
        assert len(said) == 1, (name, [r.getMessage() for r in said])
    message = next(e for e in cluster.store.list("events", "default")[0]
                   if e["involvedObject"]["name"] == "bad-quantity")["message"]
    assert 'spec.containers[0].resources.requests[cpu]: invalid quantity "lots"' in message


def test_a_poisoned_update_keeps_what_a_running_pod_holds() -> None:
    cluster = Cluster()
    cluster.apply([node("only", cpu="4")])
    cluster.store.create("pods", pod("big", cpu="4"))
    cluster.step()
    assert _bound(cluster, ["big"])["big"] == "only"
    # the running pod's spec is broken afterwards (pumice does not make pod specs immutable)
    _past_admission(cluster, "pods", pod("big"), patch={"spec": {"priority": "high"}})
    cluster.store.create("pods", pod("next", cpu="4"))
    for _ in range(3):
        cluster.step()
        cluster.clock.advance_to(cluster.clock.now() + 1)
    assert _bound(cluster, ["next"])["next"] == ""  # the node is still full: nothing is over-committed
    _past_admission(cluster, "pods", pod("big"), patch={"spec": {"priority": None}})  # readable again
    cluster.store.delete("pods", "default", "big")
    for _ in range(3):
        cluster.step()
        cluster.clock.advance_to(cluster.clock.now() + 1)
    assert _bound(cluster, ["next"])["next"] == "only"


def test_poisoned_nodes_queues_and_statuses_are_skipped() -> None:
    cluster = Cluster()
    cluster.apply([node("good-node")])
    _past_admission(cluster, "nodes", node("bad-node") | {"status": {"allocatable": {"cpu": ["8"]}}})
    _past_admission(cluster, "priorityclasses.scheduling.k8s.io", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "odd"}, "value": "10"})
    cluster.store.create("queues.scheduling.volcano.sh", {"apiVersion": "scheduling.volcano.sh/v1beta1",
                                                          "kind": "Queue", "metadata": {"name": "other"},
                                                          "spec": {"weight": 1}})
    cluster.step()
    # a status written through /status, which no webhook sees
    cluster.store.patch("queues.scheduling.volcano.sh", None, "other", {"status": {"state": ["Open"]}},
                        subresource="status")
    cluster.store.create("pods", pod("p", priorityClassName="odd"))
    # a pod for that queue: its PodGroup is refused (the queue is not Open), and the others go on
    waiting = pod("in-other")
    waiting["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "other"}
    cluster.store.create("pods", waiting)
    for _ in range(3):
        cluster.step()
        cluster.clock.advance_to(cluster.clock.now() + 1)
    assert _bound(cluster, ["p"])["p"] == "good-node"
    assert _bound(cluster, ["in-other"])["in-other"] == ""


@st.composite
def poisoned(draw: st.DrawFn) -> dict[str, Any]:
    """A pod that a component cannot read: a random mutation of a good one, as the fuzz suite makes them."""
    template = pod("x")
    for _ in range(20):
        candidate = draw(S.mutated(copy.deepcopy(template), max_mutations=2))
        if isinstance(candidate, dict) and problem({**candidate, "kind": "Pod"}) is not None:
            meta = candidate.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("labels", {}), dict) and isinstance(
                    meta.get("annotations", {}), dict):
                return candidate
    return POISONED_PODS[draw(st.sampled_from(sorted(POISONED_PODS)))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.tuples(st.booleans(), poisoned()), min_size=1, max_size=10))
def test_property_good_pods_are_bound_whatever_poison_is_interleaved(mix: list[tuple[bool, Any]]) -> None:
    cluster = Cluster()
    cluster.apply([node("n1"), node("n2")])
    good = []
    for i, (good_first, bad) in enumerate(mix):
        bad = {**bad, "apiVersion": "v1", "kind": "Pod",
               "metadata": {**(bad.get("metadata") or {}), "name": f"bad-{i}", "namespace": "default"}}
        writes = [("good", pod(f"good-{i}")), ("bad", bad)]
        for what, obj in writes if good_first else reversed(writes):
            try:
                cluster.store.create("pods", obj)
            except Exception:
                if what == "good":
                    raise  # (a bad one the store refuses never reaches a component: fine)
        good.append(f"good-{i}")
    for _ in range(4):
        cluster.step()
        cluster.clock.advance_to(cluster.clock.now() + 1)
    assert all(_bound(cluster, good).values()), _bound(cluster, good)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(poisoned(), st.one_of(st.none(), st.just("node-b"), st.integers(), st.lists(st.text(max_size=3), max_size=1)),
       st.sampled_from(["", "node-a"]))
def test_property_a_version_after_one_that_passed_gets_the_verdict_of_a_fresh_check(
        bad: dict[str, Any], node: Any, node_before: str) -> None:
    """``problem(new, passed)`` skips the parts equal to those of the version that passed (a watch sends every
    version anew): whatever changed — a bind to a node name of any type, or the spec poisoned — the verdict is
    a fresh check's."""
    before = {**pod("p"), "kind": "Pod"}
    if node_before:
        before["spec"]["nodeName"] = node_before
    assert problem(before) is None
    bound = copy.deepcopy(before)
    bound["spec"]["nodeName"] = node
    poisoned_version = {**copy.deepcopy(bad), "kind": "Pod"}
    for after in (bound, poisoned_version):
        forget()
        fresh = problem(copy.deepcopy(after))
        assert problem(after, before) == fresh


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.one_of(poisoned(), st.just({**pod("x"), "spec": {**pod("x")["spec"], "priority": 1}}),
                          st.just(pod("x"))), min_size=1, max_size=4),
       st.sampled_from([1, True, 1.0, "1", None]))
def test_property_a_replica_gets_the_verdict_of_a_fresh_check(pods: list[dict[str, Any]], priority: Any) -> None:
    """Verdicts on pod specs are remembered by content (new replicas of a task each come as a new object with an
    equal spec): every new object, whatever was checked before it, gets what a fresh check gives — ``1``,
    ``1.0`` and ``True`` are different priorities."""
    forget()
    replicas = [r for p in pods for r in (p, {**p, "spec": {**p["spec"], "priority": priority}}
                                          if isinstance(p.get("spec"), dict) else p)]
    expected = []
    for replica in replicas:
        forget()
        expected.append(problem({**copy.deepcopy(replica), "kind": "Pod"}))
    forget()
    assert [problem({**copy.deepcopy(r), "kind": "Pod"}) for r in replicas + replicas] == expected + expected


_TOLERATION_VALUES = st.one_of(st.none(), st.text(max_size=3), st.integers(-2, 2), st.booleans(), st.floats(0, 9),
                               st.lists(st.text(max_size=2), max_size=1), st.dictionaries(st.text(max_size=2),
                                                                                         st.text(max_size=2)))
_TOLERATION = st.one_of(
    st.fixed_dictionaries({}, optional={k: _TOLERATION_VALUES for k in
                                        ("key", "operator", "value", "effect", "tolerationSeconds", "extra")}),
    _TOLERATION_VALUES)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOLERATION, max_size=3))
def test_property_tolerations_checked_without_the_model_get_the_models_verdict(tolerations: list[Any]) -> None:
    """Every pod carries tolerations (the API server adds two), so they are checked field by field, and the
    pydantic model is asked only to name what is wrong: the verdict is the model's, whatever the values."""
    from pumice.api.core import Toleration
    from pumice.api.wellformed import _Bad, _model

    try:
        _model(list[Toleration], tolerations or None, "spec.tolerations")
        expected = None
    except _Bad as bad:
        expected = str(bad)
    assert problem({**pod("p", tolerations=copy.deepcopy(tolerations)), "kind": "Pod"}) == expected
