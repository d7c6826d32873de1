"""Replicas of one shape share a ladder (their candidate nodes' scores after 0, 1, 2, ... more replicas):
over random clusters with the default configuration — many nodes tying at the best score, nodes already
part full, gangs longer and shorter than the candidates — the binds are exactly those of scoring every
replica on every node."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import build_cluster_state, default_conf, run_session
from tests.builders import node, pod, podgroup, queue


@st.composite
def cluster(draw: st.DrawFn) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [queue("default")]
    nodes = draw(st.integers(2, 40))
    for i in range(nodes):
        cpu = draw(st.sampled_from(["4", "8", "8", "8", "16"]))  # mostly alike: ties at the best score
        objs.append(node(f"n{i:02d}", cpu=cpu, memory=draw(st.sampled_from(["8Gi", "16Gi", "16Gi"])),
                         pods=draw(st.sampled_from(["110", "110", "3"]))))
        for k in range(draw(st.integers(0, 2))):  # running pods: some nodes part full
            objs.append(pod(f"run-{i}-{k}", cpu=draw(st.sampled_from(["500m", "1", "2"])), memory="1Gi",
                            node=f"n{i:02d}", phase="Running", scheduler=None))
    for g in range(draw(st.integers(1, 6))):
        replicas = draw(st.integers(1, 24))
        objs.append(podgroup(f"g{g}", queue="default", phase="Inqueue",
                             min_member=draw(st.integers(1, replicas))))
        cpu, memory = draw(st.sampled_from([("500m", "512Mi"), ("1", "1Gi"), ("2", "2Gi"), ("1", None)]))
        objs += [pod(f"g{g}-{k}", group=f"g{g}", cpu=cpu, memory=memory) for k in range(replicas)]
    return objs


@settings(max_examples=150, deadline=None)
@given(cluster())
def test_laddered_replicas_decide_as_one_by_one(objs: list[dict[str, Any]]) -> None:
    from pumice.scheduler.framework import placement

    conf = default_conf()
    fast = run_session(build_cluster_state(copy.deepcopy(objs)), conf)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(placement._Ladder, "pick", lambda self: None)
        slow = run_session(build_cluster_state(copy.deepcopy(objs)), conf)
    assert fast.binds == slow.binds
    assert {j.key: j.reason for j in fast.jobs} == {j.key: j.reason for j in slow.jobs}
