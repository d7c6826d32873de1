"""tdm: revocable nodes serve revocable-zone pods inside their time window, and their preemptable
pods are evicted (at most once per period) once it closes; the session's clock drives it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import build_cluster_state, load_conf, open_session, run_session
from pumice.scheduler.framework.points import PREDICATE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import TaskInfo
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text, session, task

ZONE = "volcano.sh/revocable-zone"
TDM = {"name": "tdm", "arguments": {"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.evict.period": "10m"}}


def at(hour: int, minute: int = 0) -> float:
    """A local time on a fixed day (tdm windows are local times, as in Volcano)."""
    return datetime(2026, 3, 2, hour, minute).timestamp()


def cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [node("rev", cpu="4", memory="8Gi", labels={ZONE: "rz1"}), node("own", cpu="4", memory="8Gi"),
            queue("default"), *extra]


def revocable_pod(name: str, group: str, **kw: Any) -> dict[str, Any]:
    return pod(name, group=group, cpu="1", annotations={ZONE: "*"}, **kw)


def passes(ssn: Session, t: TaskInfo) -> list[bool]:
    ok = np.ones(len(ssn.nodes), dtype=bool)
    for _, f in ssn.registered(PREDICATE):
        for _, mask in f.static_checks(t):
            ok &= mask
        for _, mask in f.dynamic_checks(t, NodeView.of(ssn.nodes)):
            ok &= mask
    return ok.tolist()


def test_revocable_nodes_take_revocable_pods_inside_their_window_only() -> None:
    objects = cluster(podgroup("r", queue="default"), revocable_pod("r-0", "r"),
                      podgroup("n", queue="default"), pod("n-0", group="n", cpu="1"))
    open_ = session(objects, TDM, now=at(12))
    assert passes(open_, task(open_, "r-0")) == [True, True]
    assert passes(open_, task(open_, "n-0")) == [False, True]
    assert open_.placer.node_scores(task(open_, "r-0")).tolist() == [100.0, 0.0]
    closed = session(objects, TDM, now=at(22))
    assert passes(closed, task(closed, "r-0")) == [False, True]
    assert closed.placer.node_scores(task(closed, "r-0")).tolist() == [0.0, 0.0]


def test_a_window_ending_before_it_starts_runs_to_the_next_day_from_todays_start() -> None:
    overnight = {"name": "tdm", "arguments": {"tdm.revocable-zone.rz1": "20:00-06:00"}}
    objects = cluster(podgroup("r", queue="default"), revocable_pod("r-0", "r"))
    late = session(objects, overnight, now=at(23))
    assert passes(late, task(late, "r-0")) == [True, True]
    # Volcano measures the window from today's start: at 03:00 it has not begun yet
    early = session(objects, overnight, now=at(3))
    assert passes(early, task(early, "r-0")) == [False, True]


def test_a_zone_without_a_window_is_closed() -> None:
    objects = cluster(podgroup("r", queue="default"), revocable_pod("r-0", "r"))
    ssn = session(objects, "tdm", now=at(12))
    assert passes(ssn, task(ssn, "r-0")) == [False, True]


def running_on_rev(n: int, **pg: Any) -> list[dict[str, Any]]:
    group = podgroup("r", queue="default", phase="Running", min_member=1)
    group["metadata"]["annotations"] = pg or None
    return [group, *(revocable_pod(f"r-{i}", "r", node="rev", phase="Running") for i in range(n))]


def victims(objects: list[dict[str, Any]], now: float, state: Any = None) -> list[str]:
    state = state or build_cluster_state(objects)
    ssn = open_session(state, load_conf(conf_text(TDM)), now)
    running = [t for j in ssn.jobs.values() for t in j.tasks.values()]
    return sorted(t.key for t in ssn.victim_tasks(running))


def test_window_end_evicts_preemptable_pods_within_the_budget_once_per_period() -> None:
    objects = cluster(*running_on_rev(3))
    assert victims(objects, at(12)) == []  # window open
    state = build_cluster_state(objects)
    assert len(victims(objects, at(21, 1), state)) == 1  # no budget: one pod per job
    assert victims(objects, at(21, 5), state) == []  # within tdm.evict.period
    assert len(victims(objects, at(21, 12), state)) == 1
    budget = cluster(*running_on_rev(4, **{"volcano.sh/jdb-max-unavailable": "50%"}))
    assert len(victims(budget, at(22))) == 2
    keep = cluster(*running_on_rev(4, **{"volcano.sh/jdb-min-available": "3"}))
    assert len(victims(keep, at(22))) == 1


def test_non_preemptable_pods_are_not_evicted_at_window_end() -> None:
    group = podgroup("r", queue="default", phase="Running")
    kept = pod("r-0", group="r", cpu="1", node="rev", phase="Running",
               annotations={ZONE: "*", "volcano.sh/preemptable": "false"})
    assert victims(cluster(group, kept), at(22)) == []


def test_only_non_preemptable_pods_preempt_and_only_preemptable_pods_off_revocable_nodes() -> None:
    objects = cluster(podgroup("low", queue="default", phase="Running"),
                      pod("low-0", group="low", cpu="1", node="own", phase="Running"),
                      pod("low-1", group="low", cpu="1", node="rev", phase="Running", annotations={ZONE: "*"}),
                      podgroup("hi", queue="default"),
                      pod("hi-0", group="hi", cpu="1", annotations={"volcano.sh/preemptable": "false"}),
                      podgroup("soft", queue="default"), pod("soft-0", group="soft", cpu="1"))
    ssn = session(objects, TDM, now=at(12))
    candidates = [task(ssn, "low-0"), task(ssn, "low-1")]
    assert [t.key for t in ssn.preemptable(task(ssn, "hi-0"), candidates)] == ["default/low-0"]
    assert ssn.preemptable(task(ssn, "soft-0"), candidates) == []


def test_non_preemptable_jobs_go_first_and_starve_while_pending() -> None:
    soft = podgroup("a-soft", queue="default")  # a PodGroup is preemptable only when it says so
    soft["metadata"]["annotations"] = {"volcano.sh/preemptable": "true"}
    hard = podgroup("b-hard", queue="default")
    ssn = session(cluster(soft, hard, pod("s-0", group="a-soft", cpu="1"), pod("h-0", group="b-hard", cpu="1")),
                  {**TDM, "enableJobStarving": True}, now=at(12))
    soft_job, hard_job = ssn.jobs["default/a-soft"], ssn.jobs["default/b-hard"]
    assert ssn.job_order_less(hard_job, soft_job) and not ssn.job_order_less(soft_job, hard_job)
    assert ssn.job_starving(hard_job) and not ssn.job_starving(soft_job)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 23), st.integers(0, 59), st.lists(st.booleans(), min_size=1, max_size=8))
def test_pods_without_a_revocable_zone_never_land_on_revocable_nodes(hour: int, minute: int, zoned: list[bool]) -> None:
    objects = cluster(*(x for i, z in enumerate(zoned) for x in (
        podgroup(f"j{i}", queue="default"),
        pod(f"p{i}", group=f"j{i}", cpu="1", annotations={ZONE: "*"} if z else None))))
    outcome = run_session(objects, load_conf(conf_text("gang", TDM, "predicates")), now=at(hour, minute))
    open_ = 10 <= hour < 21 or (hour, minute) == (21, 0)
    for key, n in outcome.binds.items():
        if n == "rev":
            assert zoned[int(key.split("/p")[1])] and open_, (key, hour, minute)


def test_the_same_cluster_state_follows_the_clock_from_session_to_session() -> None:
    state = build_cluster_state(cluster(podgroup("r", queue="default"), revocable_pod("r-0", "r")))
    conf = load_conf(conf_text("gang", TDM))
    night = open_session(state, conf, at(22))
    assert night.placer.best_node(task(night, "r-0")).node == 1  # type: ignore[union-attr]
    noon = open_session(state, conf, at(12))
    assert noon.placer.best_node(task(noon, "r-0")).node == 0  # type: ignore[union-attr]


def test_arguments_of_the_wrong_type_are_said(caplog: Any) -> None:
    import logging

    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        bad = {"name": "tdm", "arguments": {"tdm.revocable-zone.rz1": 5, "tdm.evict.period": "soon"}}
        ssn = session(cluster(podgroup("r", queue="default"), revocable_pod("r-0", "r")), bad, now=at(12))
    assert passes(ssn, task(ssn, "r-0")) == [False, True]
    assert "tdm.revocable-zone.rz1: expected a string" in caplog.text
    assert "tdm.evict.period: 'soon' is not a duration" in caplog.text


def test_the_shuffle_action_evicts_at_window_end() -> None:
    """tdm's victims are evicted by Volcano's ``shuffle`` action once the window has closed, not while open."""
    objects = cluster(*running_on_rev(3))
    conf = load_conf(conf_text("gang", TDM, actions="enqueue, allocate, shuffle"))
    assert run_session(build_cluster_state(objects), conf, now=at(12)).evictions == []
    evicted = run_session(build_cluster_state(objects), conf, now=at(21, 1)).evictions
    assert len(evicted) == 1 and evicted[0].startswith("default/r-")
