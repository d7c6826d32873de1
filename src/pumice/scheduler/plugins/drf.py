"""drf: dominant resource fairness between jobs (job order and preemption); with
``enableHierarchy``, hierarchical DRF between queues (queue order and reclaim, see
:mod:`pumice.scheduler.plugins.drf_hierarchy`)."""

from __future__ import annotations

import numpy as np

from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import JOB_ORDER, PERMIT, PREEMPTABLE, QUEUE_ORDER, RECLAIMABLE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo, run_request
from pumice.scheduler.plugins.drf_hierarchy import HierarchyTree
from pumice.scheduler.resources import SharesOf

SHARE_DELTA = 1e-6


class DrfPlugin(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.total: np.ndarray = ssn.total_resource
        self.share_of = SharesOf(self.total)
        #: Volcano's jobAttr.allocated: allocated tasks at open, then every allocate/deallocate
        #: event (pipelines included). Taken when a job is first compared or changed (most jobs of
        #: a session never are): the session keeps what a job held at open once it touches it.
        self.allocated: dict[str, np.ndarray] = {}
        #: Dominant shares, dropped when the job's allocation changes.
        self.shares: dict[str, float] = {}
        ssn.add(JOB_ORDER, self.name, self.job_order)
        ssn.add(PREEMPTABLE, self.name, self.preemptable)
        ssn.add_event_handler(self.on_allocate, self.on_deallocate, self.on_allocate_run)
        opt = ssn.conf.plugin(self.name)
        self.tree: HierarchyTree | None = None
        if opt is not None and opt.flags.get("enableHierarchy"):
            self.tree = HierarchyTree(self.total)
            for job in ssn.jobs.values():
                q = ssn.queues.get(job.queue)
                if q is not None:
                    self.tree.add_job(job, self._allocated(job), q)
            ssn.add(QUEUE_ORDER, self.name, self.queue_order)
            ssn.add(RECLAIMABLE, self.name, self.reclaimable)

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """HDRF: level by level, non-saturated first, then lower share / weight."""
        assert self.tree is not None
        c = self.tree.compare(left, right)
        return -1 if c < 0 else 1 if c > 0 else 0

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """HDRF: a task is a victim if, with the reclaimer's task added and it removed, the
        reclaimer's queue would still come first."""
        tree = self.tree
        assert tree is not None
        ljob = reclaimer.job
        lqueue = self.ssn.queues.get(ljob.queue) if ljob is not None else None
        if ljob is None or lqueue is None or ljob.uid not in tree.leaves:
            return [], PERMIT
        lalloc = tree.leaves[ljob.uid].allocated
        lalloc += reclaimer.resreq
        tree.changed(reclaimer.resreq)
        victims = []
        try:
            for t in reclaimees:
                rjob = t.job
                rqueue = self.ssn.queues.get(rjob.queue) if rjob is not None else None
                if rjob is None or rqueue is None or rjob.uid not in tree.leaves:
                    continue
                ralloc = tree.leaves[rjob.uid].allocated
                ralloc -= t.resreq
                tree.changed(-t.resreq)
                c = tree.compare(lqueue, rqueue)
                ralloc += t.resreq
                tree.changed(t.resreq)
                if c < 0:
                    victims.append(t)
        finally:
            lalloc -= reclaimer.resreq
            tree.changed(-reclaimer.resreq)
        return victims, PERMIT

    def _allocated(self, job: JobInfo) -> np.ndarray:
        a = self.allocated.get(job.uid)
        if a is None:
            a = self.allocated[job.uid] = self.ssn.allocated_at_open(job).copy()
        return a

    def _share(self, job: JobInfo) -> float:
        s = self.shares.get(job.uid)
        if s is None:
            s = self.shares[job.uid] = self.share_of(self._allocated(job))
        return s

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Lower dominant share first."""
        ls, rs = self._share(left), self._share(right)
        if ls == rs:
            return 0
        return 1 if ls > rs else -1

    def job_order_key(self, job: JobInfo) -> float | None:
        share = self._share(job)
        return None if share != share else share  # NaN (an infinite request taken back) compares as no key can

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Tasks whose job's share, without them, stays at least the preemptor job's with it."""
        pjob = preemptor.job
        if pjob is None:
            return [], PERMIT
        ls = self.share_of(self._allocated(pjob) + preemptor.resreq)
        allocations: dict[str, np.ndarray] = {}
        victims = []
        for t in preemptees:
            if t.job is None:
                continue
            alloc = allocations.get(t.job.uid)
            if alloc is None:
                alloc = allocations[t.job.uid] = self._allocated(t.job).copy()
            alloc -= t.resreq
            rs = self.share_of(alloc)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(t)
        return victims, PERMIT

    def on_allocate(self, task: TaskInfo) -> None:
        if task.job is not None and task.job.uid in self.ssn.jobs:
            self._allocated(task.job)[...] += task.resreq
            self.shares.pop(task.job.uid, None)
            if self.tree is not None and task.job.uid in self.tree.leaves:
                self.tree.changed(task.resreq)

    def on_allocate_run(self, tasks: list[TaskInfo]) -> None:
        """``on_allocate`` for each of a run of one job's replicas (sums of whole units: exact at once)."""
        job = tasks[0].job
        if job is not None and job.uid in self.ssn.jobs:
            if self.tree is not None and job.uid in self.tree.leaves:
                for task in tasks:
                    self.on_allocate(task)
                return
            self._allocated(job)[...] += run_request(tasks)
            self.shares.pop(job.uid, None)

    def on_deallocate(self, task: TaskInfo) -> None:
        if task.job is not None and task.job.uid in self.ssn.jobs:
            self._allocated(task.job)[...] -= task.resreq
            self.shares.pop(task.job.uid, None)
            if self.tree is not None and task.job.uid in self.tree.leaves:
                self.tree.changed(-task.resreq)
