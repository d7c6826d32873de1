"""gang: all-or-nothing — a job (and a SubJob) is valid, ready and pipelined only with its minimum
of tasks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import (
    JOB_ORDER,
    JOB_PIPELINED,
    JOB_READY,
    JOB_STARVING,
    JOB_VALID,
    PERMIT,
    PREEMPTABLE,
    RECLAIMABLE,
    REJECT,
    SUBJOB_ORDER,
    SUBJOB_PIPELINED,
    SUBJOB_READY,
    UNIFIED_EVICTABLE,
    EvictionContext,
)
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from pumice.scheduler.topology.subjobs import SubJob


def _not_ready_first(left_ready: bool, right_ready: bool) -> int:
    """Jobs (SubJobs) that are not ready yet go first."""
    if left_ready == right_ready:
        return 0
    return 1 if left_ready else -1


class GangPlugin(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(JOB_VALID, self.name, self.valid)
        ssn.add(PREEMPTABLE, self.name, self.victims)
        ssn.add(RECLAIMABLE, self.name, self.victims)
        ssn.add(UNIFIED_EVICTABLE, self.name, self.unified_evictable)
        ssn.add(JOB_ORDER, self.name, self.job_order)
        ssn.add(JOB_READY, self.name, self.ready)
        ssn.add(JOB_PIPELINED, self.name, self.pipelined)
        ssn.add(JOB_STARVING, self.name, self.starving)
        ssn.add(SUBJOB_ORDER, self.name, self.subjob_order)
        ssn.add(SUBJOB_READY, self.name, self.subjob_ready)
        ssn.add(SUBJOB_PIPELINED, self.name, self.subjob_pipelined)

    def valid(self, job: JobInfo) -> str | None:
        if not job.check_task_valid():
            return "NotEnoughPodsOfTask: not enough pods of each task for gang-scheduling"
        vtn = job.valid_task_num()
        if vtn < job.min_available:
            return (f"NotEnoughTasks: not enough valid tasks for gang-scheduling, "
                    f"valid: {vtn}, min: {job.min_available}")
        return None

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """The gang actions keep MinAvailable with their bundles (safe / whole): all may go."""
        return candidates, PERMIT

    def victims(self, actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Tasks a job can lose and stay ready (above its minAvailable)."""
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

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        return _not_ready_first(left.is_ready(), right.is_ready())

    def job_order_key(self, job: JobInfo) -> bool:
        return job.is_ready()  # False (not ready) first

    def ready(self, job: JobInfo) -> bool:
        return job.check_task_ready() and job.is_ready()

    def placements_to_ready(self, job: JobInfo) -> int | None:
        """``ReadyRun``: ``ready`` turns true after this many more placements."""
        return job.placements_to_ready()

    def pipelined(self, job: JobInfo) -> int:
        return PERMIT if job.check_task_pipelined() and job.is_pipelined() else REJECT

    def starving(self, job: JobInfo) -> bool:
        return job.is_starving()

    def subjob_order(self, left: SubJob, right: SubJob) -> int:
        return _not_ready_first(left.is_ready(), right.is_ready())

    def subjob_ready(self, subjob: SubJob) -> bool:
        return subjob.is_ready()

    def subjob_pipelined(self, subjob: SubJob) -> int:
        return PERMIT if subjob.is_pipelined() else REJECT

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
