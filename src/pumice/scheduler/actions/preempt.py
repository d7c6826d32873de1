"""preempt: starving jobs take room from lower-priority work of their own queue (Volcano §1.9).

Two phases per queue: between jobs (a gang's evictions and pipelines are kept only if the whole
gang ends up pipelined), then between tasks of one job. The preemptor is pipelined onto the node
its victims free; it is bound in a later session, once they are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cmp_to_key

import numpy as np

from pumice.scheduler.framework.plugin import Action, register_action
from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.framework.victims import (
    fits_node,
    predicates_pass,
    select_victims,
    validate_victims,
    victim_order,
)
from pumice.scheduler.model import PREEMPTABLE_STATUS, JobInfo, QueueInfo, TaskInfo, TaskStatus

VictimFilter = Callable[[TaskInfo], bool]


def preemptor_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    """The job's pending tasks that wait for no scheduling gate, in task order."""
    tasks = [t for t in job.tasks.values()
             if t.status == TaskStatus.PENDING and not (t.pod.get("spec") or {}).get("schedulingGates")]
    return PriorityQueue(ssn.task_order_less, tasks)


def _base_filter(preemptor: TaskInfo, task: TaskInfo) -> bool:
    if not task.status & PREEMPTABLE_STATUS or not task.preemptable:
        return False
    # A best-effort pod may not preempt one that requests resources.
    return not (preemptor.best_effort and not task.best_effort)


def other_jobs_filter(ssn: Session, preemptor: TaskInfo) -> VictimFilter:
    pjob = preemptor.job
    return lambda t: (_base_filter(preemptor, t) and t.job is not None and t.job.uid in ssn.jobs
                      and pjob is not None and t.job.queue == pjob.queue and t.job is not pjob)


def same_job_filter(preemptor: TaskInfo) -> VictimFilter:
    return lambda t: _base_filter(preemptor, t) and t.job is preemptor.job


@register_action
class PreemptAction(Action):
    name = "preempt"

    def execute(self, ssn: Session) -> None:
        # ``enableTopologyAwarePreemption`` (kube-scheduler-like candidate search) is not
        # implemented: the normal per-node preemption below is used whatever it says.
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        under_request: list[JobInfo] = []
        queues: dict[str, QueueInfo] = {}
        for job in ssn.jobs.values():
            if job.is_pending() or ssn.job_valid(job):
                continue
            queue = ssn.queue_of(job)
            if queue is None:
                continue
            queues.setdefault(queue.name, queue)
            # Volcano skips jobs with a network topology here (issue #4374).
            if job.network_topology or not ssn.job_starving(job):
                continue
            preemptors.setdefault(queue.name, PriorityQueue(ssn.job_order_less)).push(job)
            under_request.append(job)
            tasks[job.uid] = preemptor_tasks(ssn, job)

        # Volcano walks a Go map here (random order); queue order makes it deterministic.
        for queue in sorted(queues.values(), key=_queue_key(ssn)):
            self._between_jobs(ssn, preemptors.get(queue.name), tasks)
            self._within_jobs(ssn, under_request)

    def _between_jobs(self, ssn: Session, jobs: PriorityQueue[JobInfo] | None,
                      tasks: dict[str, PriorityQueue[TaskInfo]]) -> None:
        while jobs is not None and not jobs.empty():
            job = jobs.pop()
            stmt = Statement(ssn)
            assigned = False
            while ssn.job_starving(job) and not tasks[job.uid].empty():
                preemptor = tasks[job.uid].pop()
                assigned = preempt(ssn, stmt, preemptor, other_jobs_filter(ssn, preemptor))
            if not ssn.job_pipelined(job):
                stmt.discard()
                continue
            stmt.commit()
            if assigned:
                jobs.push(job)

    def _within_jobs(self, ssn: Session, under_request: list[JobInfo]) -> None:
        for job in under_request:
            queue = preemptor_tasks(ssn, job)
            while not queue.empty():
                preemptor = queue.pop()
                stmt = Statement(ssn)
                assigned = preempt(ssn, stmt, preemptor, same_job_filter(preemptor))
                stmt.commit()
                if not assigned:
                    break


def _queue_key(ssn: Session) -> Callable[[QueueInfo], object]:
    def cmp(a: QueueInfo, b: QueueInfo) -> int:
        return -1 if ssn.queue_order_less(a, b) else (1 if ssn.queue_order_less(b, a) else 0)

    return cmp_to_key(cmp)


def eligible(ssn: Session, preemptor: TaskInfo) -> bool:
    """``taskEligibleToPreempt``: preemptionPolicy Never, or a nominated node it already fits."""
    if preemptor.preemption_never:
        return False
    if preemptor.nominated_node:
        j = ssn.nodes.index.get(preemptor.nominated_node)
        if j is None:
            return False
        if len(ssn.placer.feasible(preemptor, np.array([j]))):
            return False
    return True


def preempt(ssn: Session, stmt: Statement, preemptor: TaskInfo, victims_filter: VictimFilter) -> bool:
    """Volcano's ``normalPreempt`` for one task: evict on the best node where victims make room."""
    job = preemptor.job
    if job is None or not eligible(ssn, preemptor) or ssn.pre_predicate(preemptor):
        return False
    queue = ssn.queue_of(job)
    if queue is None:
        return False
    placer = ssn.placer
    nodes = placer.feasible_ignoring_resources(preemptor)
    scores = placer.preempt_scores(preemptor, nodes)
    # best score first; equal scores in node order (Volcano: random)
    order = nodes[np.lexsort((nodes, -scores))] if len(nodes) else nodes
    for node in order.tolist():

        def fits(node: int = node) -> bool:
            return (ssn.allocatable(queue, preemptor) and fits_node(ssn, preemptor, node)
                    and predicates_pass(ssn, preemptor, node))

        candidates = [t for t in ssn.nodes.tasks[node].values() if victims_filter(t)]
        victims = ssn.preemptable(preemptor, candidates)
        if not validate_victims(ssn, preemptor, node, victims):
            continue
        chosen = select_victims(ssn, preemptor, node, victim_order(ssn, victims, preemptor), fits)
        if chosen is None:
            continue
        node_stmt = Statement(ssn)
        for victim in chosen:
            node_stmt.evict(victim, f"preempted by {preemptor.key}")
        if not fits():
            node_stmt.discard()
            continue
        node_stmt.pipeline(preemptor, node)
        stmt.merge(node_stmt)
        return True
    return False
