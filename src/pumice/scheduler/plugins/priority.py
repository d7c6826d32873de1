"""priority: task and job order by priority, priority-based victims, starving jobs."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import PERMIT, Session
from pumice.scheduler.model import JobInfo, TaskInfo


def _higher_first(left: int, right: int) -> int:
    if left == right:
        return 0
    return -1 if left > right else 1


@register_plugin
class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add("task_order", self.name, lambda a, b: _higher_first(a.priority, b.priority))
        ssn.add("job_order", self.name, lambda a, b: _higher_first(a.priority, b.priority))

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
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

        ssn.add("preemptable", self.name, preemptable)

        def starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add("job_starving", self.name, starving)
