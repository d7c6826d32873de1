"""drf with enableHierarchy (HDRF): queues in a weighted tree share the cluster by dominant share / weight."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import load_conf, run_session
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text, session, task

HDRF = {"name": "drf", "enableHierarchy": True}


def hqueue(name: str, path: str, weights: str) -> dict[str, Any]:
    q = queue(name, weight=1)
    q["metadata"]["annotations"] = {"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
    return q


def single_pod_jobs(q: str, n: int, *, running_on: str | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.append(podgroup(f"{q}-{i}", queue=q, phase="Running" if running_on else None))
        out.append(pod(f"{q}-{i}-0", group=f"{q}-{i}", cpu="1", memory="1Gi", node=running_on,
                       phase="Running" if running_on else None))
    return out


def contention(cpus: int, wa: int, wb: int, jobs: int) -> list[dict[str, Any]]:
    return [node("n", cpu=str(cpus), memory="64Gi"), hqueue("qa", "root/a", f"1/{wa}"),
            hqueue("qb", "root/b", f"1/{wb}"), *single_pod_jobs("qa", jobs), *single_pod_jobs("qb", jobs)]


def bound_per_queue(objects: list[dict[str, Any]], *plugins: Any) -> dict[str, int]:
    outcome = run_session(objects, load_conf(conf_text("priority", "gang", *plugins, "predicates")))
    counts = {"qa": 0, "qb": 0}
    for key in outcome.binds:
        counts[key.split("/")[1][:2]] += 1
    return counts


def test_weights_divide_the_cluster_and_plain_drf_does_not() -> None:
    objects = contention(4, 1, 3, 4)
    assert bound_per_queue(objects, HDRF) == {"qa": 1, "qb": 3}
    assert bound_per_queue(objects, "drf") == {"qa": 4, "qb": 0}  # queue order falls back to creation/name


def test_the_queue_below_its_weighted_share_goes_first() -> None:
    objects = [node("n", cpu="8", memory="64Gi"), hqueue("qa", "root/a", "1/1"), hqueue("qb", "root/b", "1/1"),
               *single_pod_jobs("qa", 3, running_on="n"), podgroup("qa-p", queue="qa"),
               pod("qa-p-0", group="qa-p", cpu="1"), podgroup("qb-p", queue="qb"), pod("qb-p-0", group="qb-p", cpu="1")]
    ssn = session(objects, HDRF)
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    assert ssn.queue_order_less(qb, qa) and not ssn.queue_order_less(qa, qb)


def gang_running(q: str, name: str, pods: int) -> list[dict[str, Any]]:
    return [podgroup(name, queue=q, phase="Running"),
            *(pod(f"{name}-{i}", group=name, cpu="1", memory="1Gi", node="n", phase="Running") for i in range(pods))]


def test_reclaim_takes_from_the_queue_above_its_share_only() -> None:
    # the cluster's CPUs are all taken, so every job asking for CPU counts as saturated (Volcano's
    # HDRF); qa holds 4 of 4 and qb asks for 1: with it given, qa at 3/4 comes after qb at 1/4
    base = [node("n", cpu="4", memory="64Gi"), hqueue("qa", "root/a", "1/1"), hqueue("qb", "root/b", "1/1")]
    objects = [*base, *gang_running("qa", "a1", 2), *gang_running("qa", "a2", 2),
               podgroup("qb-p", queue="qb"), pod("qb-p-0", group="qb-p", cpu="1", memory="1Gi")]
    ssn = session(objects, {**HDRF, "enableReclaimable": True}, actions="reclaim")
    candidates = [task(ssn, f"a{j}-{i}") for j in (1, 2) for i in (0, 1)]
    assert len(ssn.reclaimable(task(ssn, "qb-p-0"), candidates)) == 4
    # qa and qb hold 2 each: a pod moving from qb to qa would put qa above qb, so no victim
    even = [*base, *gang_running("qa", "a1", 2), *gang_running("qb", "b1", 2),
            podgroup("qa-p", queue="qa"), pod("qa-p-0", group="qa-p", cpu="1", memory="1Gi")]
    ssn = session(even, {**HDRF, "enableReclaimable": True}, actions="reclaim")
    assert ssn.reclaimable(task(ssn, "qa-p-0"), [task(ssn, "b1-0"), task(ssn, "b1-1")]) == []


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 12))
def test_weighted_shares_stay_within_one_pod_of_each_other(wa: int, wb: int, cpus: int) -> None:
    got = bound_per_queue(contention(cpus, wa, wb, cpus), HDRF)
    assert got["qa"] + got["qb"] == cpus
    assert abs(got["qa"] / wa - got["qb"] / wb) <= max(1 / wa, 1 / wb) + 1e-9, got
