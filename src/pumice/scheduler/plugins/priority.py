"""priority: task and job order by priority, priority-based victims, starving jobs."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import JOB_ORDER, JOB_STARVING, PERMIT, PREEMPTABLE, TASK_ORDER
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, TaskInfo


def _higher_first(left: int, right: int) -> int:
    if left == right:
        return 0
    return -1 if left > right else 1


class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(TASK_ORDER, self.name, self.task_order)
        ssn.add(JOB_ORDER, self.name, self.job_order)
        ssn.add(PREEMPTABLE, self.name, self.preemptable)
        ssn.add(JOB_STARVING, self.name, self.starving)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        return _higher_first(left.priority, right.priority)

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        return _higher_first(left.priority, right.priority)

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Tasks of lower-priority jobs; within the preemptor's job, lower-priority tasks."""
        pjob = preemptor.job
        victims = []
        for t in preemptees:
            if t.job is not pjob:
                if t.job is None or pjob is None or t.job.priority >= pjob.priority:
                    continue
            elif t.priority >= preemptor.priority:
                continue
            victims.append(t)
        return victims, PERMIT

    def starving(self, job: JobInfo) -> bool:
        return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)
