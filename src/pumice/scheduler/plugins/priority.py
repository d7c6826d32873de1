"""priority: task and job order by priority, priority-based victims, starving jobs."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import (
    GANG_RECLAIM,
    JOB_ORDER,
    JOB_STARVING,
    PERMIT,
    PREEMPTABLE,
    TASK_ORDER,
    UNIFIED_EVICTABLE,
    EvictionContext,
)
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
        ssn.add(UNIFIED_EVICTABLE, self.name, self.unified_evictable)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        return _higher_first(left.priority, right.priority)

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        return _higher_first(left.priority, right.priority)

    def task_order_key(self, task: TaskInfo) -> int:
        return -task.priority

    def job_order_key(self, job: JobInfo) -> int:
        return -job.priority

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

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """gangreclaim: all (fairness, not priority, decides); gangpreempt: tasks of lower-priority jobs."""
        if ctx.kind == GANG_RECLAIM:
            return candidates, PERMIT
        return [t for t in candidates if t.job is not None and t.job.priority < ctx.job.priority], PERMIT

    def starving(self, job: JobInfo) -> bool:
        return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)
