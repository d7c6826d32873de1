"""allocate: place pending tasks, queue by queue and job by job, all-or-nothing per gang."""

from __future__ import annotations

from functools import cmp_to_key

from pumice.scheduler.framework.plugin import Action, register_action
from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from pumice.scheduler.topology import allocate_job_turn, uses_topology_path


class Worksheet:
    """A job's pending tasks in task order, and how many of each shape remain.

    Tasks are only ever taken from the front, so a sorted list serves as Volcano's task queue; pods
    usually arrive in index order, which the sort verifies in linear time.
    """

    def __init__(self, ssn: Session, tasks: list[TaskInfo]) -> None:
        self.tasks = sorted(tasks, key=cmp_to_key(ssn.task_order_cmp))
        self.next = 0
        self.shapes: dict[tuple, int] = {}
        for t in tasks:
            self.shapes[t.shape] = self.shapes.get(t.shape, 0) + 1

    def pop(self) -> TaskInfo:
        task = self.tasks[self.next]
        self.next += 1
        self.shapes[task.shape] -= 1
        return task

    def empty(self) -> bool:
        return self.next >= len(self.tasks)


def schedulable_tasks(job: JobInfo) -> list[TaskInfo]:
    """Pending tasks allocate considers: best-effort ones are left to backfill, gated ones wait."""
    out = []
    for t in job.tasks.values():
        if t.status != TaskStatus.PENDING or t.best_effort:
            continue
        if (t.pod.get("spec") or {}).get("schedulingGates"):
            continue
        out.append(t)
    return out


def allocate_tasks(ssn: Session, job: JobInfo, sheet: Worksheet, queue: QueueInfo) -> Statement | None:
    """Volcano's ``allocateResourcesForTasks``: place tasks until the gang is ready."""
    placer = ssn.placer
    stmt = Statement(ssn)
    while not sheet.empty():
        task = sheet.pop()
        if not ssn.allocatable(queue, task):
            continue
        if job.task_has_fit_errors(task):
            continue
        err = ssn.pre_predicate(task)
        if err:
            job.fit_errors[task.uid] = err
            if job.need_continue_allocating():
                continue
            break
        choice = placer.best_node(task, depth=sheet.shapes[task.shape] + 1)
        if choice is None:
            job.fit_errors[task.uid] = placer.explain(task)
            if job.need_continue_allocating():
                continue
            break
        if choice.fits_idle:
            stmt.allocate(task, choice.node)
        else:
            stmt.pipeline(task, choice.node)
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


@register_action
class AllocateAction(Action):
    name = "allocate"

    def execute(self, ssn: Session) -> None:
        enqueue_configured = "enqueue" in ssn.conf.actions
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_less)
        seen: set[str] = set()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        sheets: dict[str, Worksheet] = {}
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
            if queue is None:
                continue
            tasks = schedulable_tasks(job)
            if not tasks:
                continue
            sheets[job.uid] = Worksheet(ssn, tasks)
            jobs_by_queue.setdefault(queue.name, PriorityQueue(ssn.job_order_less)).push(job)
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
            if uses_topology_path(ssn, job):  # hard network topology or subGroupPolicy
                if allocate_job_turn(ssn, job, queue, sheets[job.uid]):
                    jobs.push(job)
                queues.push(queue)
                continue
            sheet = sheets[job.uid]
            stmt = allocate_tasks(ssn, job, sheet, queue)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                if not sheet.empty():
                    jobs.push(job)
            queues.push(queue)
