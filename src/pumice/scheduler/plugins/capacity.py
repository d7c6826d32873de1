"""capacity: per-dimension elastic queue quotas from ``spec.deserved`` (no weights), flat or as a
hierarchy of queues (``enableHierarchy``), Volcano §1.10 and §4.3.

``capability`` is the hard cap, ``deserved`` what a queue may keep when others reclaim, and
``guarantee`` is never reclaimed. In hierarchy mode only leaf queues hold jobs and every check also
applies to the queue's ancestors. Unlike Volcano, a job in a non-leaf queue (or a queue with an
unknown parent or a parent cycle) is rejected on its own, with a reason, instead of stopping every
queue of the session.
"""

from __future__ import annotations

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import (
    ALLOCATABLE,
    GANG_RECLAIM,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    PERMIT,
    PREEMPTIVE,
    QUEUE_ORDER,
    RECLAIMABLE,
    REJECT,
    UNIFIED_EVICTABLE,
    VICTIM_QUEUE_ORDER,
    EvictionContext,
)
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.victims import victim_order
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo
from pumice.scheduler.plugins.capacity_tree import ROOT, QueueAttr, Tree, build_flat, build_tree
from pumice.scheduler.resources import EPS, less_equal

ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"


def exceeds(amount: np.ndarray, limit: np.ndarray, req: np.ndarray) -> bool:
    """``!LessEqualWithDimensionAndResourcesName``: over the limit on a dimension ``req`` asks for."""
    return bool(np.any((req > 0) & (amount > limit)))


def relevant(left: np.ndarray, right: np.ndarray) -> bool:
    """``Intersection`` is not empty: a dimension both use."""
    return bool(np.any((left >= EPS) & (right >= EPS)))


def over_deserved(allocated: np.ndarray, attr: QueueAttr, req: np.ndarray) -> bool:
    """``GreaterPartlyWithRelevantDimensions``: above deserved on a dimension the victim uses and
    the deserved names (cpu/memory: set above zero; scalars: named, even as 0)."""
    named = attr.deserved_keys.copy()
    named[:2] = attr.deserved[:2] >= EPS
    return bool(np.any((req > 0) & named & (allocated > attr.deserved)))


def partly_within(used: np.ndarray, deserved: np.ndarray, req: np.ndarray) -> bool:
    """``LessEqualPartlyWithDimensionZeroFiltered``: within deserved on some requested dimension
    that either side uses."""
    dims = (req > 0) & ~((used < EPS) & (deserved < EPS))
    return bool(np.any(dims & (used - deserved < EPS)))


def ancestor_at(attr: QueueAttr, depth: int) -> str | None:
    """The ancestor ``depth`` levels up (1: the parent)."""
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


def common_level(left: QueueAttr, right: QueueAttr) -> int:
    """Volcano's ``getQueueLevel``: index of the deepest ancestor the two share."""
    level = 0
    for i, (a, b) in enumerate(zip(left.ancestors, right.ancestors, strict=False)):
        if a != b:
            break
        level = i
    return level


class CapacityPlugin(Plugin):
    name = "capacity"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        level = arguments.get_int(ANCESTOR_RECLAIM_LEVEL, 0)
        if level < 0:
            arguments.warn(ANCESTOR_RECLAIM_LEVEL, f"{level} is negative; using 0")
            level = 0
        self.ancestor_reclaim_level = level
        #: Per queue: its quotas and what it holds.
        self.attrs: dict[str, QueueAttr] = {}
        self.hierarchy = False
        #: Queues that cannot schedule (unknown parent, cycle), with the reason.
        self.broken: dict[str, str] = {}

    def on_session_open(self, ssn: Session) -> None:
        opt = ssn.conf.plugin(self.name)
        self.hierarchy = bool(opt is not None and opt.flags.get("enableHierarchy"))
        self.ssn = ssn
        if self.hierarchy:
            tree: Tree = build_tree(ssn)
            self.attrs, self.broken = tree.attrs, tree.broken
            for uid, reason in tree.rejected_jobs.items():
                ssn.jobs[uid].pending_reason = reason
            for job in ssn.jobs.values():
                if job.queue in self.broken:
                    job.pending_reason = self.broken[job.queue]
        else:
            self.attrs = build_flat(ssn)
        self._register(ssn)

    # --- helpers ----------------------------------------------------------------------------
    def _chain(self, attr: QueueAttr) -> list[QueueAttr]:
        """The queue, then its ancestors up to the root (flat mode: the queue only)."""
        return [attr, *(self.attrs[a] for a in reversed(attr.ancestors))]

    def _schedulable(self, queue: QueueInfo) -> str | None:
        """Why jobs of ``queue`` cannot be scheduled at all, or None."""
        if queue.name in self.broken:
            return self.broken[queue.name]
        attr = self.attrs.get(queue.name)
        if self.hierarchy and attr is not None and not attr.leaf:
            return f"queue {queue.name} is not a leaf queue"
        return None

    def _job_reason(self, job: JobInfo, why: str) -> str:
        if self.hierarchy and job.queue not in self.broken:
            children = ", ".join(sorted(self.attrs[job.queue].children))
            return f"{why} (child queues: {children}); jobs can only run in leaf queues"
        return why

    def _update(self, task: TaskInfo, sign: float) -> None:
        job = task.job
        if job is None or job.uid not in self.ssn.jobs:
            return
        attr = self.attrs.get(job.queue)
        if attr is None:
            return
        attr.allocated += sign * task.resreq
        attr.update_share()
        if self.hierarchy:
            for name in attr.ancestors:
                anc = self.attrs[name]
                anc.allocated += sign * task.resreq
                anc.update_share()

    # --- registration -------------------------------------------------------------------------
    def _register(self, ssn: Session) -> None:
        ssn.add(QUEUE_ORDER, self.name, self.queue_order)
        if self.hierarchy:
            ssn.add(VICTIM_QUEUE_ORDER, self.name, self.victim_queue_order)
        ssn.add(RECLAIMABLE, self.name, self.reclaimable)
        ssn.add(UNIFIED_EVICTABLE, self.name, self.unified_evictable)
        ssn.add(PREEMPTIVE, self.name, self.preemptive)
        ssn.add(ALLOCATABLE, self.name, self.allocatable)
        ssn.add(JOB_ENQUEUEABLE, self.name, self.enqueueable)
        ssn.add(JOB_ENQUEUED, self.name, self.enqueued)
        ssn.add_event_handler(self.on_allocate, self.on_deallocate)

    def on_allocate(self, task: TaskInfo) -> None:
        self._update(task, 1.0)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._update(task, -1.0)

    # --- orders -------------------------------------------------------------------------------
    @staticmethod
    def _compare_share(left: QueueAttr | None, right: QueueAttr | None) -> int:
        """Lower share first; equal shares: a queue with deserved before a best-effort one."""
        if left is None or right is None:
            return 0
        if left.share == right.share:
            ld, rd = bool(np.any(left.deserved >= EPS)), bool(np.any(right.deserved >= EPS))
            return 0 if ld == rd else (-1 if ld else 1)
        return -1 if left.share < right.share else 1

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        if not self.hierarchy or la is None or ra is None:
            return self._compare_share(la, ra)
        if la.leaf != ra.leaf:
            return -1 if la.leaf else 1
        if not la.leaf:
            return self._compare_share(la, ra)
        # two leaves: compare the subtrees just below their lowest common ancestor
        level = common_level(la, ra)
        lp = self.attrs[la.ancestors[level + 1]] if level + 1 < len(la.ancestors) else la
        rp = self.attrs[ra.ancestors[level + 1]] if level + 1 < len(ra.ancestors) else ra
        return self._compare_share(lp, rp)

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: TaskInfo) -> int:
        """Victims first from queues sharing a deeper ancestor with the preemptor's queue."""
        pjob = preemptor.job
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        pa = self.attrs.get(pjob.queue) if pjob is not None else None
        if la is None or ra is None or pa is None:
            return 0
        ll, rl = common_level(la, pa), common_level(ra, pa)
        if ll == rl:
            return 0
        return -1 if ll > rl else 1

    # --- reclaim ------------------------------------------------------------------------------
    def _shares_ancestor_within_level(self, a: QueueAttr, b: QueueAttr) -> bool:
        n = self.ancestor_reclaim_level
        mine = {ancestor_at(a, d) for d in range(1, n + 1)} - {None, ROOT}
        theirs = {ancestor_at(b, d) for d in range(1, n + 1)} - {None}
        return bool(mine & theirs)

    def _ancestor_to_check(self, reclaimer: QueueAttr, victim: QueueAttr, level: int) -> QueueAttr | None:
        """The victim's ancestor at ``level`` if the reclaimer is not under it too."""
        anc = ancestor_at(victim, level)
        if anc is None or anc == ROOT or ancestor_at(reclaimer, level) == anc:
            return None
        return self.attrs.get(anc)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        rjob = reclaimer.job
        rattr = self.attrs.get(rjob.queue) if rjob is not None else None
        rqueue = self.ssn.queues.get(rjob.queue) if rjob is not None else None
        if rattr is None or rqueue is None or self._schedulable(rqueue):
            return [], REJECT
        hier_level = self.ancestor_reclaim_level if self.hierarchy else 0
        allocations: dict[str, np.ndarray] = {}
        victims: list[TaskInfo] = []
        for victim in victim_order(self.ssn, reclaimees, reclaimer):
            job = victim.job
            attr = self.attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            if not relevant(victim.resreq, reclaimer.init_resreq):
                continue
            allocated = allocations.setdefault(attr.name, attr.allocated.copy())
            if not less_equal(attr.guarantee, allocated - victim.resreq):
                continue  # would take the queue below its guarantee
            if not relevant(victim.resreq, attr.deserved):
                # an immediate victim: its queue deserves nothing of what it uses
                if hier_level > 0 and self._shares_ancestor_within_level(rattr, attr) and not relevant(
                        reclaimer.resreq, rattr.deserved):
                    continue
            elif not over_deserved(allocated, attr, victim.resreq):
                continue
            checked: list[np.ndarray] = []
            eligible = True
            for level in range(1, hier_level + 1):
                anc = self._ancestor_to_check(rattr, attr, level)
                if anc is None:
                    continue
                anc_alloc = allocations.setdefault(anc.name, anc.allocated.copy())
                checked.append(anc_alloc)
                if not relevant(victim.resreq, anc.deserved):
                    continue
                if not over_deserved(anc_alloc, anc, victim.resreq):
                    eligible = False
                    break
            if not eligible:
                continue
            allocated -= victim.resreq
            for anc_alloc in checked:
                anc_alloc -= victim.resreq
            victims.append(victim)
        return victims, PERMIT

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Volcano's UnifiedEvictableFn. gangpreempt: every candidate (capacity has no say within a queue).
        gangreclaim: in the bundles' order, a victim keeps its queue at or above its guarantee and comes from
        a queue that deserves none of what it uses or is above its deserved on a dimension the victim uses,
        the queue's tally lowered by each victim taken (no ancestor checks, as Volcano's)."""
        if ctx.kind != GANG_RECLAIM:
            return candidates, PERMIT
        rqueue = self.ssn.queues.get(ctx.job.queue)
        if rqueue is None or self._schedulable(rqueue):
            return [], REJECT
        allocations: dict[str, np.ndarray] = {}
        victims: list[TaskInfo] = []
        for victim in candidates:
            job = victim.job
            attr = self.attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            allocated = allocations.setdefault(attr.name, attr.allocated.copy())
            if not less_equal(attr.guarantee, allocated - victim.resreq):
                continue  # would take the queue below its guarantee
            if relevant(victim.resreq, attr.deserved) and not over_deserved(allocated, attr, victim.resreq):
                continue  # within what its queue deserves
            allocated -= victim.resreq
            victims.append(victim)
        return victims, PERMIT

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May ``queue`` reclaim for ``task``: within its real capability, and under deserved on
        some dimension the task asks for (or, with ``ancestorReclaimLevel``, an ancestor is)."""
        if self._schedulable(queue) or queue.state != "Open":
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return False
        req = task.resreq
        future = attr.allocated + req
        if exceeds(future, attr.real_capability, req):
            return False
        if partly_within(future, attr.deserved, req):
            return True
        if self.hierarchy:
            for level in range(1, self.ancestor_reclaim_level + 1):
                name = ancestor_at(attr, level)
                if name is None or name == ROOT:
                    continue
                anc = self.attrs[name]
                if partly_within(anc.allocated + req, anc.deserved, req):
                    return True
        return False

    # --- allocate and enqueue ------------------------------------------------------------------
    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if queue.state != "Open":
            self.ssn.queue_reasons.setdefault(queue.name, f"queue {queue.name} is {queue.state}, not Open")
            return False
        why = self._schedulable(queue)
        attr = self.attrs.get(queue.name)
        if why or attr is None:
            if why and task.job is not None:
                task.job.pending_reason = self._job_reason(task.job, why)
            return False
        for a in self._chain(attr):
            if exceeds(a.allocated + task.resreq, a.real_capability, task.resreq):
                if task.job is not None:
                    space = self.ssn.space
                    task.job.fit_errors.setdefault(
                        task.uid,
                        f"queue {a.name} capacity: allocated {space.describe(a.allocated)} + "
                        f"{space.describe(task.resreq)} exceeds {space.describe(a.real_capability)}",
                    )
                return False
        return True

    def enqueueable(self, job: JobInfo) -> int:
        queue = self.ssn.queues.get(job.queue)
        attr = self.attrs.get(job.queue)
        if queue is None or attr is None:
            return REJECT
        why = self._schedulable(queue)
        if why:
            job.pending_reason = self._job_reason(job, why)
            return REJECT
        if queue.state != "Open":
            job.pending_reason = f"queue {job.queue} is {queue.state}, not Open"
            return REJECT
        if job.min_resources is None:
            return PERMIT
        need = job.min_resources
        for a in self._chain(attr):
            total = need + a.allocated + a.inqueue - a.elastic
            if exceeds(total, a.real_capability, need):
                space = self.ssn.space
                job.pending_reason = (
                    f"queue {a.name} resource quota insufficient: needs {space.describe(total)}, "
                    f"capability {space.describe(a.real_capability)}"
                )
                return REJECT
        return PERMIT

    def enqueued(self, job: JobInfo) -> None:
        attr = self.attrs.get(job.queue)
        if attr is None or job.min_resources is None:
            return
        for a in self._chain(attr):
            a.inqueue += job.min_resources
