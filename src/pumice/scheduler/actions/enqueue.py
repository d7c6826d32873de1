"""enqueue: admit PodGroups from Pending to Inqueue when the plugins' votes allow."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Action
from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, QueueInfo


class EnqueueAction(Action):
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        ssn.admitting = True
        try:
            self._admit(ssn)
        finally:
            ssn.admitting = False

    def _admit(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_less)
        seen: set[str] = set()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.waiting:
            queue = ssn.queue_of(job)
            if queue is None:
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if job.is_pending():
                jobs_by_queue.setdefault(queue.name, PriorityQueue(ssn.job_order_less)).push(job)
        while not queues.empty():
            queue = queues.pop()
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            if job.min_resources is None or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.phase = "Inqueue"
                ssn.touch(job)
                job.pending_reason = ""
            queues.push(queue)
