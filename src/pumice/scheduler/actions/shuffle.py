"""shuffle: evict the running tasks that the victim plugins name (rescheduling, tdm), so that they are
placed again elsewhere: Volcano's descheduling action. Budgets (``pdb``) filter what may go."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Action
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.model import TaskInfo, TaskStatus

REASON = "shuffle"


class ShuffleAction(Action):
    name = "shuffle"

    def execute(self, ssn: Session) -> None:
        running: list[TaskInfo] = [t for job in ssn.jobs.values() for t in job.tasks.values()
                                   if t.status == TaskStatus.RUNNING]
        if not running:
            return
        victims = ssn.victim_tasks(running)
        if not victims:
            return
        stmt = Statement(ssn)
        for victim in victims:
            stmt.evict(victim, REASON)
        stmt.commit()
