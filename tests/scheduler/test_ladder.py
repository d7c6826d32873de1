"""Replicas of one shape share a ladder (their candidate nodes' scores after 0, 1, 2, ... more replicas), and
the replicas a ladder answers are placed a run at a time (``framework/replica_run.py``): over random clusters
— many nodes tying at the best score, nodes already part full, gangs longer and shorter than the candidates,
queues whose shares stop a gang part way, per-role minimums — the decisions are exactly those of scoring
every replica on every node, one by one."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import build_cluster_state, default_conf, load_conf, run_session
from pumice.scheduler.conf import DEFAULT_CONF
from tests.builders import node, pod, podgroup, queue

QUEUES = (("default", 1), ("gold", 3), ("small", 1))


@st.composite
def cluster(draw: st.DrawFn) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [queue(name, weight=weight) for name, weight in QUEUES]
    nodes = draw(st.one_of(st.integers(2, 8), st.integers(9, 40)))  # small ones: queues' shares bite
    for i in range(nodes):
        cpu = draw(st.sampled_from(["4", "8", "8", "8", "16"]))  # mostly alike: ties at the best score
        objs.append(node(f"n{i:02d}", cpu=cpu, memory=draw(st.sampled_from(["8Gi", "16Gi", "16Gi"])),
                         pods=draw(st.sampled_from(["110", "110", "3"]))))
        for k in range(draw(st.integers(0, 2))):  # running pods: some nodes part full
            objs.append(pod(f"run-{i}-{k}", cpu=draw(st.sampled_from(["500m", "1", "2"])), memory="1Gi",
                            node=f"n{i:02d}", phase="Running", scheduler=None))
    for g in range(draw(st.integers(1, 6))):
        replicas = draw(st.integers(1, 24))
        group = podgroup(f"g{g}", queue=draw(st.sampled_from([q for q, _ in QUEUES])), phase="Inqueue",
                         min_member=draw(st.one_of(st.just(replicas), st.integers(1, replicas))))
        roles = draw(st.booleans())  # two roles, and per-role minimums the gang must meet
        if roles:
            group["spec"]["minTaskMember"] = {"ps": 1, "worker": max(group["spec"]["minMember"] - 1, 0)}
        objs.append(group)
        cpu, memory = draw(st.sampled_from([("500m", "512Mi"), ("1", "1Gi"), ("2", "2Gi"), ("1", None)]))
        objs += [pod(f"g{g}-{k}", group=f"g{g}", cpu=cpu, memory=memory,
                     annotations={"volcano.sh/task-spec": "ps" if roles and k == 0 else "worker"})
                 for k in range(replicas)]
    return objs


#: pumice's default, Volcano's shipped configuration, and that with capacity instead of proportion (whose
#: AllocatableFn offers no run: one by one).
CONFS = (default_conf(), load_conf(DEFAULT_CONF),
         load_conf(DEFAULT_CONF.replace("  - name: proportion\n", "  - name: capacity\n")))


def outcome(objs: list[dict[str, Any]], conf: Any) -> tuple[Any, ...]:
    out = run_session(build_cluster_state(copy.deepcopy(objs)), conf)
    return (out.binds, out.pipelined, {j.key: (j.phase, j.ready, j.reason) for j in out.jobs},
            out.queue_allocated, out.podgroups, out.pending_pods)


@settings(max_examples=150, deadline=None)
@given(cluster(), st.sampled_from(CONFS))
def test_laddered_replicas_decide_as_one_by_one(objs: list[dict[str, Any]], conf: Any) -> None:
    from pumice.scheduler.framework import placement, replica_run

    fast = outcome(objs, conf)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(placement._Ladder, "pick", lambda self: None)
        m.setattr(replica_run, "run_hooks", lambda ssn: None)
        slow = outcome(objs, conf)
    assert fast == slow


@settings(max_examples=150, deadline=None)
@given(cluster())
def test_runs_of_replicas_decide_as_one_by_one(objs: list[dict[str, Any]]) -> None:
    """Ladders on both sides: only the runs differ (the queue's admission and the gang's readiness asked of
    the plugins ahead, the job's counts and the event handlers taken at once)."""
    from pumice.scheduler.framework import replica_run

    conf = default_conf()
    fast = outcome(objs, conf)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(replica_run, "run_hooks", lambda ssn: None)
        slow = outcome(objs, conf)
    assert fast == slow


def test_a_queue_share_that_stops_a_run_part_way() -> None:
    """Two queues (1:3) short of room: the weight-1 queue deserves 6 of the 24 CPUs, so its 12-pod gang gets
    one pod from the walk and 5 more in a run, which stops there; the rest is refused one by one, as the walk
    would, and the gang waits."""
    from pumice.scheduler.framework import replica_run

    objs: list[dict[str, Any]] = [queue("default", weight=1), queue("gold", weight=3)]
    objs += [node(f"n{i}", cpu="8", memory="32Gi") for i in range(3)]
    for g, (q, n) in enumerate([("default", 12), ("gold", 15), ("gold", 15)]):
        objs.append(podgroup(f"g{g}", queue=q, phase="Inqueue", min_member=n))
        objs += [pod(f"g{g}-{k}", group=f"g{g}", cpu="1", memory="1Gi") for k in range(n)]
    admitted: list[int | None] = []
    original = replica_run.place_run

    def counted(*args: Any) -> int:
        placed = original(*args)
        admitted.append(placed)
        return placed

    with pytest.MonkeyPatch.context() as m:
        m.setattr("pumice.scheduler.actions.allocate_tasks.place_run", counted)
        fast = outcome(objs, default_conf())
    with pytest.MonkeyPatch.context() as m:
        m.setattr(replica_run, "run_hooks", lambda ssn: None)
        slow = outcome(objs, default_conf())
    assert fast == slow
    assert admitted[0] == 5
    binds, _, jobs, *_ = fast
    assert jobs["default/g0"][1] == 0 and not any(pod.startswith("default/g0-") for pod in binds)
