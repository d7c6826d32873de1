"""Gang-aware eviction (Volcano v1.15 ``gangpreempt`` / ``gangreclaim``, ``actions/utils``): a starving
gang takes room for *all* its pending tasks inside one HyperNode domain, evicting victims a job's
bundle at a time.

For each starving job (queue order, then job order) the candidate domains are the HyperNode gradients
for eviction (widest first, at most ``maxDomains``; the cluster top as a fallback unless the job's
topology is hard). In a domain the running tasks that may go are grouped per victim job into a *safe*
bundle (tasks whose eviction keeps the victim job at its minAvailable, per role too) and a *whole*
bundle (the rest of its tasks in the domain: evicting it breaks that gang). Bundles are sorted (safe
first; victim job order for preempt, victim queue order for reclaim; then the best ratio of what the
bundle frees where needed to what it disrupts), filtered by the UnifiedEvictableFns (a whole bundle
survives only whole), and taken one by one until the domain's idle and releasing resources plus the
victims cover the job's need; then the whole gang's placement is simulated on the domain's nodes with
the victims gone. Evictions and pipelines are committed only if the job ends pipelined.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cmp_to_key

import numpy as np

from pumice.scheduler.framework.points import GANG_PREEMPT, EvictionContext
from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.model import (
    ALLOCATED_STATUS,
    PREEMPTABLE_STATUS,
    JobInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from pumice.scheduler.resources import less_equal
from pumice.scheduler.topology.context import PURPOSE_EVICT, SearchRequest, topology_of
from pumice.scheduler.topology.tree import CLUSTER_TOP, HyperNodeInfo
from pumice.scheduler.topology.worksheet import sort_tasks

PREEMPTABLE_KEY = "volcano.sh/preemptable"
DEFAULT_MAX_DOMAINS = 8
SAFE, WHOLE = 0, 1


@dataclass(eq=False)
class Bundle:
    kind: int
    job: JobInfo
    tasks: list[TaskInfo]
    local: np.ndarray
    #: What evicting it disrupts cluster-wide: its tasks (safe) or the whole job's (whole).
    global_: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass(frozen=True)
class GangEvictionOptions:
    max_domains: int = DEFAULT_MAX_DOMAINS
    allow_whole_bundle: bool = True


def _sum(ssn: Session, tasks: list[TaskInfo], init: bool = False) -> np.ndarray:
    out = ssn.space.zeros()
    for t in tasks:
        out = out + (t.init_resreq if init else t.resreq)
    return out


def job_bundles(ssn: Session, job: JobInfo, local: list[TaskInfo]) -> list[Bundle]:
    """Volcano's ``CreateJobBundles``: a victim job's tasks in the domain split into safe and whole."""
    local = sorted(local, key=lambda t: (t.priority, t.uid))
    surplus = job.ready_task_num() - job.min_available
    if surplus < 0:  # already broken: nothing of it keeps a gang
        return [Bundle(SAFE, job, local, _sum(ssn, local), ssn.space.zeros())]
    role_surplus: dict[str, int] = {}
    enforce_roles = bool(job.min_task_member) and job.min_available >= job.task_min_available_total()
    if enforce_roles:
        ready: dict[str, int] = {}
        for t in job.tasks.values():
            if t.status & (ALLOCATED_STATUS | TaskStatus.SUCCEEDED) or (
                    t.status == TaskStatus.PENDING and t.best_effort):
                ready[t.role] = ready.get(t.role, 0) + 1
        role_surplus = {role: ready.get(role, 0) - need for role, need in job.min_task_member.items()}
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for t in local:
        has_min = enforce_roles and t.role in role_surplus
        role_safe = role_surplus[t.role] > 0 if has_min else True
        if surplus > 0 and role_safe:
            safe.append(t)
            surplus -= 1
            if has_min:
                role_surplus[t.role] -= 1
        else:
            whole.append(t)
    out = []
    if safe:
        out.append(Bundle(SAFE, job, safe, _sum(ssn, safe), ssn.space.zeros()))
    if whole:
        out.append(Bundle(WHOLE, job, whole, _sum(ssn, whole), _sum(ssn, list(job.tasks.values()))))
    return out


def roi(bundle: Bundle, need: np.ndarray) -> float:
    """What the bundle frees where the job needs it (capped at the need) over what it disrupts."""
    dims = need > 0
    if not dims.any():
        return math.inf
    local = float((np.minimum(bundle.local[dims], need[dims]) / need[dims]).sum())
    glob = float((bundle.global_[dims] / need[dims]).sum())
    return math.inf if glob == 0 else local / glob


def sort_bundles(bundles: list[Bundle], need: np.ndarray,
                 victim_less: Callable[[Bundle, Bundle], bool]) -> list[Bundle]:
    """Safe before whole, then the victim order (job or queue), then ROI, then job and task UIDs."""

    def cmp(a: Bundle, b: Bundle) -> int:
        if a.kind != b.kind:
            return -1 if a.kind < b.kind else 1
        if a.job is not b.job:
            ab, ba = victim_less(a, b), victim_less(b, a)
            if ab != ba:
                return -1 if ab else 1
        ra, rb = roi(a, need), roi(b, need)
        if ra != rb:
            return -1 if ra > rb else 1
        ka = (a.job.uid, a.tasks[0].uid if a.tasks else "", len(a.tasks))
        kb = (b.job.uid, b.tasks[0].uid if b.tasks else "", len(b.tasks))
        return -1 if ka < kb else 1 if ka > kb else 0

    return sorted(bundles, key=cmp_to_key(cmp))


def pending_tasks(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """The job's pending tasks that ask for something and wait for no scheduling gate, in task order."""
    tasks = [t for t in job.tasks.values() if t.status == TaskStatus.PENDING and not t.best_effort
             and not (t.pod.get("spec") or {}).get("schedulingGates")]
    return sort_tasks(ssn, tasks)


def preemptable_for_gang_eviction(job: JobInfo) -> bool:
    """Volcano's ``IsJobPreemptableForGangEviction``: the PodGroup's own preemptable mark, if any."""
    meta = job.pod_group.get("metadata") or {}
    if PREEMPTABLE_KEY in (meta.get("annotations") or {}) or PREEMPTABLE_KEY in (meta.get("labels") or {}):
        return job.preemptable
    return True


def candidate_domains(ssn: Session, job: JobInfo, max_domains: int) -> list[HyperNodeInfo]:
    """HyperNode gradients for eviction, widest first, at most ``max_domains``; the cluster top when
    none, unless the job's topology is hard."""
    ctx = topology_of(ssn)
    tree = ctx.tree
    root = tree.top
    jt = ctx.job(job)
    topology = jt.topology
    request = SearchRequest(topology, jt.allocated_hypernode, jt.min_resources())
    seen: set[str] = set()
    out: list[HyperNodeInfo] = []
    for gradient in ssn.hypernode_gradients(request, root, PURPOSE_EVICT):
        for hn in gradient:
            if hn.name in seen:
                continue
            seen.add(hn.name)
            out.append(hn)
            if len(out) >= max_domains:
                return out
    if not out and not (topology is not None and topology.hard):
        out.append(root)
    return out


class GangEviction:
    """One run of gangpreempt (``kind`` GANG_PREEMPT) or gangreclaim."""

    def __init__(self, ssn: Session, kind: str, options: GangEvictionOptions) -> None:
        self.ssn = ssn
        self.kind = kind
        self.options = options
        self._index()

    def _index(self) -> None:
        """The tasks that may ever be victims in this run, as columns (node, queue, job priority), so that
        a preemptor's candidates in a domain are a few masks, not a walk over every node's tasks."""
        ssn = self.ssn
        preempt = self.kind == GANG_PREEMPT
        tasks: list[TaskInfo] = []
        queue_codes: dict[str, int] = {}
        nodes: list[int] = []
        queues: list[int] = []
        priorities: list[int] = []
        reclaimable: list[bool] = []
        for j, placed in enumerate(ssn.nodes.tasks):
            for t in placed.values():
                if not (t.status & PREEMPTABLE_STATUS if preempt else t.status == TaskStatus.RUNNING):
                    continue
                victim = t.job
                if not t.preemptable or victim is None or victim.uid not in ssn.jobs:
                    continue
                if not preemptable_for_gang_eviction(victim):
                    continue
                q = ssn.queues.get(victim.queue)
                tasks.append(t)
                nodes.append(j)
                queues.append(queue_codes.setdefault(victim.queue, len(queue_codes)))
                priorities.append(victim.priority)
                reclaimable.append(q is not None and q.reclaimable)
        self.cand_tasks = tasks
        self.queue_codes = queue_codes
        self.cand_node = np.array(nodes, dtype=np.int64)
        self.cand_queue = np.array(queues, dtype=np.int64)
        self.cand_priority = np.array(priorities, dtype=np.int64)
        self.cand_reclaimable = np.array(reclaimable, dtype=bool)

    def _candidates(self, job: JobInfo) -> np.ndarray:
        """Mask over the indexed tasks: those ``job`` may evict, wherever they run."""
        code = self.queue_codes.get(job.queue, -1)
        if self.kind == GANG_PREEMPT:
            out: np.ndarray = (self.cand_queue == code) & (self.cand_priority < job.priority)
        else:
            out = (self.cand_queue != code) & self.cand_reclaimable
        return out

    def execute(self) -> None:
        ssn = self.ssn
        if not self.cand_tasks:
            return  # nothing may be evicted: no starving job can gain anything
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_less)
        seen: set[str] = set()
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
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
        while not queues.empty():
            queue = queues.pop()
            if self.kind != GANG_PREEMPT and ssn.overused(queue):
                continue
            jobs = preemptors.get(queue.name)
            while jobs is not None and not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                self.evict_for_job(stmt, queue, job)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()

    def evict_for_job(self, stmt: Statement, queue: QueueInfo, job: JobInfo) -> bool:
        ssn = self.ssn
        candidates = self._candidates(job)
        if not candidates.any():
            return False
        pending = pending_tasks(ssn, job)
        if not pending:
            return False
        if self.kind != GANG_PREEMPT and not ssn.preemptive(queue, pending[0]):
            return False
        need = _sum(ssn, pending, init=True)
        nodes = ssn.nodes
        for domain in candidate_domains(ssn, job, self.options.max_domains):
            members = np.arange(len(nodes)) if domain.name == CLUSTER_TOP else domain.nodes
            if len(members) == 0:
                continue
            bundles = self.domain_bundles(job, pending, need, domain, members, candidates)
            if not bundles:
                continue
            idle = (nodes.allocatable[:, members] - nodes.used[:, members] + nodes.releasing[:, members]).sum(axis=1)
            victims: list[TaskInfo] = []
            for bundle in bundles:
                victims = victims + bundle.tasks
                if not less_equal(need, idle + _sum(ssn, victims)):
                    continue
                if self.simulate(stmt, queue, job, pending, members, victims):
                    return True
        return False

    def domain_bundles(self, job: JobInfo, pending: list[TaskInfo], need: np.ndarray, domain: HyperNodeInfo,
                       members: np.ndarray, candidates: np.ndarray) -> list[Bundle]:
        ssn = self.ssn
        preempt = self.kind == GANG_PREEMPT
        inside = np.zeros(len(ssn.nodes), dtype=bool)
        inside[members] = True
        by_job: dict[str, list[TaskInfo]] = {}
        for i in np.flatnonzero(candidates & inside[self.cand_node]).tolist():
            t = self.cand_tasks[i]
            # evicted or placed anew earlier in this run: the index is from its start
            if not (t.status & PREEMPTABLE_STATUS if preempt else t.status == TaskStatus.RUNNING):
                continue
            if t.job is None or t.job is job:
                continue
            by_job.setdefault(t.job.uid, []).append(t)
        bundles = [b for uid, tasks in by_job.items() for b in job_bundles(ssn, ssn.jobs[uid], tasks)]
        if not bundles:
            return []
        less = self._victim_less(pending[0])
        bundles = sort_bundles(bundles, need, less)
        ctx = EvictionContext(self.kind, job, domain.name)
        allowed = {t.uid for t in ssn.unified_evictable(ctx, [t for b in bundles for t in b.tasks])}
        if not allowed:
            return []
        valid = []
        for b in bundles:
            kept = [t for t in b.tasks if t.uid in allowed]
            if b.kind == WHOLE:
                if len(kept) == len(b.tasks):
                    valid.append(b)
            elif kept:
                valid.append(Bundle(SAFE, b.job, kept, _sum(ssn, kept), b.global_))
        valid = sort_bundles(valid, need, less)
        return [b for b in valid if b.kind == SAFE or self.options.allow_whole_bundle]

    def _victim_less(self, preemptor: TaskInfo) -> Callable[[Bundle, Bundle], bool]:
        ssn = self.ssn
        if self.kind == GANG_PREEMPT:
            return lambda a, b: not ssn.job_order_less(a.job, b.job)

        def queue_less(a: Bundle, b: Bundle) -> bool:
            qa, qb = ssn.queues.get(a.job.queue), ssn.queues.get(b.job.queue)
            if qa is None or qb is None or qa is qb:
                return False
            return ssn.victim_queue_order_less(qa, qb, preemptor)

        return queue_less

    def simulate(self, stmt: Statement, queue: QueueInfo, job: JobInfo, pending: list[TaskInfo],
                 members: np.ndarray, victims: list[TaskInfo]) -> bool:
        """Evict ``victims`` and pipeline every pending task of the gang on the domain's nodes (Volcano's
        ``BuildNominationPlanInDomain``); kept in ``stmt`` if the job ends pipelined, else undone."""
        ssn = self.ssn
        trial = Statement(ssn)
        for victim in victims:
            trial.evict(victim, f"{self.kind}: room for gang {job.uid}")
        was_ready = ssn.job_ready(job)
        subset = members if len(members) < len(ssn.nodes) else None
        placer = ssn.placer
        for task in pending:
            if not ssn.allocatable(queue, task) or ssn.pre_predicate(task):
                trial.discard()
                return False
            choice = placer.best_node(task, subset=subset)
            if choice is None:
                trial.discard()
                return False
            trial.pipeline(task, choice.node)
            if was_ready and ssn.job_pipelined(job):
                break
        if not ssn.job_pipelined(job):
            trial.discard()
            return False
        stmt.merge(trial)
        return True
