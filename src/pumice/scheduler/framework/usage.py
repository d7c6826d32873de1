"""Per-queue sums over a session's jobs, taken in one columnar pass.

proportion and overcommit read them when the session opens. Stacking the jobs' vectors once and
summing by queue costs a few NumPy calls per session, where per-job arithmetic would cost several per
job (a live cluster holds every running job in every session).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import ALLOCATED_STATUS, JobInfo


@dataclass(slots=True)
class QueueUsage:
    #: Σ of what the queue's jobs hold now (allocated pods).
    allocated: np.ndarray
    #: allocated + Σ of the Pending tasks' requests.
    request: np.ndarray
    #: What admitted jobs hold in the queue before their pods run (Volcano proportion's ``inqueue``):
    #: an Inqueue job its minResources, a Running job that is ready what it still lacks of them.
    inqueue: np.ndarray
    #: What jobs hold beyond their minResources (all of it without minResources).
    elastic: np.ndarray


def _by_queue(codes: np.ndarray, rows: np.ndarray, n_queues: int) -> np.ndarray:
    """Row sums per queue code, added in job order (the same order a running sum would take)."""
    out = np.zeros((n_queues, rows.shape[1]))
    np.add.at(out, codes, rows)
    return out


@dataclass(slots=True)
class OpeningSums:
    """The per-queue sums and what each job held when the session opened (for the closing deltas)."""

    usage: dict[str, QueueUsage]
    #: job uid -> its row below
    rows: dict[str, int]
    allocated: np.ndarray
    #: Allocated pods per job, and per queue.
    pods: list[int]
    queue_pods: dict[str, int]


def _sums(jobs: list[JobInfo], width: int) -> OpeningSums:
    if not jobs:
        return OpeningSums({}, {}, np.zeros((0, width)), [], {})
    zeros = np.zeros(width)
    alloc = np.array([j.allocated for j in jobs])
    pending = np.array([j.pending_request for j in jobs])
    mins = np.array([zeros if j.min_resources is None else j.min_resources for j in jobs])
    # 1: Inqueue (holds its minResources); 2: Running and ready (holds what it lacks of them)
    stage = np.array([0 if j.min_resources is None else 1 if j.phase == "Inqueue"
                      else 2 if j.phase == "Running" and j.ready >= j.min_available else 0 for j in jobs])
    pods = [j.count(ALLOCATED_STATUS) for j in jobs]
    inqueue = np.where((stage == 1)[:, None], mins,
                       np.where((stage == 2)[:, None], np.maximum(mins - alloc, 0), 0.0))
    elastic = np.maximum(alloc - mins, 0)  # minResources of zero for jobs without: all of it
    index = {name: i for i, name in enumerate(dict.fromkeys(j.queue for j in jobs))}
    if len(index) == 1:
        sums = [m.sum(axis=0, keepdims=True) for m in (alloc, pending, inqueue, elastic)]
        queue_pods = [sum(pods)]
    else:
        codes = np.array([index[j.queue] for j in jobs])
        sums = [_by_queue(codes, m, len(index)) for m in (alloc, pending, inqueue, elastic)]
        queue_pods = np.bincount(codes, weights=pods, minlength=len(index)).astype(int).tolist()
    usage = {
        name: QueueUsage(allocated=sums[0][i], request=sums[0][i] + sums[1][i], inqueue=sums[2][i],
                         elastic=sums[3][i])
        for name, i in index.items()
    }
    return OpeningSums(usage, {j.uid: i for i, j in enumerate(jobs)}, alloc, pods,
                       {name: queue_pods[i] for name, i in index.items()})


def usage_of(jobs: Iterable[JobInfo], width: int) -> dict[str, QueueUsage]:
    """Sums for every queue named by one of ``jobs`` (``width`` = resource dimensions)."""
    return _sums(list(jobs), width).usage


def opening_usage(ssn: Session) -> dict[str, QueueUsage]:
    """The sums as the session opened (computed once, whichever plugin asks first)."""
    return _opening(ssn).usage


def _opening(ssn: Session) -> OpeningSums:
    sums = ssn.memo.get("opening_sums")
    if sums is None:
        sums = ssn.memo["opening_sums"] = _sums(list(ssn.jobs.values()), ssn.space.size)
    return sums


def closing_allocated(ssn: Session) -> dict[str, tuple[np.ndarray, int]]:
    """Per queue, (what its jobs hold, how many pods) as the session leaves them: the opening sums
    plus what the jobs this session changed gained or lost (only statements change allocations,
    and they mark their jobs touched)."""
    sums = ssn.memo.get("opening_sums")
    if sums is None:  # nobody asked at open: the sums now are the answer
        now = _sums(list(ssn.jobs.values()), ssn.space.size)
        return {q: (u.allocated, now.queue_pods[q]) for q, u in now.usage.items()}
    out = {q: (u.allocated.copy(), sums.queue_pods[q]) for q, u in sums.usage.items()}
    for uid in ssn.touched:
        i = sums.rows.get(uid)
        job = ssn.jobs.get(uid)
        if i is None or job is None:
            continue
        allocated, pods = out[job.queue]
        allocated += job.allocated - sums.allocated[i]
        out[job.queue] = (allocated, pods + job.count(ALLOCATED_STATUS) - sums.pods[i])
    return out
