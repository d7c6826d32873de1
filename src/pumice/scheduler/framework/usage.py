"""Per-queue sums over a session's jobs, taken in one columnar pass.

proportion and overcommit read them when the session opens. Stacking the jobs' vectors once and
summing by queue costs a few NumPy calls per session, where per-job arithmetic would cost several per
job (a live cluster holds every running job in every session).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pumice.scheduler.model import ALLOCATED_STATUS, JobInfo

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session


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
    """The per-queue sums as a session opened (kept on the session: ``Session.opening_sums``)."""

    usage: dict[str, QueueUsage]
    #: Per queue, its allocated pods.
    pods: dict[str, int]


def _sums(jobs: list[JobInfo], width: int) -> OpeningSums:
    """Per-queue sums and allocated pods."""
    if not jobs:
        return OpeningSums({}, {})
    zeros = np.zeros(width)
    alloc = np.array([j.allocated for j in jobs])
    pending = np.array([j.pending_request for j in jobs])
    mins = np.array([zeros if j.min_resources is None else j.min_resources for j in jobs])
    # 1: Inqueue (holds its minResources); 2: Running and ready (holds what it lacks of them)
    stage = np.array([0 if j.min_resources is None else 1 if j.phase == "Inqueue"
                      else 2 if j.phase == "Running" and j.ready >= j.min_available else 0 for j in jobs])
    inqueue = np.where((stage == 1)[:, None], mins,
                       np.where((stage == 2)[:, None], np.maximum(mins - alloc, 0), 0.0))
    elastic = np.maximum(alloc - mins, 0)  # minResources of zero for jobs without: all of it
    index = {name: i for i, name in enumerate(dict.fromkeys(j.queue for j in jobs))}
    pods = [j.count(ALLOCATED_STATUS) for j in jobs]
    queue_pods: list[int]
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
    return OpeningSums(usage, {name: queue_pods[i] for name, i in index.items()})


def opening_usage(ssn: Session) -> dict[str, QueueUsage]:
    """The sums as the session opened (computed once, whichever plugin asks first)."""
    if ssn.opening_sums is None:
        ssn.opening_sums = _sums(list(ssn.jobs.values()), ssn.space.size)
    return ssn.opening_sums.usage


def closing_allocated(ssn: Session) -> dict[str, tuple[np.ndarray, int]]:
    """Per queue, (what its jobs hold, how many pods) as the session leaves them: the opening sums
    plus what the jobs this session changed gained or lost (only statements and actions change
    jobs, and they touch them first: ``Session.touch`` keeps what each held at open)."""
    sums = ssn.opening_sums
    if sums is None:  # nobody asked at open: the sums now are the answer
        now = _sums(list(ssn.jobs.values()), ssn.space.size)
        return {q: (u.allocated, now.pods[q]) for q, u in now.usage.items()}
    usage, pods = sums.usage, sums.pods
    out = {q: (u.allocated.copy(), pods[q]) for q, u in usage.items()}
    for uid, (allocated_then, pods_then) in ssn.opening.items():
        job = ssn.jobs.get(uid)
        if job is None or job.queue not in out:
            continue
        allocated, n = out[job.queue]
        allocated += job.allocated - allocated_then
        out[job.queue] = (allocated, n + job.count(ALLOCATED_STATUS) - pods_then)
    return out
