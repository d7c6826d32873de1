"""reclaim: a starving queue takes back what other queues borrowed beyond their share (§1.9).

Queues are visited in queue order (an overused one is skipped); a queue drains all its starving
jobs. A job's evictions and pipelines are committed only if the job ends up pipelined.
"""

from __future__ import annotations

from pumice.scheduler.actions.preempt import preemptor_tasks
from pumice.scheduler.framework.plugin import Action
from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.framework.victims import (
    could_make_room,
    fits_node,
    select_victims,
    validate_victims,
    victim_order,
)
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo, TaskStatus


class ReclaimAction(Action):
    name = "reclaim"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_less)
        seen: set[str] = set()
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending() or ssn.job_valid(job):
                continue
            queue = ssn.queue_of(job)
            if queue is None:
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if ssn.job_starving(job):
                preemptors.setdefault(queue.name, PriorityQueue(ssn.job_order_less)).push(job)
                tasks[job.uid] = preemptor_tasks(ssn, job)

        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = preemptors.get(queue.name)
            while jobs is not None and not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                pending = tasks[job.uid]
                while ssn.job_starving(job) and not pending.empty():
                    task = pending.pop()
                    if task.preemption_never or not ssn.preemptive(queue, task):
                        continue
                    if ssn.pre_predicate(task):
                        continue
                    reclaim_for_task(ssn, stmt, task, job)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()
                if not jobs.empty():
                    queues.push(queue)


def reclaimees_on(ssn: Session, node: int, job: JobInfo) -> list[TaskInfo]:
    """Running, preemptable tasks on ``node`` of jobs in other queues that allow reclaiming."""
    out = []
    for t in ssn.nodes.tasks[node].values():
        if t.status != TaskStatus.RUNNING or not t.preemptable:
            continue
        other = t.job
        if other is None or other.uid not in ssn.jobs or other.queue == job.queue:
            continue
        q = ssn.queues.get(other.queue)
        if q is not None and q.reclaimable:
            out.append(t)
    return out


def reclaim_for_task(ssn: Session, stmt: Statement, task: TaskInfo, job: JobInfo) -> bool:
    """Evict reclaimable victims on the first node (in node order) where they make room."""
    for node in could_make_room(ssn, task, ssn.placer.feasible_ignoring_resources(task)).tolist():
        reclaimees = reclaimees_on(ssn, node, job)
        if not reclaimees:
            continue
        victims = ssn.reclaimable(task, reclaimees)
        if not validate_victims(ssn, task, node, victims):
            continue

        def fits(node: int = node) -> bool:
            return fits_node(ssn, task, node)

        ordered = victim_order(ssn, victims, task)
        chosen = select_victims(ssn, task, node, ordered, fits, check_first=False)
        if chosen is None:
            continue
        node_stmt = Statement(ssn)
        for victim in chosen:
            node_stmt.evict(victim, f"reclaimed by {task.key} (queue {job.queue})")
        if not fits():
            node_stmt.discard()
            continue
        node_stmt.pipeline(task, node)
        stmt.merge(node_stmt)
        return True
    return False
