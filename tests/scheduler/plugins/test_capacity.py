"""capacity: a queue's capability caps what its jobs hold and admit; hierarchy: only leaves run jobs."""

from __future__ import annotations

import logging

import pytest

from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import job, session, task
from tests.scheduler.plugins.support import queue as queue_of

OBJECTS = [
    node("n1", cpu="8", memory="8Gi"), queue("capped", capability={"cpu": "2"}),
    podgroup("a", queue="capped", phase="Running"),
    pod("a-0", group="a", cpu="2", node="n1", phase="Running"), pod("a-1", group="a", cpu="1"),
    podgroup("big", queue="capped", min_resources={"cpu": "3"}),
]


def test_a_task_beyond_the_capability_is_not_allocatable() -> None:
    ssn = session(OBJECTS, "capacity")
    assert not ssn.allocatable(queue_of(ssn, "capped"), task(ssn, "a-1"))
    # memory is capped by what the cluster has: the capability names cpu only
    assert list(job(ssn, "a").fit_errors.values()) == [
        "queue capped capacity: allocated cpu 2 + cpu 1 exceeds cpu 2, memory 8Gi"]


def test_a_job_whose_minimum_exceeds_the_capability_is_not_admitted() -> None:
    ssn = session(OBJECTS, "capacity")
    big = job(ssn, "big")
    assert not ssn.job_enqueueable(big)
    assert big.pending_reason.startswith("queue capped resource quota insufficient")


def test_with_hierarchy_jobs_run_only_in_leaf_queues() -> None:
    objects = [node("n1"), queue("root"), queue("eng", parent="root"), queue("dev", parent="eng"),
               podgroup("misplaced", queue="eng"), pod("m-0", group="misplaced", cpu="1")]
    ssn = session(objects, {"name": "capacity", "enableHierarchy": True})
    assert not ssn.job_enqueueable(job(ssn, "misplaced"))
    assert "queue eng is not a leaf queue (child queues: dev)" in job(ssn, "misplaced").pending_reason


def test_a_negative_ancestor_reclaim_level_is_replaced_and_said(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        ssn = session(OBJECTS, {"name": "capacity", "arguments": {"ancestorReclaimLevel": -2}})
    assert "plugin capacity: argument ancestorReclaimLevel: -2 is negative; using 0" in caplog.text
    assert ssn.plugins["capacity"].ancestor_reclaim_level == 0  # type: ignore[attr-defined]
