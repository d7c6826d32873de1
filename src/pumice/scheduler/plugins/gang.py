"""gang: all-or-nothing — a job is valid, ready and pipelined only with minAvailable tasks."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import PERMIT, REJECT, Session
from pumice.scheduler.model import JobInfo, TaskInfo, TaskStatus


@register_plugin
class GangPlugin(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        def valid(job: JobInfo) -> str | None:
            if not job.check_task_valid():
                return "NotEnoughPodsOfTask: not enough pods of each task for gang-scheduling"
            vtn = job.valid_task_num()
            if vtn < job.min_available:
                return (f"NotEnoughTasks: not enough valid tasks for gang-scheduling, "
                        f"valid: {vtn}, min: {job.min_available}")
            return None

        ssn.add("job_valid", self.name, valid)

        def victims(actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            occupied: dict[str, int] = {}
            chosen = []
            for t in candidates:
                job = t.job
                if job is None:
                    continue
                if job.uid not in occupied:
                    occupied[job.uid] = job.ready_task_num()
                if occupied[job.uid] > job.min_available:
                    occupied[job.uid] -= 1
                    chosen.append(t)
            return chosen, PERMIT

        ssn.add("preemptable", self.name, victims)
        ssn.add("reclaimable", self.name, victims)

        def job_order(left: JobInfo, right: JobInfo) -> int:
            lr, rr = left.is_ready(), right.is_ready()
            if lr == rr:
                return 0
            return 1 if lr else -1

        ssn.add("job_order", self.name, job_order)
        ssn.add("job_ready", self.name, lambda job: job.check_task_ready() and job.is_ready())
        ssn.add("job_pipelined", self.name,
                lambda job: PERMIT if job.check_task_pipelined() and job.is_pipelined() else REJECT)
        ssn.add("job_starving", self.name, lambda job: job.is_starving())

    def on_session_close(self, ssn: Session) -> None:
        """Say why a job's gang could not be placed (Volcano's PodGroup Unschedulable condition)."""
        for job in ssn.reportable():  # what it says of the others would not be reported
            if not job.tasks or job.is_ready():
                continue
            schedulable = job.count(
                TaskStatus.ALLOCATED | TaskStatus.BINDING | TaskStatus.BOUND | TaskStatus.RUNNING
                | TaskStatus.SUCCEEDED | TaskStatus.PIPELINED
            )
            missing = job.min_available - schedulable
            if missing <= 0:
                continue
            job.unschedulable = True
            errors = "; ".join(sorted(set(job.fit_errors.values())))
            msg = f"{missing}/{len(job.tasks)} tasks in gang unschedulable"
            if errors:
                msg += f": {errors}"
            if not job.pending_reason:
                job.pending_reason = msg
