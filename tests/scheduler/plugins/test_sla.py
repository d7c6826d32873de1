"""sla: jobs past their allowed waiting time are admitted and ordered first."""

from __future__ import annotations

import logging

import pytest

from pumice.scheduler.plugins.sla import parse_duration
from tests.builders import node, podgroup, queue
from tests.scheduler.plugins.support import job, session

CREATED = "2026-01-01T00:00:00Z"
START = 1767225600.0  # CREATED in epoch seconds


def group(name: str, wait: str | None = None) -> dict[str, object]:
    pg = podgroup(name, queue="default")
    pg["metadata"]["creationTimestamp"] = CREATED
    if wait is not None:
        pg["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": wait}
    return pg


@pytest.mark.parametrize(("text", "seconds"), [
    ("1h30m", 5400.0), ("90s", 90.0), ("1.5h", 5400.0), ("500ms", 0.5), ("0", 0.0), ("-2m", -120.0), ("+1m", 60.0),
    ("5", None), ("1d", None), ("", None), ("h", None), (".h", None),
])
def test_go_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def test_an_overdue_job_is_admitted_and_goes_first() -> None:
    objs = [node("n1"), queue("default"), group("slow", "10m"), group("fast", "1m"), group("plain")]
    ssn = session(objs, "sla", now=START + 120)
    assert ssn.job_enqueueable(job(ssn, "fast"))  # 2 minutes > 1 minute: permit
    assert ssn.job_order_less(job(ssn, "fast"), job(ssn, "slow"))  # earlier deadline first
    assert ssn.job_order_less(job(ssn, "slow"), job(ssn, "plain"))  # any deadline before none


def test_the_global_waiting_time_applies_to_jobs_without_one() -> None:
    objs = [node("n1"), queue("default"), group("plain")]
    ssn = session(objs, {"name": "sla", "arguments": {"sla-waiting-time": "1m"}}, now=START + 120)
    assert ssn.plugins["sla"].permit_when_overdue(job(ssn, "plain")) == 1  # type: ignore[attr-defined]


def test_a_waiting_time_that_is_no_positive_duration_is_ignored_and_said(caplog: pytest.LogCaptureFixture) -> None:
    objs = [node("n1"), queue("default"), group("zero", "0s")]
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        ssn = session(objs, {"name": "sla", "arguments": {"sla-waiting-time": "soon"}}, now=START + 120)
    assert ssn.plugins["sla"].permit_when_overdue(job(ssn, "zero")) == 0  # type: ignore[attr-defined]
    assert "plugin sla: argument sla-waiting-time: 'soon' is not a duration above zero" in caplog.text
