"""batch/v1 Jobs in the embedded cluster: completions, parallelism, backoffLimit, indexed jobs, TTL."""

from __future__ import annotations

from pumice.api.batch_v1 import CONTROLLER_UID_LABELS
from pumice.controllers.batchjob import INDEX_KEY
from pumice.runtime import Cluster
from tests.builders import node

from .workloads import PodTimeline, batch_job, phase, pods_of, run

JOBS = "jobs.batch"


def conditions(c: Cluster, name: str = "pi") -> dict[str, str]:
    status = c.store.get(JOBS, "default", name).get("status") or {}
    return {cond["type"]: cond.get("reason", "") for cond in status.get("conditions") or []
            if cond["status"] == "True"}


def test_completions_run_parallelism_pods_at_a_time() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi")])
    timeline = PodTimeline(c)
    c.apply([batch_job(completions=5, parallelism=2, duration="60")])
    run(c, 400)
    most = 0
    for pods in timeline.states():
        most = max(most, sum(1 for p in pods.values() if phase(p) in ("Pending", "Running")))
    assert most == 2
    pods = pods_of(c.store, "pi-")
    assert len(pods) == 5 and all(phase(p) == "Succeeded" for p in pods)
    status = c.store.get(JOBS, "default", "pi")["status"]
    assert (status["succeeded"], status["active"], status["failed"]) == (5, 0, 0)
    assert conditions(c) == {"Complete": ""} and status["completionTime"]
    uid = c.store.get(JOBS, "default", "pi")["metadata"]["uid"]
    assert all(p["metadata"]["labels"][CONTROLLER_UID_LABELS[0]] == uid for p in pods)
    # Volcano groups them as it groups any controller's pods: podgroup-<job uid>
    assert [pg["metadata"]["name"] for pg in c.store.list("podgroups.scheduling.volcano.sh")[0]] == [
        f"podgroup-{uid}"]


def test_more_failures_than_the_backoff_limit_fail_the_job() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"),
             batch_job(completions=1, parallelism=1, backoff=2, duration="5", fail=True)])
    run(c, 600)
    assert conditions(c) == {"Failed": "BackoffLimitExceeded"}
    status = c.store.get(JOBS, "default", "pi")["status"]
    assert status["failed"] == 3 and status["succeeded"] == 0
    starts = sorted(p["status"]["startTime"] for p in pods_of(c.store, "pi-"))
    assert len(starts) == 3 and starts[0] < starts[1] < starts[2]  # each retry after its back-off


def test_the_deadline_fails_a_running_job() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), batch_job(completions=1, duration="600", activeDeadlineSeconds=100)])
    run(c, 200)
    assert conditions(c) == {"Failed": "DeadlineExceeded"}
    assert not [p for p in pods_of(c.store, "pi-") if phase(p) == "Running"]


def test_an_indexed_job_completes_each_index_once() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), batch_job(completions=3, parallelism=3, indexed=True, duration="10")])
    run(c, 60)
    pods = pods_of(c.store, "pi-")
    assert sorted(p["metadata"]["annotations"][INDEX_KEY] for p in pods) == ["0", "1", "2"]
    assert all(p["metadata"]["name"].startswith(f"pi-{p['metadata']['annotations'][INDEX_KEY]}-") for p in pods)
    assert c.store.get(JOBS, "default", "pi")["status"]["completedIndexes"] == "0-2"
    assert conditions(c) == {"Complete": ""}


def test_a_work_queue_job_ends_with_its_first_success() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), batch_job(completions=None, parallelism=2, duration="30")])
    run(c, 100)
    assert conditions(c) == {"Complete": ""}
    assert "completions" not in c.store.get(JOBS, "default", "pi")["spec"]  # not defaulted when parallelism is
    assert len(pods_of(c.store, "pi-")) == 2  # no pod started after the first success


def test_suspended_jobs_start_nothing_and_ttl_deletes_finished_ones() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"),
             batch_job(completions=1, duration="10", suspend=True, ttlSecondsAfterFinished=30)])
    run(c, 30)
    assert not pods_of(c.store, "pi-") and "Suspended" in conditions(c)
    c.store.patch(JOBS, "default", "pi", {"spec": {"suspend": False}})
    run(c, 20)
    assert conditions(c) == {"Complete": ""}
    run(c, 60)
    assert not c.store.list(JOBS)[0] and not pods_of(c.store, "pi-")
