"""preempt: starving jobs take room from lower-priority work of their own queue (Volcano §1.9).

Two phases per queue: between jobs (a gang's evictions and pipelines are kept only if the whole
gang ends up pipelined), then between tasks of one job. The preemptor is pipelined onto the node
its victims free; it is bound in a later session, once they are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Action
from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.framework.victims import (
    could_make_room,
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


@dataclass(frozen=True)
class PreemptOptions:
    """The action's ``configurations`` arguments (Volcano's names and defaults)."""

    #: Volcano then runs a kube-scheduler-like candidate search; here: the same per-node victim
    #: choice, but among up to ``candidates(n)`` viable nodes the one whose victims matter least.
    topology_aware: bool = False
    min_candidate_percentage: int = 10
    min_candidate_absolute: int = 1
    max_candidate_absolute: int = 100

    @classmethod
    def parse(cls, args: Arguments) -> PreemptOptions:
        return cls(
            topology_aware=args.get_bool("enableTopologyAwarePreemption", False),
            min_candidate_percentage=args.get_int("minCandidateNodesPercentage", 10),
            min_candidate_absolute=args.get_int("minCandidateNodesAbsolute", 1),
            max_candidate_absolute=args.get_int("maxCandidateNodesAbsolute", 100),
        )

    def candidates(self, nodes: int) -> int:
        """How many viable nodes to compare (kube-scheduler's ``GetOffsetAndNumCandidates``)."""
        if not self.topology_aware:
            return 1
        n = nodes * self.min_candidate_percentage // 100
        return max(1, min(max(n, self.min_candidate_absolute), self.max_candidate_absolute))


class PreemptAction(Action):
    name = "preempt"

    def execute(self, ssn: Session) -> None:
        self.options = PreemptOptions.parse(ssn.conf.action_args(self.name))
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
                assigned = preempt(ssn, stmt, preemptor, other_jobs_filter(ssn, preemptor), self.options)
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
                assigned = preempt(ssn, stmt, preemptor, same_job_filter(preemptor), self.options)
                stmt.commit()
                if not assigned:
                    break


def _queue_key(ssn: Session) -> Callable[[QueueInfo], Any]:
    def cmp(a: QueueInfo, b: QueueInfo) -> int:
        return -1 if ssn.queue_order_less(a, b) else (1 if ssn.queue_order_less(b, a) else 0)

    return cmp_to_key(cmp)


def eligible(ssn: Session, preemptor: TaskInfo) -> bool:
    """``taskEligibleToPreempt``: not with preemptionPolicy Never; with a nominated node (an
    earlier preemption), only if the predicates now fail there in an unresolvable way, or fail
    while no lower-priority pod is still leaving it."""
    if preemptor.preemption_never:
        return False
    if not preemptor.nominated_node:
        return True
    j = ssn.nodes.index.get(preemptor.nominated_node)
    if j is None:
        return False
    if not ssn.placer.static(preemptor).mask[j]:
        return True
    if predicates_pass(ssn, preemptor, j, releasing_gone=False):
        return False
    return not any(t.status == TaskStatus.RELEASING and t.priority < preemptor.priority
                   for t in ssn.nodes.tasks[j].values())


def preempt(ssn: Session, stmt: Statement, preemptor: TaskInfo, victims_filter: VictimFilter,
            options: PreemptOptions | None = None) -> bool:
    """Volcano's ``normalPreempt`` for one task: evict on the best-scored node where victims make
    room (with ``enableTopologyAwarePreemption``: the best of several such nodes)."""
    job = preemptor.job
    if job is None:
        return False
    # Queue plugins note quota misses as fit errors; allocate reads those as "this role fits
    # nowhere this session", so the dry runs here must not leave any behind.
    had_error = job.fit_errors.get(preemptor.uid)
    try:
        return _preempt(ssn, stmt, preemptor, victims_filter, options or PreemptOptions())
    finally:
        if had_error is None:
            job.fit_errors.pop(preemptor.uid, None)
        else:
            job.fit_errors[preemptor.uid] = had_error


def _preempt(ssn: Session, stmt: Statement, preemptor: TaskInfo, victims_filter: VictimFilter,
             options: PreemptOptions) -> bool:
    job = preemptor.job
    if job is None or not eligible(ssn, preemptor) or ssn.pre_predicate(preemptor):
        return False
    queue = ssn.queue_of(job)
    if queue is None:
        return False
    ssn.preemption_attempts += 1
    placer = ssn.placer
    nodes = could_make_room(ssn, preemptor, placer.feasible_ignoring_resources(preemptor))
    scores = placer.preempt_scores(preemptor, nodes)
    # best score first; equal scores in node order (Volcano: random)
    order = nodes[np.lexsort((nodes, -scores))] if len(nodes) else nodes
    wanted = options.candidates(len(order))

    def fits_on(node: int) -> Callable[[], bool]:
        return lambda: (ssn.allocatable(queue, preemptor) and fits_node(ssn, preemptor, node)
                        and predicates_pass(ssn, preemptor, node))

    plans: list[tuple[int, list[TaskInfo]]] = []
    for node in order.tolist():
        candidates = [t for t in ssn.nodes.tasks[node].values() if victims_filter(t)]
        victims = ssn.preemptable(preemptor, candidates)
        if not validate_victims(ssn, preemptor, node, victims):
            continue
        chosen = select_victims(ssn, preemptor, node, victim_order(ssn, victims, preemptor), fits_on(node))
        if chosen is not None:
            plans.append((node, chosen))
            if len(plans) >= wanted:
                break
    for node, chosen in sorted(plans, key=_plan_cost) if len(plans) > 1 else plans:
        node_stmt = Statement(ssn)
        for victim in chosen:
            node_stmt.evict(victim, f"preempted by {preemptor.key}")
        if not fits_on(node)():
            node_stmt.discard()
            continue
        node_stmt.pipeline(preemptor, node)
        stmt.merge(node_stmt)
        ssn.preemption_victims = len(chosen)
        return True
    return False


def _plan_cost(plan: tuple[int, list[TaskInfo]]) -> tuple[int, int, int]:
    """kube-scheduler's ``pickOneNodeForPreemption``: the lowest highest-priority victim, then the
    fewest victims, then the lowest sum of priorities; ties keep node order (sort is stable)."""
    victims = plan[1]
    if not victims:
        return (-(2**31), 0, 0)
    return (max(v.priority for v in victims), len(victims), sum(v.priority for v in victims))
