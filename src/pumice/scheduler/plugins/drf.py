"""drf: dominant resource fairness between jobs (job order and preemption)."""

from __future__ import annotations

import numpy as np

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import PERMIT, Session
from pumice.scheduler.model import JobInfo, TaskInfo
from pumice.scheduler.resources import share

SHARE_DELTA = 1e-6


@register_plugin
class DrfPlugin(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.total_resource
        # Volcano's jobAttr.allocated: allocated tasks at open, then every allocate/deallocate
        # event (pipelines included). Taken when a job is first compared or changed (most jobs of a
        # session never are): the session keeps what a job held at open once it touches it.
        allocated: dict[str, np.ndarray] = {}
        shares: dict[str, float] = {}

        def alloc_of(job: JobInfo) -> np.ndarray:
            a = allocated.get(job.uid)
            if a is None:
                a = allocated[job.uid] = ssn.allocated_at_open(job).copy()
            return a

        def job_share(job: JobInfo) -> float:
            s = shares.get(job.uid)
            if s is None:
                s = shares[job.uid] = share(alloc_of(job), total)
            return s

        def job_order(left: JobInfo, right: JobInfo) -> int:
            ls, rs = job_share(left), job_share(right)
            if ls == rs:
                return 0
            return 1 if ls > rs else -1

        ssn.add("job_order", self.name, job_order)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            pjob = preemptor.job
            if pjob is None:
                return [], PERMIT
            ls = share(alloc_of(pjob) + preemptor.resreq, total)
            allocations: dict[str, np.ndarray] = {}
            victims = []
            for t in preemptees:
                if t.job is None:
                    continue
                alloc = allocations.get(t.job.uid)
                if alloc is None:
                    alloc = allocations[t.job.uid] = alloc_of(t.job).copy()
                alloc -= t.resreq
                rs = share(alloc, total)
                if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                    victims.append(t)
            return victims, PERMIT

        ssn.add("preemptable", self.name, preemptable)

        def on_allocate(task: TaskInfo) -> None:
            if task.job is not None and task.job.uid in ssn.jobs:
                alloc_of(task.job)[...] += task.resreq
                shares.pop(task.job.uid, None)

        def on_deallocate(task: TaskInfo) -> None:
            if task.job is not None and task.job.uid in ssn.jobs:
                alloc_of(task.job)[...] -= task.resreq
                shares.pop(task.job.uid, None)

        ssn.add_event_handler(on_allocate, on_deallocate)
