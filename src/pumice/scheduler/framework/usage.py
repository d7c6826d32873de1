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
from pumice.scheduler.model import JobInfo


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


def usage_of(jobs: Iterable[JobInfo], width: int) -> dict[str, QueueUsage]:
    """Sums for every queue named by one of ``jobs`` (``width`` = resource dimensions)."""
    jobs = list(jobs)
    if not jobs:
        return {}
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
    if len(index) == 1:
        sums = [m.sum(axis=0, keepdims=True) for m in (alloc, pending, inqueue, elastic)]
    else:
        codes = np.array([index[j.queue] for j in jobs])
        sums = [_by_queue(codes, m, len(index)) for m in (alloc, pending, inqueue, elastic)]
    return {
        name: QueueUsage(allocated=sums[0][i], request=sums[0][i] + sums[1][i], inqueue=sums[2][i],
                         elastic=sums[3][i])
        for name, i in index.items()
    }


def opening_usage(ssn: Session) -> dict[str, QueueUsage]:
    """The sums as the session opened (computed once, whichever plugin asks first)."""
    usage = ssn.memo.get("queue_usage")
    if usage is None:
        usage = ssn.memo["queue_usage"] = usage_of(ssn.jobs.values(), ssn.space.size)
    return usage
