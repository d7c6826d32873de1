"""rescheduling + shuffle: pods leave nodes over the target utilization for nodes under the threshold."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import build_cluster_state, load_conf, run_session
from pumice.scheduler.plugins.rescheduling import Thresholds, low_node_utilization
from tests.builders import node, pdb, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text

LNU = {"name": "rescheduling", "arguments": {"interval": "5m", "strategies": [
    {"name": "lowNodeUtilization",
     "params": {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 60, "memory": 60}}}]}}


def cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    """n1 full (four 1-CPU pods: 100% cpu), n2 idle (low), n3 half full (neither low nor high)."""
    objects = [node(f"n{i}", cpu="4", memory="4Gi") for i in (1, 2, 3)]
    objects += [queue("default"), podgroup("a", queue="default", phase="Running")]
    priorities: list[int | None] = [100, 5, None, 50]
    for i, prio in enumerate(priorities):
        objects.append(pod(f"a-{i}", group="a", cpu="1", memory="256Mi", node="n1", phase="Running",
                           priority=prio, labels={"app": "a"}))
    objects += [pod(f"a-{i}", group="a", cpu="1", memory="256Mi", node="n3", phase="Running", priority=0)
                for i in (4, 5)]
    return [*objects, *extra]


def shuffle(objects: list[dict[str, Any]] | Any, *plugins: str | dict[str, Any], now: float = 1000.0) -> list[str]:
    return run_session(objects, load_conf(conf_text(*plugins, actions="shuffle")), now=now).evictions


def test_pods_leave_the_high_node_until_it_is_under_target() -> None:
    # n1 at 100% over a 60% target; n2's room up to 60% is 2.4 CPU: two pods go, no priority first,
    # then the lowest priority
    assert shuffle(cluster(), LNU) == ["default/a-2", "default/a-1"]


def test_no_low_node_or_no_high_node_means_no_victims() -> None:
    objects = cluster(pod("b-0", group="a", cpu="1", memory="256Mi", node="n2", phase="Running"))
    assert shuffle(objects, LNU) == []  # n2 at 25% cpu: not under the 20% threshold
    calm = {"name": "rescheduling", "arguments": {"strategies": [
        {"name": "lowNodeUtilization", "params": {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 100}}}]}}
    assert shuffle(cluster(), calm) == []  # nobody over 100%
    assert shuffle(cluster(), "rescheduling") == []  # Volcano's defaults: 100/100, nothing moves


def test_it_runs_once_per_interval() -> None:
    state = build_cluster_state(cluster())
    conf = load_conf(conf_text(LNU, actions="shuffle"))
    assert run_session(state, conf, now=1000.0, revert=True).evictions
    later = build_cluster_state(cluster())
    later.evicted_at = state.evicted_at  # a live cache keeps them across sessions
    assert run_session(later, conf, now=1000.0 + 299).evictions == []
    again = build_cluster_state(cluster())
    again.evicted_at = state.evicted_at
    assert run_session(again, conf, now=1000.0 + 301).evictions


def test_budgets_filter_shuffle_victims() -> None:
    # at most one of app=a may go: the first victim in order is kept, the second refused
    budget = pdb("keep", match={"app": "a"}, max_unavailable=1)
    assert shuffle(cluster(budget), LNU, "pdb") == ["default/a-2"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(1, 4), max_size=6), min_size=2, max_size=6), st.integers(5, 50),
       st.integers(50, 95))
def test_victims_come_only_from_high_nodes_and_never_overfill_the_low_ones(
        loads: list[list[int]], low: int, target: int) -> None:
    """Each victim sits on a node over the target, and the low nodes' room to their target is never
    spent by more than the last victim taken."""
    from pumice.scheduler.model import TaskInfo
    capacity = np.array([[16.0] * len(loads), [16.0] * len(loads)])
    candidates: list[list[TaskInfo]] = []
    requests: dict[str, np.ndarray] = {}
    used = np.zeros((2, len(loads)))
    for j, pods in enumerate(loads):
        ts = []
        for k, cpu in enumerate(pods):
            uid = f"{j}-{k}"
            t = TaskInfo(uid, "default", uid, None, 32, np.array([cpu, cpu]), np.array([cpu, cpu]), (0.0, 0.0), 0,
                         True, "", None, 0.0, {}, ("",), node=j)
            ts.append(t)
            requests[uid] = np.array([float(cpu), float(cpu)])
            used[:, j] += cpu
        candidates.append(ts)
    util = used * 100.0 / capacity
    thresholds = Thresholds(np.array([float(low)] * 2), np.array([float(target)] * 2))
    victims = low_node_utilization(util, capacity, np.ones(len(loads), dtype=bool), candidates, requests, thresholds)
    lows = (util < low).all(axis=0)
    room = ((target - util[:, lows]) * capacity[:, lows] / 100.0).sum(axis=1)
    for v in victims:
        assert (util[:, v.node] > target).any() and not lows[v.node]
    if victims:
        spent = np.sum([requests[v.uid] for v in victims[:-1]], axis=0) if len(victims) > 1 else np.zeros(2)
        assert (spent < room + 1e-9).all()
