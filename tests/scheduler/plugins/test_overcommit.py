"""overcommit: admit jobs while factor x the cluster's idle resources holds their minimum."""

from __future__ import annotations

import logging

import pytest

from tests.builders import node, podgroup, queue
from tests.scheduler.plugins.support import job, session


def objects(*minimums: str) -> list[dict[str, object]]:
    return [node("n1", cpu="10", memory="10Gi"), queue("default"),
            *(podgroup(f"j{i}", queue="default", min_resources={"cpu": m}) for i, m in enumerate(minimums))]


def test_admits_up_to_the_factor_of_the_idle_resources() -> None:
    ssn = session(objects("12", "13"), "overcommit")  # 1.2 x 10 CPUs
    assert ssn.job_enqueueable(job(ssn, "j0"))
    assert not ssn.job_enqueueable(job(ssn, "j1"))
    assert job(ssn, "j1").pending_reason.startswith("resource in cluster is overused: the job needs cpu 13")


def test_admitted_jobs_count_against_the_rest() -> None:
    ssn = session(objects("7", "6"), "overcommit")
    assert ssn.job_enqueueable(job(ssn, "j0"))
    ssn.job_enqueued(job(ssn, "j0"))
    assert not ssn.job_enqueueable(job(ssn, "j1"))  # 7 + 6 > 12


def test_a_factor_below_one_is_replaced_and_said(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        ssn = session(objects("12"), {"name": "overcommit", "arguments": {"overcommit-factor": 0.5}})
    assert ssn.job_enqueueable(job(ssn, "j0"))  # the default 1.2
    assert "plugin overcommit: argument overcommit-factor: 0.5 is below 1; using the default 1.2" in caplog.text
