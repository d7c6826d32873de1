"""backfill: place best-effort tasks (no resource requests) of admitted jobs."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Action
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.model import TaskStatus


class BackfillAction(Action):
    name = "backfill"

    def execute(self, ssn: Session) -> None:
        placer = ssn.placer
        for job in sorted((j for j in ssn.waiting if j.pending_best_effort), key=lambda j: j.uid):
            if job.is_pending() or ssn.queue_of(job) is None or ssn.job_valid(job):
                continue
            for task in sorted(job.tasks.values(), key=lambda t: (t.index is None, t.index, t.creation, t.uid)):
                if task.status != TaskStatus.PENDING or not task.best_effort:
                    continue
                if ssn.pre_predicate(task):
                    continue
                choice = placer.best_node(task)
                if choice is None:
                    job.fit_errors[task.uid] = placer.explain(task)
                    continue
                stmt = Statement(ssn)
                stmt.allocate(task, choice.node)
                if ssn.job_ready(job):
                    stmt.commit()
                    for other in job.tasks_in(TaskStatus.ALLOCATED):
                        ssn.record_bind(other, other.node_name)
                        job.update_task_status(other, TaskStatus.BINDING)
