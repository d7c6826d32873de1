"""drf: dominant resource fairness between jobs (job order and preemption)."""

from __future__ import annotations

import numpy as np

from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import JOB_ORDER, PERMIT, PREEMPTABLE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, TaskInfo
from pumice.scheduler.resources import share

SHARE_DELTA = 1e-6


class DrfPlugin(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.total: np.ndarray = ssn.total_resource
        #: Volcano's jobAttr.allocated: allocated tasks at open, then every allocate/deallocate
        #: event (pipelines included). Taken when a job is first compared or changed (most jobs of
        #: a session never are): the session keeps what a job held at open once it touches it.
        self.allocated: dict[str, np.ndarray] = {}
        #: Dominant shares, dropped when the job's allocation changes.
        self.shares: dict[str, float] = {}
        ssn.add(JOB_ORDER, self.name, self.job_order)
        ssn.add(PREEMPTABLE, self.name, self.preemptable)
        ssn.add_event_handler(self.on_allocate, self.on_deallocate)

    def _allocated(self, job: JobInfo) -> np.ndarray:
        a = self.allocated.get(job.uid)
        if a is None:
            a = self.allocated[job.uid] = self.ssn.allocated_at_open(job).copy()
        return a

    def _share(self, job: JobInfo) -> float:
        s = self.shares.get(job.uid)
        if s is None:
            s = self.shares[job.uid] = share(self._allocated(job), self.total)
        return s

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Lower dominant share first."""
        ls, rs = self._share(left), self._share(right)
        if ls == rs:
            return 0
        return 1 if ls > rs else -1

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Tasks whose job's share, without them, stays at least the preemptor job's with it."""
        pjob = preemptor.job
        if pjob is None:
            return [], PERMIT
        ls = share(self._allocated(pjob) + preemptor.resreq, self.total)
        allocations: dict[str, np.ndarray] = {}
        victims = []
        for t in preemptees:
            if t.job is None:
                continue
            alloc = allocations.get(t.job.uid)
            if alloc is None:
                alloc = allocations[t.job.uid] = self._allocated(t.job).copy()
            alloc -= t.resreq
            rs = share(alloc, self.total)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(t)
        return victims, PERMIT

    def on_allocate(self, task: TaskInfo) -> None:
        if task.job is not None and task.job.uid in self.ssn.jobs:
            self._allocated(task.job)[...] += task.resreq
            self.shares.pop(task.job.uid, None)

    def on_deallocate(self, task: TaskInfo) -> None:
        if task.job is not None and task.job.uid in self.ssn.jobs:
            self._allocated(task.job)[...] -= task.resreq
            self.shares.pop(task.job.uid, None)
