"""Job lifecycle: policies and retries, Commands (suspend/resume), TTL garbage collection, plugins."""

from __future__ import annotations

import base64

import pytest

from pumice.controllers.job_state import plan
from tests.builders import vcjob as job

from .harness import JOBS, PODGROUPS, Cluster, command


def _phases(c: Cluster, name: str, steps: int) -> list[str]:
    seen: list[str] = [c.phase(name)]
    for _ in range(steps):
        c.step()
        if c.phase(name) != seen[-1]:
            seen.append(c.phase(name))
    return seen


def test_pod_failed_restarts_the_job_until_max_retry_then_fails() -> None:
    c = Cluster(run_for=lambda p: 5.0, exit_code=lambda p: 1)
    c.apply([job("flaky", maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])])
    retries: list[int] = []

    def record() -> None:
        count = c.job("flaky")["status"].get("retryCount", 0)
        if not retries or retries[-1] != count:
            retries.append(count)

    c.run_until(lambda: c.phase("flaky") == "Failed", on_step=record)
    status = c.job("flaky")["status"]
    assert retries == [0, 1, 2]
    assert status["retryCount"] == 2
    phases = [cond["status"] for cond in status["conditions"]]
    assert phases == ["Pending", "Running", "Restarting", "Pending", "Running", "Restarting", "Failed"]
    assert c.pods("flaky") == [] and c.podgroups() == []  # killed: pods and PodGroup gone


def test_restarted_pods_carry_the_new_job_version_and_retry_count() -> None:
    c = Cluster(run_for=lambda p: 5.0, exit_code=lambda p: 1)
    c.apply([job("flaky", maxRetry=3, policies=[{"event": "PodFailed", "action": "RestartJob"}])])
    c.run_until(lambda: c.job("flaky")["status"].get("retryCount") == 1 and bool(c.pods("flaky")))
    (pod,) = c.pods("flaky")
    assert pod["metadata"]["annotations"]["volcano.sh/job-retry-count"] == "1"
    assert pod["metadata"]["annotations"]["volcano.sh/job-version"] == str(c.job("flaky")["status"]["version"])


def test_without_policy_a_failed_pod_fails_the_job() -> None:
    c = Cluster(run_for=lambda p: 5.0, exit_code=lambda p: 2)
    c.apply([job("once")])
    c.run_until(lambda: c.phase("once") == "Failed")
    assert c.job("once")["status"]["failed"] == 1
    assert c.job("once")["status"]["retryCount"] == 0


def test_exit_code_policy_and_task_completed_complete_job() -> None:
    c = Cluster(run_for=lambda p: 5.0 if p["metadata"]["name"].startswith("mixed-main") else 1000.0)
    body = job("mixed", replicas=1)
    worker = {**body["spec"]["tasks"][0], "name": "worker", "replicas": 2}
    body["spec"]["tasks"][0]["policies"] = [{"event": "TaskCompleted", "action": "CompleteJob"}]
    body["spec"]["tasks"].append(worker)
    c.apply([body])
    c.run_until(lambda: c.phase("mixed") == "Completed")
    phases = [cond["status"] for cond in c.job("mixed")["status"]["conditions"]]
    assert phases == ["Pending", "Running", "Completing", "Completed"]
    # the still-running workers were killed; the succeeded master is retained
    assert [p["metadata"]["name"] for p in c.pods("mixed")] == ["mixed-main-0"]


def test_min_success_completes_early() -> None:
    c = Cluster(run_for=lambda p: 5.0 if p["metadata"]["name"].endswith("-0") else 1000.0)
    c.apply([job("ms", replicas=3, minSuccess=1)])
    c.run_until(lambda: c.phase("ms") == "Completed")
    assert c.job("ms")["status"]["succeeded"] == 1


def test_abort_and_resume_commands_suspend_and_resume() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([job("sus", replicas=2)])
    c.run_until(lambda: c.phase("sus") == "Running")
    c.apply([command("suspend-sus", "AbortJob", "Job", "sus")])
    assert c.phase("sus") == "Aborted"
    assert c.pods("sus") == [] and c.podgroups() == []
    assert c.store.list("commands.bus.volcano.sh")[0] == []  # handled commands are deleted
    assert [x["status"] for x in c.job("sus")["status"]["conditions"]][-2:] == ["Aborting", "Aborted"]
    for _ in range(5):
        c.step()
    assert c.phase("sus") == "Aborted" and c.pods("sus") == []
    c.apply([command("resume-sus", "ResumeJob", "Job", "sus")])
    c.run_until(lambda: c.phase("sus") == "Running")
    status = c.job("sus")["status"]
    assert [x["status"] for x in status["conditions"]][-4:] == ["Aborted", "Restarting", "Pending", "Running"]
    assert status["retryCount"] == 1 and status["running"] == 2


def test_ttl_after_finished_deletes_the_job_and_what_it_made() -> None:
    c = Cluster(run_for=lambda p: 5.0)
    c.apply([job("short", ttlSecondsAfterFinished=60, plugins={"svc": [], "ssh": []})])
    c.run_until(lambda: c.phase("short") == "Completed")
    finished = c.clock.now()
    # completing killed the job: plugin objects and the PodGroup went, the succeeded pod is retained
    assert c.store.list("services", "default")[0] == [] and c.store.list("secrets", "default")[0] == []
    assert [p["status"]["phase"] for p in c.pods("short")] == ["Succeeded"]
    wake = c.manager.next_wakeup()
    assert wake is not None and finished - 2 <= wake - 60 <= finished
    c.clock.advance_to(wake - 1)
    c.manager.sync()
    assert c.store.list(JOBS, "default")[0]
    c.clock.advance_to(wake)
    assert c.manager.sync() is True
    assert c.store.list(JOBS, "default")[0] == []
    assert c.pods("short") == [] and c.store.list(PODGROUPS, "default")[0] == []
    assert c.store.list("configmaps", "default")[0] == [] and c.store.list("services", "default")[0] == []
    assert c.manager.next_wakeup() is None


def test_deleting_a_job_cascades() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([job("gone", replicas=2, plugins={"svc": []})])
    c.run_until(lambda: c.phase("gone") == "Running")
    c.store.delete(JOBS, "default", "gone")
    c.manager.sync()
    assert c.pods("gone") == [] and c.podgroups() == []
    assert c.store.list("services", "default")[0] == [] and c.store.list("configmaps", "default")[0] == []


def test_plugins_env_svc_ssh_decorate_pods() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    body = job("mpi", replicas=2, plugins={"env": [], "svc": [], "ssh": []})
    c.apply([body])
    c.run_until(lambda: len(c.pods("mpi")) == 2)
    pod = next(p for p in c.pods("mpi") if p["metadata"]["name"] == "mpi-main-1")
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["VK_TASK_INDEX"]["value"] == "1" and env["VC_TASK_INDEX"]["value"] == "1"
    # as Volcano: the host lists are references into the job's ConfigMap
    assert env["VC_MAIN_HOSTS"]["valueFrom"] == {"configMapKeyRef": {"name": "mpi-svc", "key": "VC_MAIN_HOSTS"}}
    hosts = c.store.get("configmaps", "default", "mpi-svc")["data"]
    assert hosts["VC_MAIN_HOSTS"] == "mpi-main-0.mpi,mpi-main-1.mpi" and hosts["VC_MAIN_NUM"] == "2"
    assert hosts["main.host"] == "mpi-main-0.mpi\nmpi-main-1.mpi"
    assert pod["spec"]["hostname"] == "mpi-main-1" and pod["spec"]["subdomain"] == "mpi"
    mounts = {m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert mounts == {"/etc/volcano", "/root/.ssh"}
    svc = c.store.get("services", "default", "mpi")
    assert svc["spec"]["clusterIP"] == "None" and "ports" not in svc["spec"]
    secret = c.store.get("secrets", "default", "mpi-ssh")["data"]
    assert set(secret) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    assert base64.b64decode(secret["authorized_keys"]) == base64.b64decode(secret["id_rsa.pub"])


def test_partition_policy_becomes_a_sub_group_policy() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    body = job("part", replicas=4)
    body["spec"]["tasks"][0]["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1}
    c.apply([body])
    (pg,) = c.podgroups()
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["subGroupPolicy"] == [{
        "name": "main", "subGroupSize": 2, "minSubGroups": 1,
        "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "main"}},
        "matchLabelKeys": ["volcano.sh/partition-id"]}]


@pytest.mark.parametrize(
    ("phase", "action", "kill", "after"),
    [
        ("Pending", "RestartJob", "job", "Restarting"),
        ("Running", "AbortJob", "job", "Aborting"),
        ("Running", "CompleteJob", "job", "Completing"),
        ("Running", "TerminateJob", "job", "Terminating"),
        ("Running", "RestartTask", "target", "Restarting"),
        ("Aborted", "ResumeJob", "job", "Restarting"),
    ],
)
def test_state_machine_actions(phase: str, action: str, kill: str, after: str) -> None:
    from pumice.controllers.job_state import JobFacts

    step = plan(phase, action)
    assert step.kill == kill
    status: dict = {"state": {"phase": phase}}
    assert step.update is not None and step.update(status, JobFacts(1, 1, None, 3, {})) is True
    assert status["state"]["phase"] == after


def test_state_machine_running_sync_rules() -> None:
    from pumice.controllers.job_state import JobFacts

    facts = JobFacts(replicas=4, min_available=2, min_success=None, max_retry=3, task_min_available={"t": 2})
    step = plan("Running", "SyncJob")
    done = {"state": {"phase": "Running"}, "succeeded": 2, "failed": 2,
            "taskStatusCount": {"t": {"phase": {"Succeeded": 2, "Failed": 2}}}}
    assert step.update is not None and step.update(done, facts) and done["state"]["phase"] == "Completed"
    bad = {"state": {"phase": "Running"}, "succeeded": 1, "failed": 3,
           "taskStatusCount": {"t": {"phase": {"Succeeded": 1, "Failed": 3}}}}
    assert step.update(bad, facts) and bad["state"]["phase"] == "Failed"
    waiting = {"state": {"phase": "Running"}, "pending": 3, "running": 1}
    assert step.update(waiting, facts) and waiting["state"]["phase"] == "Pending"
    restarting = plan("Restarting", "SyncJob")
    assert restarting.update is not None
    over = {"state": {"phase": "Restarting"}, "retryCount": 3}
    assert restarting.update(over, facts) and over["state"]["phase"] == "Failed"


def test_pod_pending_timeout_policy_fires_by_the_clock() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)  # 3 x 8 CPU: three 6-CPU pods fit, the fourth waits
    c.apply([job("wait", replicas=4, cpu="6", min_available=1,
                 policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "30s"}])])
    c.run_until(lambda: c.phase("wait") == "Running")
    started = c.clock.now()
    wake = c.manager.next_wakeup()
    assert wake is not None and started - 5 <= wake - 30 <= started
    c.run_until(lambda: c.phase("wait") == "Aborted")
    assert wake <= c.clock.now() <= wake + 2
    assert c.pods("wait") == []


def test_pod_pending_timeout_is_cancelled_when_the_pod_starts() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([job("fits", replicas=2, policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "30s"}])])
    for _ in range(40):
        c.step()
    assert c.phase("fits") == "Running"
    assert c.manager.next_wakeup() is None


def test_scaling_a_running_job_updates_pods_podgroup_and_hosts() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([job("elastic", replicas=2, min_available=1, plugins={"svc": []})])
    c.run_until(lambda: c.job("elastic")["status"].get("running") == 2)
    c.store.patch(JOBS, "default", "elastic", {"spec": {"tasks": [{**c.job("elastic")["spec"]["tasks"][0],
                                                                    "replicas": 3}]}})
    c.run_until(lambda: c.job("elastic")["status"].get("running") == 3)
    (pg,) = c.podgroups()
    assert pg["spec"]["minMember"] == 1 and pg["spec"]["minTaskMember"] == {"main": 2}
    assert c.store.get("configmaps", "default", "elastic-svc")["data"]["VC_MAIN_NUM"] == "3"
    c.store.patch(JOBS, "default", "elastic", {"spec": {"tasks": [{**c.job("elastic")["spec"]["tasks"][0],
                                                                    "replicas": 1, "minAvailable": 1}]}})
    c.manager.sync()
    assert [p["metadata"]["name"] for p in c.pods("elastic")] == ["elastic-main-0"]
    assert c.podgroups()[0]["spec"]["minTaskMember"] == {"main": 1}
    assert c.phase("elastic") == "Running"


def test_restart_pod_policy_restarts_only_that_pod() -> None:
    failures = {"n": 0}

    def exit_code(pod: dict) -> int:
        if pod["metadata"]["name"] == "rp-main-1" and failures["n"] == 0:
            failures["n"] += 1
            return 1
        return 0

    c = Cluster(run_for=lambda p: 5.0 if p["metadata"]["name"] == "rp-main-1" else 10_000.0, exit_code=exit_code)
    body = job("rp", replicas=3)
    body["spec"]["tasks"][0]["policies"] = [{"event": "PodFailed", "action": "RestartPod"}]
    c.apply([body])
    c.run_until(lambda: c.job("rp")["status"].get("retryCount") == 1)
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in c.pods("rp")}
    c.run_until(lambda: c.phase("rp") == "Running" and c.job("rp")["status"].get("running", 0) >= 2)
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in c.pods("rp")}
    assert after["rp-main-0"] == uids["rp-main-0"] and after["rp-main-2"] == uids["rp-main-2"]  # untouched
    assert "rp-main-1" in after
    conditions = [x["status"] for x in c.job("rp")["status"]["conditions"]]
    assert conditions[-3:] == ["Restarting", "Pending", "Running"]
    assert c.job("rp")["status"]["state"].get("reason") != "RestartPod"
