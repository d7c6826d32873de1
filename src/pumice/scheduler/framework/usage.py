"""Per-queue sums over a session's jobs, taken in one columnar pass.

proportion and overcommit read them when the session opens and the report reads ``allocated`` when it
closes. Stacking the jobs' vectors once and summing by queue costs a few NumPy calls per session,
where per-job arithmetic would cost several per job (a live cluster holds every running job in
every session).
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
    #: Allocated pods.
    pods: int


def _by_queue(codes: np.ndarray, rows: np.ndarray, n_queues: int) -> np.ndarray:
    """Row sums per queue code, added in job order (the same order a running sum would take)."""
    if n_queues == 1:
        return rows.sum(axis=0, keepdims=True)
    out = np.zeros((n_queues, rows.shape[1]))
    np.add.at(out, codes, rows)
    return out


def usage_of(jobs: Iterable[JobInfo], width: int) -> dict[str, QueueUsage]:
    """Sums for every queue named by one of ``jobs`` (``width`` = resource dimensions)."""
    index: dict[str, int] = {}
    codes: list[int] = []
    allocated: list[np.ndarray] = []
    pending: list[np.ndarray] = []
    minimum: list[np.ndarray] = []
    admitted: list[bool] = []  # Inqueue with minResources
    running_ready: list[bool] = []  # Running, ready, with minResources
    pods: list[int] = []
    zeros = np.zeros(width)
    for job in jobs:
        code = index.setdefault(job.queue, len(index))
        codes.append(code)
        allocated.append(job.allocated)
        pending.append(job.pending_request)
        has_min = job.min_resources is not None
        minimum.append(job.min_resources if has_min else zeros)  # type: ignore[arg-type]
        admitted.append(has_min and job.phase == "Inqueue")
        running_ready.append(has_min and job.phase == "Running" and job.ready >= job.min_available)
        pods.append(job.count(ALLOCATED_STATUS))
    if not codes:
        return {}
    code_arr = np.array(codes)
    alloc = np.array(allocated)
    mins = np.array(minimum)
    inqueue = np.where(np.array(admitted)[:, None], mins,
                       np.where(np.array(running_ready)[:, None], np.maximum(mins - alloc, 0), 0.0))
    elastic = np.maximum(alloc - mins, 0)  # minResources of zero for jobs without: all of it
    n = len(index)
    sums = [_by_queue(code_arr, rows, n) for rows in (alloc, np.array(pending), inqueue, elastic)]
    pod_sums = np.bincount(code_arr, weights=pods, minlength=n)
    return {
        name: QueueUsage(allocated=sums[0][i], request=sums[0][i] + sums[1][i], inqueue=sums[2][i],
                         elastic=sums[3][i], pods=int(pod_sums[i]))
        for name, i in index.items()
    }


def opening_usage(ssn: Session) -> dict[str, QueueUsage]:
    """The sums as the session opened (computed once, whichever plugin asks first)."""
    usage = ssn.memo.get("queue_usage")
    if usage is None:
        usage = ssn.memo["queue_usage"] = usage_of(ssn.jobs.values(), ssn.space.size)
    return usage
