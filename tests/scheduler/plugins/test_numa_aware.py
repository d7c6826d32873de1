"""numa-aware: Guaranteed pods get whole CPUs aligned as the node's topology manager policy demands."""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.api.numa import (
    CPU_MANAGER_ANNOTATION,
    CPUSET_ANNOTATION,
    NUMA_NODES_ANNOTATION,
    POLICY_ANNOTATION,
    TOPOLOGY_MANAGER_ANNOTATION,
    declared_numatopology,
    format_cpuset,
    parse_cpuset,
)
from pumice.scheduler import build_cluster_state, load_conf, run_session
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text

NUMA = {"name": "numa-aware"}


def numa_node(name: str, numa: int = 2, per: int = 4, *, cpu_manager: str = "static",
              topology: str = "single-numa-node", free: str | None = None,
              allocations: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """A Node of ``numa`` x ``per`` CPUs declaring NUMA, and the Numatopology its kubelet publishes
    (``free``: the CPUs not held by pods, all by default)."""
    obj = node(name, cpu=str(numa * per), memory="64Gi", capacity=True)
    obj["metadata"]["annotations"] = {NUMA_NODES_ANNOTATION: str(numa), CPU_MANAGER_ANNOTATION: cpu_manager,
                                      TOPOLOGY_MANAGER_ANNOTATION: topology}
    topo = declared_numatopology(obj)
    assert topo is not None
    if free is not None:
        topo["spec"]["numares"]["cpu"]["allocatable"] = free
    if allocations:
        topo["spec"]["podAllocations"] = allocations
    return [obj, topo]


def guaranteed(name: str, cpus: int | str, policy: str | None = "single-numa-node", **kw: Any) -> dict[str, Any]:
    limits = {"cpu": str(cpus), "memory": "1Gi"}
    main = {"name": "main", "image": "busybox", "resources": {"requests": dict(limits), "limits": dict(limits)}}
    notes = {POLICY_ANNOTATION: policy} if policy is not None else {}
    return pod(name, group=kw.pop("group", name), containers=[main], annotations={**notes, **kw.pop("annotations", {})},
               **kw)


def groups(*names: str) -> list[dict[str, Any]]:
    return [podgroup(n, queue="default", phase="Inqueue") for n in names]


def decide(objects: list[dict[str, Any]], *plugins: Any) -> Any:
    return run_session(build_cluster_state(objects), load_conf(conf_text(*plugins, "predicates", actions="allocate")))


def numa_of(cpus: str, per: int = 4) -> set[int]:
    return {c // per for c in parse_cpuset(cpus)}


def test_single_numa_node_pod_of_four_fits_of_six_does_not() -> None:
    four = [*numa_node("n"), queue("default"), *groups("four"), guaranteed("four", 4)]
    out = decide(four, NUMA)
    assert list(out.binds) == ["default/four"]
    cpus = out.pod_annotations["default/four"][CPUSET_ANNOTATION]
    assert len(parse_cpuset(cpus)) == 4 and len(numa_of(cpus)) == 1
    six = [*numa_node("n"), queue("default"), *groups("six"), guaranteed("six", 6)]
    out = decide(six, NUMA)
    assert not out.binds
    assert "container cannot be assigned by numa" in out.pending_pods["default/six"]
    # without the plugin the node's 8 CPUs take it
    assert decide(six).binds == {"default/six": "n"}


def test_two_single_numa_pods_take_both_numa_nodes_and_a_third_waits() -> None:
    objects = [*numa_node("n"), queue("default"), *groups("a", "b", "c"),
               guaranteed("a", 3), guaranteed("b", 3), guaranteed("c", 2)]
    out = decide(objects, NUMA)
    assert sorted(out.binds) == ["default/a", "default/b"]
    a, b = (parse_cpuset(out.pod_annotations[f"default/{k}"][CPUSET_ANNOTATION]) for k in "ab")
    assert not a & b
    assert {c // 4 for c in a} != {c // 4 for c in b}  # one NUMA node each
    assert "cannot be assigned by numa" in out.pending_pods["default/c"]  # 1 CPU left on each NUMA node


def test_restricted_needs_the_narrowest_possible_alignment_best_effort_only_prefers_it() -> None:
    # CPUs 0-1 and 4-5 are held: 3 CPUs could fit one NUMA node, but now only across two
    for policy, fits in (("restricted", False), ("best-effort", True)):
        objects = [*numa_node("n", topology=policy, free="2-3,6-7"), queue("default"), *groups("p"),
                   guaranteed("p", 3, policy)]
        out = decide(objects, NUMA)
        assert ("default/p" in out.binds) is fits, policy
        if fits:
            assert len(numa_of(out.pod_annotations["default/p"][CPUSET_ANNOTATION])) == 2
    # restricted admits a spread that no single NUMA node could ever hold
    objects = [*numa_node("n", topology="restricted"), queue("default"), *groups("p"),
               guaranteed("p", 6, "restricted")]
    out = decide(objects, NUMA)
    assert numa_of(out.pod_annotations["default/p"][CPUSET_ANNOTATION]) == {0, 1}


def test_policy_must_match_and_cpu_manager_be_static() -> None:
    objects = [*numa_node("none-cpu", cpu_manager="none"), *numa_node("other", topology="best-effort"),
               node("plain", cpu="8"), queue("default"), *groups("p"), guaranteed("p", 2)]
    out = decide(objects, NUMA)
    assert not out.binds
    reason = out.pending_pods["default/p"]
    assert "cpu manager policy isn't static" in reason
    assert "task topology policy[single-numa-node] is different" in reason
    assert "numa info is empty" in reason


def test_pods_not_guaranteed_or_with_fractional_cpus_are_not_pinned() -> None:
    burstable = pod("b", group="b", cpu="6", memory="1Gi", annotations={POLICY_ANNOTATION: "single-numa-node"})
    objects = [*numa_node("n"), queue("default"), *groups("b", "f"), burstable, guaranteed("f", "1500m")]
    out = decide(objects, NUMA)
    assert sorted(out.binds) == ["default/b", "default/f"]
    assert all(CPUSET_ANNOTATION not in out.pod_annotations.get(k, {}) for k in out.binds)


def test_guaranteed_pod_without_policy_still_meets_the_nodes_policy() -> None:
    objects = [*numa_node("n"), queue("default"), *groups("p"), guaranteed("p", 6, policy=None)]
    assert not decide(objects, NUMA).binds
    objects = [*numa_node("n", topology="none"), queue("default"), *groups("p"), guaranteed("p", 6, policy=None)]
    assert decide(objects, NUMA).binds == {"default/p": "n"}


def test_score_prefers_the_node_where_it_fits_one_numa_node() -> None:
    # both best-effort; on "a" NUMA node 0 and 1 are half held, so 4 CPUs span two; "b" holds them in one
    objects = [*numa_node("a", topology="best-effort", free="2-3,6-7"), *numa_node("b", topology="best-effort"),
               queue("default"), *groups("p"), guaranteed("p", 4, "best-effort")]
    out = decide(objects, NUMA)
    assert out.binds == {"default/p": "b"}
    assert len(numa_of(out.pod_annotations["default/p"][CPUSET_ANNOTATION])) == 1
    # the weight scales the score; with weight 0 the first node (ties: lowest index) wins
    assert decide(objects, {"name": "numa-aware", "arguments": {"weight": 0}}).binds == {"default/p": "a"}


def test_cpus_sent_with_a_bind_stay_taken_until_the_node_reports_them() -> None:
    bound = guaranteed("r", 4, node="n", phase="Running", uid=True,
                       annotations={CPUSET_ANNOTATION: "0-3"})
    objects = [*numa_node("n"), queue("default"), *groups("r", "a", "b"), bound,
               guaranteed("a", 4), guaranteed("b", 4)]
    out = decide(objects, NUMA)
    assert list(out.binds) == ["default/a"]
    assert out.pod_annotations["default/a"][CPUSET_ANNOTATION] == "4-7"
    # once the node reports the pod's CPUs (allocatable without them, the pod in podAllocations) nothing changes
    reported = [*numa_node("n", free="4-7", allocations=[{"uid": "default-r", "name": "r", "namespace": "default"}]),
                *objects[2:]]
    out = decide(reported, NUMA)
    assert list(out.binds) == ["default/a"]
    assert out.pod_annotations["default/a"][CPUSET_ANNOTATION] == "4-7"


def test_reserved_cpus_are_never_given() -> None:
    objects = numa_node("n")
    objects[1]["spec"]["resReserved"] = {"cpu": "1"}
    objects += [queue("default"), *groups("a", "b"), guaranteed("a", 4), guaranteed("b", 4)]
    out = decide(objects, NUMA)
    assert len(out.binds) == 1  # one NUMA node lost a CPU to the system
    (key,) = out.binds
    assert 0 not in parse_cpuset(out.pod_annotations[key][CPUSET_ANNOTATION])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_no_cpu_is_given_twice_and_single_numa_pods_stay_in_one(data: st.DataObject) -> None:
    policies = ["none", "best-effort", "restricted", "single-numa-node"]
    objects: list[dict[str, Any]] = [queue("default")]
    shapes: dict[str, tuple[int, int]] = {}
    held: dict[str, set[int]] = {}
    for i in range(data.draw(st.integers(1, 3))):
        numa, per = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
        name = f"n{i}"
        # some CPUs already held by running pods the node reports
        taken = data.draw(st.sets(st.integers(0, numa * per - 1), max_size=numa * per))
        free = format_cpuset(set(range(numa * per)) - taken)
        objects += numa_node(name, numa, per, topology=data.draw(st.sampled_from(policies)), free=free)
        shapes[name] = (numa, per)
        held[name] = set(taken)
    names = [f"p{k}" for k in range(data.draw(st.integers(1, 8)))]
    asked: dict[str, tuple[int, str | None]] = {}
    for k in names:
        cpus = data.draw(st.integers(1, 6))
        policy = data.draw(st.sampled_from([None, *policies]))
        asked[f"default/{k}"] = (cpus, policy)
        objects += [podgroup(k, queue="default", phase="Inqueue"), guaranteed(k, cpus, policy)]
    out = decide(objects, NUMA)
    given_: dict[str, list[int]] = defaultdict(list)
    for key, where in out.binds.items():
        text = out.pod_annotations.get(key, {}).get(CPUSET_ANNOTATION)
        cpus_asked, policy = asked[key]
        numa, per = shapes[where]
        if text is None:
            continue
        cpus = parse_cpuset(text)
        assert len(cpus) == cpus_asked
        assert cpus <= set(range(numa * per)) and not cpus & held[where]
        given_[where] += sorted(cpus)
        if policy == "single-numa-node":
            assert len({c // per for c in cpus}) == 1
    for where, cpus in given_.items():
        assert len(cpus) == len(set(cpus)), f"a CPU of {where} given twice: {cpus}"


def test_replicas_of_one_task_each_get_their_own_numa_node() -> None:
    # a gang of 5 replicas of 3 CPUs on two nodes of 2 x 4: four NUMA nodes hold one each, the fifth fits
    # none (node totals would take it), with or without the score
    def gang() -> list[dict[str, Any]]:
        return [*numa_node("a"), *numa_node("b"), queue("default"),
                podgroup("g", queue="default", phase="Inqueue", min_member=4),
                *(pod(f"g-{i}", group="g", annotations={POLICY_ANNOTATION: "single-numa-node"},
                      containers=[{"name": "main", "image": "busybox", "resources": {
                          "requests": {"cpu": "3", "memory": "1Gi"}, "limits": {"cpu": "3", "memory": "1Gi"}}}])
                  for i in range(5))]

    for plugin in (NUMA, {"name": "numa-aware", "arguments": {"weight": 0}}):
        out = decide(gang(), plugin)
        assert len(out.binds) == 4, plugin
        places = {(where, frozenset(numa_of(out.pod_annotations[key][CPUSET_ANNOTATION])))
                  for key, where in out.binds.items()}
        assert len(places) == 4 and all(len(numas) == 1 for _, numas in places)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_laddered_replicas_decide_as_one_by_one(data: st.DataObject) -> None:
    """Replicas of a single-numa-node task share a ladder whose rows take the CPUs of the replicas before
    them: binds and CPU sets are exactly those of checking and scoring every replica on every node."""
    from pumice.scheduler.framework import placement

    objects: list[dict[str, Any]] = [queue("default")]
    for i in range(data.draw(st.integers(2, 5))):
        numa, per = data.draw(st.integers(1, 3)), data.draw(st.integers(2, 6))
        taken = data.draw(st.sets(st.integers(0, numa * per - 1), max_size=numa * per // 2))
        objects += numa_node(f"n{i}", numa, per, free=format_cpuset(set(range(numa * per)) - taken))
    for g in range(data.draw(st.integers(1, 4))):
        replicas = data.draw(st.integers(2, 8))
        cpus = data.draw(st.integers(1, 4))
        objects.append(podgroup(f"g{g}", queue="default", phase="Inqueue", min_member=1))
        objects += [guaranteed(f"g{g}-{k}", cpus, group=f"g{g}") for k in range(replicas)]
    conf = load_conf(conf_text(NUMA, "predicates", "binpack", actions="allocate"))
    fast = run_session(build_cluster_state(copy.deepcopy(objects)), conf)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(placement._Ladder, "pick", lambda self: None)
        slow = run_session(build_cluster_state(copy.deepcopy(objects)), conf)
    assert fast.binds == slow.binds
    assert ({k: a.get(CPUSET_ANNOTATION) for k, a in fast.pod_annotations.items()}
            == {k: a.get(CPUSET_ANNOTATION) for k, a in slow.pod_annotations.items()})
