"""Invariants over random federations (hypothesis): a job never runs in two members at once, a dispatched
gang fits its member, global queue shares hold within one job of the weights."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pumice.federation import names
from pumice.federation.capacity import MemberCapacity
from pumice.federation.placement import read_placement
from pumice.sim.world import FederatedWorld, MemberSpec, RunTracker

from .builders import JOBS, config, nodes, queue, vcjob

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])

members_st = st.lists(st.tuples(st.integers(1, 3), st.sampled_from([2, 4, 8]), st.integers(0, 3)),
                      min_size=2, max_size=4)


def _members(spec: list[tuple[int, int, int]], fence: bool = True) -> list[MemberSpec]:
    return [MemberSpec(f"m{i}", nodes(f"m{i}n", count, gpu=gpu), cost={"nvidia.com/gpu": price}, fence=fence)
            for i, (count, gpu, price) in enumerate(spec)]


@SETTINGS
@given(members=members_st,
       jobs=st.lists(st.tuples(st.integers(1, 3), st.sampled_from([1, 2, 4]), st.integers(60, 400)),
                     min_size=1, max_size=8),
       events=st.lists(st.tuples(st.integers(10, 300), st.sampled_from(["kill", "partition", "heal", "remove"]),
                                 st.integers(0, 3)), max_size=4))
# found by CI: a killed member that answers again (heal) never starts what it is sent, so j3 runs late elsewhere
@example(members=[(2, 4, 0), (1, 2, 0), (1, 2, 0)],
         jobs=[(2, 1, 304), (3, 1, 60), (2, 1, 304), (1, 1, 197), (1, 1, 60), (3, 1, 60)],
         events=[(159, "kill", 0), (10, "kill", 1), (270, "heal", 0)])
def test_a_job_never_runs_in_two_members_at_once(members: list[tuple[int, int, int]],
                                                 jobs: list[tuple[int, int, int]],
                                                 events: list[tuple[int, str, int]]) -> None:
    w = FederatedWorld(_members(members), config())
    tracker = RunTracker(w)
    w.on_step.append(tracker.sync)
    try:
        w.apply([vcjob(f"j{i}", pods, gpu=gpu, duration=d) for i, (pods, gpu, d) in enumerate(jobs)])
        start = w.clock.now()
        for at, kind, who in sorted(events):
            w.run_until(start + at)
            name = f"m{who % len(members)}"
            if kind == "heal":
                w.heal(name)
            elif kind == "partition" and name not in w.dead:
                w.partition(name)
            elif kind == "kill":
                w.kill(name)
            elif kind == "remove" and name in w.federation.members and not w.federation.members[name].deleted:
                w.remove(name)  # a removed member stays listed (deleted) until its jobs are gone: once only
        w.run_until(start + 1500)
        assert tracker.overlaps == []
        for i in range(len(jobs)):  # nothing lost: finished, running in a live member, or waiting with a reason
            job = w.host.get(JOBS, "default", f"j{i}")
            state = (job.get("status") or {}).get("state") or {}
            if state.get("phase") == "Running" and not state.get("reason"):
                # e.g. dispatched late, after a killed member that answered again never started it
                placement, _ = read_placement(job["metadata"].get("annotations"))
                assert placement.placed and all(p.cluster not in w.dead for p in placement.parts), (f"j{i}", placement)
                copies = [w.clusters[p.cluster].store.get(JOBS, "default", p.name) for p in placement.parts]
                assert all(((c.get("status") or {}).get("state") or {}).get("phase") == "Running" for c in copies)
                continue
            assert state.get("phase") in ("Completed", "Failed") or state.get("reason"), (f"j{i}", state)
    finally:
        tracker.close()
        w.close()


@SETTINGS
@given(shapes=st.lists(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=4), min_size=2, max_size=3),
       jobs=st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1, 2, 4, 8])), min_size=1, max_size=10))
def test_a_dispatched_gang_fits_its_member(shapes: list[list[int]], jobs: list[tuple[int, int]]) -> None:
    members = []
    for i, gpus in enumerate(shapes):  # nodes of mixed sizes in each member
        ns = []
        for j, gpu in enumerate(gpus):
            ns += nodes(f"m{i}s{j}", 1, gpu=gpu, cpu=16)
        members.append(MemberSpec(f"m{i}", ns))
    w = FederatedWorld(members, config("pendingTimeout: 30s\n"))
    patch = pytest.MonkeyPatch()
    try:
        overcommitted: list[str] = []

        def check(cap: MemberCapacity, job: str, at: np.ndarray, amounts: np.ndarray, pods: np.ndarray) -> None:
            room = cap.alloc - cap.used - cap.reserved  # what is free before this gang's reservation
            need = np.zeros_like(room)
            np.add.at(need, at, amounts)
            if not (need[at] <= room[at] + 0.5).all():
                overcommitted.append(job)
            reserve(cap, job, at, amounts, pods)

        reserve = MemberCapacity.reserve
        patch.setattr(MemberCapacity, "reserve", check)
        w.apply([vcjob(f"j{i}", pods, gpu=gpu, duration=None) for i, (pods, gpu) in enumerate(jobs)])
        w.run_for(20)
        assert overcommitted == []  # every gang was reserved where it fitted at that moment
        w.run_for(300)
        for i in range(len(jobs)):
            placement, _ = read_placement(w.host.get(JOBS, "default", f"j{i}")["metadata"].get("annotations"))
            if not placement.placed:
                continue
            (part,) = placement.parts
            copy = w.clusters[part.cluster].store.get(JOBS, "default", f"j{i}")
            started = (copy.get("status") or {}).get("running") == jobs[i][0]
            # the member's scheduler started the gang, or it will be taken back: never stuck in a member
            assert started or w.clock.now() - placement.at < 30 + 2, (f"j{i}", part.cluster, copy.get("status"))
    finally:
        patch.undo()
        w.close()


@SETTINGS
@given(weights=st.lists(st.integers(1, 5), min_size=2, max_size=4),
       sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_global_queue_shares_hold(weights: list[int], sizes: list[int]) -> None:
    w = FederatedWorld([MemberSpec(f"m{i}", nodes(f"m{i}n", n)) for i, n in enumerate(sizes)], config())
    try:
        queues = [f"q{i}" for i in range(len(weights))]
        w.apply([queue(q, wt) for q, wt in zip(queues, weights, strict=True)])
        total = 8 * sum(sizes)
        per_queue = total + 1  # every queue asks for more than the whole federation
        w.apply([vcjob(f"{q}-{j}", 1, gpu=1, cpu=1, queue=q, duration=None)
                 for j in range(per_queue) for q in queues])
        w.run_for(10)
        jobs, _ = w.host.list(JOBS, "default")
        held: dict[str, int] = dict.fromkeys(queues, 0)
        for job in jobs:
            if (job["metadata"].get("labels") or {}).get(names.CLUSTER_LABEL):
                held[job["spec"]["queue"]] += 1
        share = np.array([held[q] for q in queues], dtype=float) / total
        fair = np.array(weights, dtype=float) / sum(weights)
        assert (np.abs(share - fair) <= 1.0 / total + 1e-9).all(), (held, weights, total)
        assert sum(held.values()) >= total - len(queues)  # nothing idles beyond the rounding of each share
    finally:
        w.close()
