"""allocate: place pending tasks, queue by queue and job by job, all-or-nothing per gang.

A plain job is one SubJob at the cluster top, placed by the walk of ``allocate_tasks``; a job with
hard network topology or SubJob policies searches HyperNodes (``topology/allocate.py``), placing
each SubJob with the same walk.
"""

from __future__ import annotations

from pumice.scheduler.actions.allocate_tasks import allocate_tasks
from pumice.scheduler.framework.plugin import Action
from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, QueueInfo, TaskStatus
from pumice.scheduler.topology.allocate import allocate_job_turn, uses_topology_path
from pumice.scheduler.topology.subjobs import JobTopology
from pumice.scheduler.topology.worksheet import TaskSheet, job_sheet


class AllocateAction(Action):
    name = "allocate"

    def execute(self, ssn: Session) -> None:
        self._allocate(ssn, None)
        if ssn.overflow:
            # pumice's last pass (proportion's ``workConserving``): what the quotas left idle goes to the
            # queues they held back, lowest share first, so no resource stays idle while jobs wait.
            ssn.overflowing = True
            try:
                self._allocate(ssn, set(ssn.overflow))
            finally:
                ssn.overflowing = False

    def _allocate(self, ssn: Session, only: set[str] | None) -> None:
        enqueue_configured = "enqueue" in ssn.conf.actions
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_less)
        seen: set[str] = set()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        # A job's order changes only when its own tasks are placed, and only the job taken from a
        # queue is placed before it goes back: its key, taken when pushed, stays right.
        key = ssn.job_order_key()
        #: Per job: its schedulable tasks in task order (a topology job splits them by SubJob).
        sheets: dict[str, TaskSheet] = {}
        #: Per plain job: its one SubJob, made at its first turn.
        plain: dict[str, JobTopology] = {}
        for job in ssn.waiting:
            if job.is_pending():
                if enqueue_configured:
                    continue
                job.phase = "Inqueue"
                ssn.touch(job)
            if not job.count(TaskStatus.PENDING):
                continue  # nothing to place (Volcano builds an empty worksheet and skips it)
            err = ssn.job_valid(job)
            if err:
                job.pending_reason = err
                continue
            queue = ssn.queue_of(job)
            if queue is None or (only is not None and queue.name not in only):
                continue
            sheet = job_sheet(ssn, job)
            if sheet is None:
                continue
            sheets[job.uid] = sheet
            jobs_by_queue.setdefault(queue.name, PriorityQueue(ssn.job_order_less, key=key)).push(job)
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)

        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            sheet = sheets[job.uid]
            if uses_topology_path(ssn, job):  # hard network topology or subGroupPolicy
                if allocate_job_turn(ssn, job, queue, sheet):
                    jobs.push(job)
                queues.push(queue)
                continue
            jt = plain.get(job.uid)
            if jt is None:
                jt = plain[job.uid] = JobTopology.plain(job)
            stmt = allocate_tasks(ssn, jt, jt.subjobs[job.uid], sheet, queue)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                if not sheet.empty():
                    jobs.push(job)
            queues.push(queue)
