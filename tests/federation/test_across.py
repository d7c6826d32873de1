"""Across clusters: dependsOn between jobs in different members, splitting by task only when allowed."""

from __future__ import annotations

from collections.abc import Callable

from pumice.federation import names
from pumice.federation.placement import read_placement
from pumice.sim.world import FederatedWorld, MemberSpec, RunTracker

from .builders import JOBS, cluster_of, host_job, member_jobs, nodes, phase, task, vcjob


def test_depends_on_across_members(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("cpu", nodes("c", 2, gpu=0), cost={"cpu": "0.01"}),
                    MemberSpec("gpu", nodes("g", 2, model="H100"), cost={"nvidia.com/gpu": 2, "cpu": "0.05"})])
    w.apply([vcjob("prep", 2, gpu=0, duration=100),
             vcjob("train", 2, duration=100, annotations={names.DEPENDS_ON: "prep"}),
             vcjob("eval", 1, gpu=0, duration=50, annotations={names.DEPENDS_ON: "default/train"})])
    w.run_for(20)
    assert cluster_of(w, "prep") == "cpu"
    assert cluster_of(w, "train") is None
    state = host_job(w, "train")["status"]["state"]
    assert state["reason"] == "DependencyPending" and "default/prep in cluster cpu" in state["message"]
    w.run_for(100)
    assert phase(w, "prep") == "Completed" and cluster_of(w, "train") == "gpu"
    assert cluster_of(w, "eval") is None
    w.run_for(200)
    assert [phase(w, n) for n in ("prep", "train", "eval")] == ["Completed"] * 3
    assert cluster_of(w, "eval") == "cpu"


def test_failed_dependency_holds_the_job(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 2))])
    failing = vcjob("prep", 1, duration=10)
    failing["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["pumice.io/fail"] = "true"
    failing["spec"]["maxRetry"] = 1
    w.apply([failing, vcjob("train", 1, annotations={names.DEPENDS_ON: "prep"})])
    w.run_for(200)
    assert phase(w, "prep") == "Failed"
    state = host_job(w, "train")["status"]["state"]
    assert state["reason"] == "DependencyFailed" and cluster_of(w, "train") is None


def _big_job(split: bool) -> dict:
    job = vcjob("big", tasks=[task("ps", 2, gpu=0, cpu=6), task("worker", 3)])
    if split:
        job["metadata"]["annotations"] = {names.SPLIT: "by-task"}
    return job


def test_too_large_waits_unless_split_is_allowed(make_world: Callable[..., FederatedWorld]) -> None:
    # no member holds 3 workers x 8 GPUs and 2 parameter servers with them; together they do
    w = make_world([MemberSpec("a", nodes("a", 3, cpu=8), cost={"nvidia.com/gpu": 1}),
                    MemberSpec("b", nodes("b", 2, cpu=8), cost={"nvidia.com/gpu": 2})])
    w.apply([_big_job(split=False)])
    w.run_for(10)
    assert cluster_of(w, "big") is None
    assert host_job(w, "big")["status"]["state"]["reason"] == "NoClusterFits"
    w.host.patch(JOBS, "default", "big", {"metadata": {"annotations": {names.SPLIT: "by-task"}}})
    w.run_for(10)
    placement, _ = read_placement(host_job(w, "big")["metadata"]["annotations"])
    assert sorted((p.cluster, tuple(p.tasks or ())) for p in placement.parts) == [("a", ("worker",)),
                                                                                   ("b", ("ps",))]
    assert cluster_of(w, "big") == "a_b"
    assert member_jobs(w, "a") == ["big-a"] and member_jobs(w, "b") == ["big-b"]
    copy = w.clusters["a"].store.get(JOBS, "default", "big-a")
    assert copy["spec"]["minAvailable"] == 3 and [t["name"] for t in copy["spec"]["tasks"]] == ["worker"]
    w.run_for(30)
    status = host_job(w, "big")["status"]
    assert status["state"]["phase"] == "Running" and status["running"] == 5
    assert set(status["taskStatusCount"]) == {"ps", "worker"}
    w.run_for(700)
    assert phase(w, "big") == "Completed"


def test_split_keeps_dependent_tasks_together(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 3, cpu=8), cost={"nvidia.com/gpu": 1}),
                    MemberSpec("b", nodes("b", 3, cpu=8), cost={"nvidia.com/gpu": 2})])
    job = vcjob("flow", tasks=[task("prep", 1, gpu=0), task("train", 3, depends_on=["prep"]), task("extra", 3)])
    job["metadata"]["annotations"] = {names.SPLIT: "by-task"}
    w.apply([job])
    w.run_for(10)
    placement, _ = read_placement(host_job(w, "flow")["metadata"]["annotations"])
    groups = {p.cluster: set(p.tasks or ()) for p in placement.parts}
    assert {"prep", "train"} in groups.values() and {"extra"} in groups.values()


def test_split_job_member_lost_restarts_every_part(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 3, cpu=8), cost={"nvidia.com/gpu": 1}),
                    MemberSpec("b", nodes("b", 2, cpu=8), cost={"nvidia.com/gpu": 2}),
                    MemberSpec("c", nodes("c", 3, cpu=8), cost={"nvidia.com/gpu": 3})])
    tracker = RunTracker(w)
    w.on_step.append(tracker.sync)
    w.apply([_big_job(split=True)])
    w.run_for(30)
    first, _ = read_placement(host_job(w, "big")["metadata"]["annotations"])
    assert len(first.parts) == 2 and "a" in first.clusters
    (lost,) = set(first.clusters) - {"a"}
    w.kill(lost)
    w.run_for(120)
    placement, _ = read_placement(host_job(w, "big")["metadata"]["annotations"])
    assert placement.placed and lost not in placement.clusters and placement.dispatch == 2
    assert sorted(placement.history) == sorted(first.clusters)  # every part was taken back
    w.run_for(800)
    assert phase(w, "big") == "Completed"
    assert tracker.overlaps == []
