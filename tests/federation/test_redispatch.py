"""A member that goes away has its unfinished jobs run elsewhere, never twice at once; nothing is lost."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pumice.federation import names
from pumice.federation.federation import Federation
from pumice.federation.members import StaticConnector
from pumice.federation.placement import read_placement
from pumice.sim.world import FederatedWorld, MemberSpec, RunTracker

from .builders import JOBS, cluster_of, config, host_job, member_jobs, nodes, phase, vcjob


def _two(make_world: Callable[..., FederatedWorld], extra: str = "", *, fence: bool = True) -> FederatedWorld:
    return make_world([MemberSpec("a", nodes("a", 2), cost={"nvidia.com/gpu": 1}, fence=fence),
                       MemberSpec("b", nodes("b", 2), cost={"nvidia.com/gpu": 2})], config(extra))


def _track(w: FederatedWorld) -> RunTracker:
    tracker = RunTracker(w)
    w.on_step.append(tracker.sync)
    return tracker


def _history(w: FederatedWorld, name: str) -> list[str]:
    return read_placement(host_job(w, name)["metadata"]["annotations"])[0].history


def test_killed_member_jobs_finish_elsewhere(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world)
    tracker = _track(w)
    w.apply([vcjob("train", 2, duration=300)])
    w.run_for(100)
    assert cluster_of(w, "train") == "a" and phase(w, "train") == "Running"
    w.kill("a")
    w.run_for(20)  # within the grace period: it stays
    assert cluster_of(w, "train") == "a"
    w.run_for(400)
    assert phase(w, "train") == "Completed"
    assert cluster_of(w, "train") == "b" and _history(w, "train") == ["a"]
    assert tracker.overlaps == []
    cluster = w.host.get(names.CLUSTERS, None, "a")["status"]["conditions"][0]
    assert cluster["status"] == "False" and cluster["reason"] == "ClusterUnreachable"
    reasons = [e["reason"] for e in w.host.list("events", "default")[0]]
    assert {"Dispatched", "ClusterLost", "Redispatching"} <= set(reasons)


def test_partitioned_member_fences_before_the_job_moves(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world)
    tracker = _track(w)
    w.apply([vcjob("train", 2, duration=300)])
    w.run_for(100)
    w.partition("a")  # "a" runs on, cut off from the federation
    w.run_for(100)
    assert cluster_of(w, "train") == "b"
    assert member_jobs(w, "a") == []  # its fence agent stopped the copy when the lease ran out
    assert w.fences["a"] is not None and w.fences["a"].fenced == 1
    w.heal("a")
    w.run_for(400)
    assert phase(w, "train") == "Completed" and member_jobs(w, "a") == []
    assert tracker.overlaps == []
    starts = sorted((r.member, r.start) for r in tracker.runs)
    a_end = max(r.end or 0 for r in tracker.runs if r.member == "a")
    assert a_end < min(t for m, t in starts if m == "b")


def test_unfenced_member_keeps_its_job_until_it_answers(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world, fence=False)
    tracker = _track(w)
    w.apply([vcjob("train", 2, duration=300)])
    w.run_for(100)
    w.partition("a")
    w.run_for(100)
    assert cluster_of(w, "train") == "a"  # it may still run there: it is not sent elsewhere
    state = host_job(w, "train")["status"]["state"]
    assert state["reason"] == "Redispatching" and "until its copies are stopped" in state["message"]
    w.heal("a")
    w.run_for(10)  # answering again with its copy running: the job stays there
    assert cluster_of(w, "train") == "a" and phase(w, "train") == "Running"
    w.run_for(400)
    assert phase(w, "train") == "Completed" and cluster_of(w, "train") == "a"
    assert _history(w, "train") == []
    assert tracker.overlaps == []


def test_unfenced_force_moves_after_the_grace(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world, "unfenced: force\n", fence=False)
    w.apply([vcjob("train", 2, duration=300)])
    w.run_for(100)
    w.partition("a")
    w.run_for(100)
    assert cluster_of(w, "train") == "b"


def test_removed_member(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world)
    tracker = _track(w)
    w.apply([vcjob("train", 2, duration=300)])
    w.run_for(50)
    w.remove("a")
    w.run_for(10)
    assert cluster_of(w, "train") == "b"
    assert member_jobs(w, "a") == []  # taken out of the member before it went elsewhere
    w.run_for(400)
    assert phase(w, "train") == "Completed" and tracker.overlaps == []
    assert "a" not in w.federation.members


def test_policy_none_and_job_opt_out(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world, "redispatch: none\n")
    w.apply([vcjob("train", 1, duration=300)])
    w.run_for(50)
    w.kill("a")
    w.run_for(100)
    assert cluster_of(w, "train") == "a"
    assert "it stays there (redispatch is off)" in host_job(w, "train")["status"]["state"]["message"]


def test_job_opting_out(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world)
    w.apply([vcjob("pinned", 1, duration=300, annotations={names.REDISPATCH: "never"})])
    w.run_for(50)
    w.kill("a")
    w.run_for(100)
    assert cluster_of(w, "pinned") == "a"


def test_noexecute_taint_moves_jobs(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world)
    tracker = _track(w)
    w.apply([vcjob("train", 1, duration=300)])
    w.run_for(50)
    w.host.patch(names.CLUSTERS, None, "a", {"spec": {"taints": [{"key": "maintenance", "effect": "NoExecute"}]}})
    w.run_for(10)
    assert cluster_of(w, "train") == "b" and member_jobs(w, "a") == []
    assert tracker.overlaps == []


def test_copy_deleted_in_member_runs_again(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world)
    w.apply([vcjob("train", 1, duration=300)])
    w.run_for(50)
    w.clusters["a"].store.delete(JOBS, "default", "train")
    w.run_for(10)
    placement, _ = read_placement(host_job(w, "train")["metadata"]["annotations"])
    assert placement.placed and placement.dispatch == 2 and placement.history == ["a"]


def test_too_many_redispatches_fail(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world, "maxRedispatches: 1\n")
    w.apply([vcjob("train", 1, duration=3000)])
    w.run_for(20)
    w.kill("a")
    w.run_for(60)
    assert cluster_of(w, "train") == "b"
    w.kill("b")
    w.run_for(60)
    state = host_job(w, "train")["status"]["state"]
    assert state["phase"] == "Failed" and state["reason"] == "TooManyRedispatches"


def test_host_job_deleted_removes_copies(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world)
    w.apply([vcjob("train", 1, duration=3000)])
    w.run_for(20)
    assert member_jobs(w, "a") == ["train"]
    w.host.delete(JOBS, "default", "train")
    w.run_for(5)
    assert member_jobs(w, "a") == []


@pytest.mark.parametrize("gap", [0.0, 60.0])
def test_federation_restart_loses_nothing(make_world: Callable[..., FederatedWorld], gap: float) -> None:
    w = _two(make_world)
    tracker = _track(w)
    w.apply([vcjob(f"j{i}", 1, gpu=4, duration=200) for i in range(6)])
    w.run_for(30)
    placed = {f"j{i}": cluster_of(w, f"j{i}") for i in range(6)}
    assert None not in placed.values()
    w.federation.close(release=True)  # a clean stop: the members' fence agents let the jobs run on
    w.federation = Federation(w.host, w.clock, config(), connector=StaticConnector(w.links))
    w.run_for(gap)
    w.run_for(400)
    assert {f"j{i}": cluster_of(w, f"j{i}") for i in range(6)} == placed
    assert all(phase(w, f"j{i}") == "Completed" for i in range(6))
    assert tracker.overlaps == []
    copies = member_jobs(w, "a") + member_jobs(w, "b")
    assert sorted(copies) == sorted(placed)


def test_copy_that_does_not_start_goes_elsewhere(make_world: Callable[..., FederatedWorld]) -> None:
    w = _two(make_world, "pendingTimeout: 30s\n")
    # member a's own default queue admits no GPU job: copies there wait forever
    w.clusters["a"].store.patch(names.QUEUES, None, "default", {"spec": {"capability": {"nvidia.com/gpu": "1"}}})
    w.apply([vcjob("train", 1, duration=300)])
    w.run_for(20)
    assert cluster_of(w, "train") == "a"  # cheapest, and its nodes are free
    w.run_for(30)
    assert cluster_of(w, "train") == "b" and phase(w, "train") == "Running"
    placement, _ = read_placement(host_job(w, "train")["metadata"]["annotations"])
    assert placement.returned == ["a"] and placement.lost == 0 and member_jobs(w, "a") == []
    reasons = {e["reason"] for e in w.host.list("events", "default")[0]}
    assert "NotStarted" in reasons
