"""The Volcano quick-start scenarios, end to end: controllers + scheduler + a fake kubelet."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Cluster


@pytest.fixture
def quickstart(shared: Path) -> Path:
    return shared / "scenarios" / "quickstart"


def _run_seconds(pod: dict) -> float:
    """Run times of the quick-start pods (their ``sleep``)."""
    name = pod["metadata"]["name"]
    return {"workflow-job-task-a-0": 100.0, "workflow-job-task-b-0": 20.0}.get(name, 300.0)


def test_hello_job_goes_pending_running_completed(quickstart: Path) -> None:
    c = Cluster({"k3d-server-0": 8, "k3d-agent-0": 8, "k3d-agent-1": 8}, run_for=_run_seconds)
    c.apply(quickstart / "01-hello-job.yaml")
    phases = [c.phase("hello-volcano-job")]
    c.run_until(lambda: c.phase("hello-volcano-job") == "Completed",
                on_step=lambda: phases.append(c.phase("hello-volcano-job")))
    seen = [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p]
    assert seen == ["Pending", "Running", "Completed"]
    binds = [b for cycle in c.bind_history for b in cycle]
    assert binds == ["default/hello-volcano-job-mytask-0"]
    status = c.job("hello-volcano-job")["status"]
    assert status["succeeded"] == 1 and status["minAvailable"] == 1
    assert [cond["status"] for cond in status["conditions"]] == ["Pending", "Running", "Completed"]
    # it ran about 300 s
    assert 300 <= c.clock.now() - 1_767_225_600.0 <= 310


def test_hello_job_pod_and_podgroup_carry_volcano_names(quickstart: Path) -> None:
    c = Cluster()
    (job,) = c.apply(quickstart / "01-hello-job.yaml")
    (pg,) = c.podgroups()
    assert pg["metadata"]["name"] == f"hello-volcano-job-{job['metadata']['uid']}"
    assert pg["spec"]["minMember"] == 1 and pg["spec"]["queue"] == "default"
    assert pg["spec"]["minTaskMember"] == {"mytask": 1}
    assert c.pods("hello-volcano-job") == []  # delayed pod creation: the PodGroup is still Pending
    c.step()
    (pod,) = c.pods("hello-volcano-job")
    ann, labels = pod["metadata"]["annotations"], pod["metadata"]["labels"]
    assert pod["metadata"]["name"] == "hello-volcano-job-mytask-0"
    assert ann["scheduling.k8s.io/group-name"] == pg["metadata"]["name"]
    assert ann["volcano.sh/task-spec"] == "mytask" and ann["volcano.sh/task-index"] == "0"
    assert ann["volcano.sh/job-name"] == "hello-volcano-job" and ann["volcano.sh/queue-name"] == "default"
    assert labels["volcano.sh/job-name"] == "hello-volcano-job" and labels["volcano.sh/job-namespace"] == "default"
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"


def test_gang_of_20_on_24_cpus_never_binds_a_pod(quickstart: Path) -> None:
    c = Cluster({"k3d-server-0": 8, "k3d-agent-0": 8, "k3d-agent-1": 8})
    c.apply(quickstart / "02-queues.yaml")
    c.apply(quickstart / "04-gang-20.yaml")
    for _ in range(30):
        c.step()
    assert not any(p["spec"].get("nodeName") for p in c.pods("gang-job"))
    assert not [b for cycle in c.bind_history for b in cycle]
    (pg,) = c.podgroups()
    assert pg["spec"]["minResources"] == {"cpu": "80"}
    assert pg["status"]["phase"] in ("Pending", "Inqueue")
    assert c.phase("gang-job") == "Pending"


def test_gang_min4_binds_at_least_four_together(quickstart: Path) -> None:
    c = Cluster({"k3d-server-0": 8, "k3d-agent-0": 8, "k3d-agent-1": 8})
    c.apply(quickstart / "02-queues.yaml")
    c.apply(quickstart / "05-gang-min4.yaml")
    c.run_until(lambda: any(c.bind_history))
    first = next(cycle for cycle in c.bind_history if cycle)
    assert len(first) >= 4
    for _ in range(5):
        c.step()
    bound = [p for p in c.pods("gang-job-min4") if p["spec"].get("nodeName")]
    assert len(bound) == 6  # 24 CPU / 4 CPU
    assert c.phase("gang-job-min4") == "Running"


def test_depends_on_starts_task_b_after_task_a_completed(quickstart: Path) -> None:
    c = Cluster({"k3d-server-0": 8, "k3d-agent-0": 8, "k3d-agent-1": 8}, run_for=_run_seconds)
    c.apply(quickstart / "06-depends-on.yaml")
    a_done_at: list[float] = []
    b_created_at: list[float] = []

    def watch() -> None:
        pods = {p["metadata"]["name"]: p for p in c.pods("workflow-job")}
        a = pods.get("workflow-job-task-a-0")
        if a and a["status"]["phase"] == "Succeeded" and not a_done_at:
            a_done_at.append(c.clock.now())
        if "workflow-job-task-b-0" in pods and not b_created_at:
            b_created_at.append(c.clock.now())
            assert a is not None and a["status"]["phase"] == "Succeeded"

    c.run_until(lambda: c.phase("workflow-job") == "Completed", on_step=watch)
    assert a_done_at and b_created_at and b_created_at[0] >= a_done_at[0]
    status = c.job("workflow-job")["status"]
    assert status["succeeded"] == 2
    assert status["taskStatusCount"] == {"task-a": {"phase": {"Succeeded": 1}}, "task-b": {"phase": {"Succeeded": 1}}}
