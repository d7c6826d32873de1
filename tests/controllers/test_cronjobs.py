"""Volcano's CronJob controller driven by the virtual clock."""

from __future__ import annotations

from typing import Any

from pumice.controllers.cronjob import SCHEDULED_TIMESTAMP
from pumice.runtime import Cluster
from tests.builders import node

from .workloads import run

CRON = "cronjobs.batch.volcano.sh"
VCJOBS = "jobs.batch.volcano.sh"
START = 1_767_225_600  # the virtual clock's start: 2026-01-01T00:00:00Z


def cronjob(schedule: str = "*/5 * * * *", *, seconds: int = 60, **spec: Any) -> dict[str, Any]:
    task = {"name": "task-1", "replicas": 1, "template": {
        "metadata": {"annotations": {"pumice.io/duration": str(seconds)}},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                 "restartPolicy": "OnFailure"}}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": "tick"},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"team": "a"}},
                                                           "spec": {"minAvailable": 1, "schedulerName": "volcano",
                                                                    "tasks": [task]}}, **spec}}


def job_minutes(c: Cluster) -> list[int]:
    return sorted(int(j["metadata"]["name"].rsplit("-", 1)[1]) - START // 60 for j in c.store.list(VCJOBS)[0])


def test_jobs_are_created_at_each_schedule_time_and_history_is_trimmed() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), cronjob(successfulJobsHistoryLimit=2)])
    run(c, 31 * 60)
    assert job_minutes(c) == [20, 25, 30]  # two finished ones kept, and the one still running
    run(c, 60)
    assert job_minutes(c) == [25, 30]  # 5, 10, ..., 30 were made; only the last two successful ones stay
    job = c.store.get(VCJOBS, "default", f"tick-{START // 60 + 30}")
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP] == "2026-01-01T00:30:00Z"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    status = c.store.get(CRON, "default", "tick")["status"]
    assert status["lastScheduleTime"] == "2026-01-01T00:30:00Z" and status["lastSuccessfulTime"]
    assert "active" not in status
    spec = c.store.get(CRON, "default", "tick")["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["failedJobsHistoryLimit"]) == ("Allow", False, 1)


def test_forbid_skips_a_time_while_a_job_is_active() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), cronjob(seconds=12 * 60, concurrencyPolicy="Forbid")])
    run(c, 21 * 60)
    # 10 and 15 come while the first runs (until about 17); without a starting deadline the latest missed time,
    # 15, is served as soon as it ends, and 20 is skipped while that one runs
    assert job_minutes(c) == [5, 15]
    late = c.store.get(VCJOBS, "default", f"tick-{START // 60 + 15}")
    assert late["metadata"]["creationTimestamp"] > "2026-01-01T00:17:00Z"


def test_replace_deletes_the_active_job_for_the_next_one() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), cronjob(seconds=12 * 60, concurrencyPolicy="Replace")])
    run(c, 11 * 60)
    assert job_minutes(c) == [10]
    (active,) = c.store.get(CRON, "default", "tick")["status"]["active"]
    assert active["name"] == f"tick-{START // 60 + 10}"


def test_allow_runs_them_side_by_side() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), cronjob(seconds=12 * 60)])
    run(c, 11 * 60)
    assert job_minutes(c) == [5, 10]
    assert len(c.store.get(CRON, "default", "tick")["status"]["active"]) == 2


def test_suspend_and_the_starting_deadline() -> None:
    late = Cluster()
    late.apply([node("n1", cpu="32", memory="64Gi"), cronjob(suspend=True)])
    run(late, 22 * 60)
    assert job_minutes(late) == []
    late.store.patch(CRON, "default", "tick", {"spec": {"suspend": False}})
    run(late, 1)
    assert job_minutes(late) == [20]  # the most recent missed time is served at once

    strict = Cluster()
    strict.apply([node("n1", cpu="32", memory="64Gi"), cronjob(suspend=True, startingDeadlineSeconds=60)])
    run(strict, 22 * 60)
    strict.store.patch(CRON, "default", "tick", {"spec": {"suspend": False}})
    run(strict, 1)
    assert job_minutes(strict) == []  # 20 is more than 60 s ago
    run(strict, 4 * 60)
    assert job_minutes(strict) == [25]


def test_deleting_a_cronjob_deletes_its_jobs() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), cronjob(seconds=600)])
    run(c, 6 * 60)
    assert job_minutes(c) == [5]
    c.delete([cronjob()])
    run(c, 10)
    assert not c.store.list(VCJOBS)[0]
