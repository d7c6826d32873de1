"""Victims of preempt and reclaim: their order, their validation, and the set actually evicted.

Volcano pops victims from ``BuildVictimsPriorityQueue`` (reverse job/task order, other queues by
``VictimQueueOrderFn``) until the preemptor fits, which can evict many small pods where one large
one would do. :func:`select_victims` keeps Volcano's answer when it is already the smallest and
otherwise takes the smallest set, preferring victims Volcano would have taken first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cmp_to_key
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import TaskInfo, TaskStatus
from pumice.scheduler.resources import EPS, less_equal

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session

#: Subsets tried per node when looking for a smaller victim set than Volcano's greedy one.
SEARCH_BUDGET = 4096
#: Subsets whose placement (queue quota included) is simulated with real evictions, per node.
SIMULATION_BUDGET = 64


def victim_less(ssn: Session, preemptor: TaskInfo) -> Callable[[TaskInfo, TaskInfo], bool]:
    """Volcano's ``BuildVictimsPriorityQueue`` order: True if ``left`` is evicted before ``right``."""

    def less(left: TaskInfo, right: TaskInfo) -> bool:
        lj, rj = left.job, right.job
        if lj is rj:
            return not ssn.task_order_less(left, right)
        pj = preemptor.job
        if lj is not None and rj is not None and pj is not None and lj.queue != rj.queue:
            lq, rq = ssn.queues.get(lj.queue), ssn.queues.get(rj.queue)
            if lq is not None and rq is not None:
                return ssn.victim_queue_order_less(lq, rq, preemptor)
        if lj is None or rj is None:
            return False
        return not ssn.job_order_less(lj, rj)

    return less


def victim_order(ssn: Session, victims: Sequence[TaskInfo], preemptor: TaskInfo) -> list[TaskInfo]:
    """Victims in the order Volcano pops them (stable for equal victims)."""
    less = victim_less(ssn, preemptor)

    def cmp(a: TaskInfo, b: TaskInfo) -> int:
        if less(a, b) and not less(b, a):
            return -1
        if less(b, a) and not less(a, b):
            return 1
        return 0

    return sorted(victims, key=cmp_to_key(cmp))


def pod_room(ssn: Session, node: int) -> float:
    """Pod slots of ``node`` once its releasing pods are gone and its pipelined ones placed.

    Volcano counts ``pods`` as a resource of every task (``InitResreq`` asks for one), so a node
    at its pod limit only fits a preemptor after a victim leaves; pumice keeps pod counts apart.
    """
    nodes = ssn.nodes
    releasing = sum(1 for t in nodes.tasks[node].values() if t.status == TaskStatus.RELEASING)
    return float(nodes.max_tasks[node] - nodes.task_count[node] + releasing)


def fits_node(ssn: Session, task: TaskInfo, node: int) -> bool:
    """``task.InitResreq <= node.FutureIdle()``, the pod slot included."""
    return pod_room(ssn, node) > 1 - EPS and less_equal(task.init_resreq, ssn.nodes.future_idle_at(node))


def predicates_pass(ssn: Session, task: TaskInfo, node: int, *, releasing_gone: bool = True) -> bool:
    """The predicates' usage checks (pod limit, host ports, pod affinity) on ``node``; by default
    as they will stand once its releasing pods are gone: Volcano drops an evicted pod from the
    predicates' view of the node at once."""
    nodes = ssn.nodes
    placed = nodes.tasks[node]
    leaving = [t for t in placed.values() if t.status == TaskStatus.RELEASING] if releasing_gone else []
    if leaving:
        nodes.tasks[node] = {uid: t for uid, t in placed.items() if t.status != TaskStatus.RELEASING}
        nodes.task_count[node] -= len(leaving)
    try:
        view = NodeView.of(nodes, np.array([node]))
        return all(bool(passed.all()) for _, f in ssn.placer.filters for _, passed in f.dynamic_checks(task, view))
    finally:
        if leaving:
            nodes.tasks[node] = placed
            nodes.task_count[node] += len(leaving)


def could_make_room(ssn: Session, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
    """The nodes of ``idx`` where evicting everything could make room for ``task``: a necessary
    condition of :func:`validate_victims`, checked column-wise before looking at any pod."""
    nodes = ssn.nodes
    room = nodes.future_idle()[:, idx] + nodes.used[:, idx]
    ok = np.all(task.init_resreq[:, None] - room < EPS, axis=0) & (nodes.task_count[idx] > 0)
    out: np.ndarray = idx[ok]
    return out


def validate_victims(ssn: Session, preemptor: TaskInfo, node: int, victims: Sequence[TaskInfo]) -> bool:
    """Volcano's ``ValidateVictims``: some victims, and all of them together free enough room."""
    if not victims:
        return False
    room = ssn.nodes.future_idle_at(node) + np.sum([v.resreq for v in victims], axis=0)
    return pod_room(ssn, node) + len(victims) > 1 - EPS and less_equal(preemptor.init_resreq, room)


def select_victims(ssn: Session, preemptor: TaskInfo, node: int, ordered: list[TaskInfo],
                   fits: Callable[[], bool], *, check_first: bool = True) -> list[TaskInfo] | None:
    """The victims to evict on ``node`` so that ``fits()`` holds, or None if none will do.

    Volcano's answer is the shortest prefix of ``ordered`` after which ``fits()`` holds
    (``check_first=False``: reclaim evicts at least one victim before checking, as Volcano does).
    A smaller set is searched among all subsets, in the order of ``ordered``: resources first
    (cheap), then a real dry run of the evictions for ``fits()``, which may involve queue quotas.
    """
    greedy = _greedy(ssn, ordered, fits, check_first)
    if greedy is None or len(greedy) <= 1:
        return greedy
    need = preemptor.init_resreq - ssn.nodes.future_idle_at(node)
    need_pods = 1 - pod_room(ssn, node)
    sizes = [v.resreq for v in ordered]
    # per dimension, the most any ``size`` victims can free: sizes below it are skipped at once
    best = np.cumsum(-np.sort(-np.array(sizes), axis=0), axis=0)
    tried = simulated = 0
    for size in range(1, len(greedy)):
        if size <= need_pods - EPS or not less_equal(need, best[size - 1]):
            continue
        for combo in combinations(range(len(ordered)), size):
            tried += 1
            if tried > SEARCH_BUDGET or simulated >= SIMULATION_BUDGET:
                return greedy
            freed = np.sum([sizes[i] for i in combo], axis=0)
            if not less_equal(need, freed):
                continue
            simulated += 1
            chosen = [ordered[i] for i in combo]
            if _dry_run(ssn, chosen, fits):
                return chosen
    return greedy


def _greedy(ssn: Session, ordered: list[TaskInfo], fits: Callable[[], bool],
            check_first: bool) -> list[TaskInfo] | None:
    trial = Statement(ssn)
    taken: list[TaskInfo] = []
    try:
        for victim in ordered:
            if (check_first or taken) and fits():
                break
            _trial_evict(trial, victim)
            taken.append(victim)
        ok = fits()
    finally:
        trial.discard()
    return taken if ok else None


def _dry_run(ssn: Session, victims: list[TaskInfo], fits: Callable[[], bool]) -> bool:
    trial = Statement(ssn)
    try:
        for victim in victims:
            _trial_evict(trial, victim)
        return fits()
    finally:
        trial.discard()


def _trial_evict(trial: Statement, victim: TaskInfo) -> None:
    """Evict for a dry run only: the victim keeps the reason people may read."""
    reason = victim.last_reason
    trial.evict(victim, reason)
