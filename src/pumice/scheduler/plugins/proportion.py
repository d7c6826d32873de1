"""proportion: weighted fair share between queues (deserved by water-filling), queue quotas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import (
    ALLOCATABLE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    OVERUSED,
    PERMIT,
    PREEMPTIVE,
    QUEUE_ORDER,
    RECLAIMABLE,
    REJECT,
)
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.usage import opening_usage
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo, run_request
from pumice.scheduler.resources import EPS, ResourceSpace, fits_requested, less_equal, share

#: pumice's argument (not Volcano's): enqueue admits by weighted share, see ``admission_order``.
WEIGHTED_ADMISSION = "weightedAdmission"
#: pumice's argument (not Volcano's): allocate's last pass gives what deserved shares left idle, see
#: ``Session.overflow``.
WORK_CONSERVING = "workConserving"


@dataclass
class QueueAttr:
    queue: QueueInfo
    weight: int
    guarantee: np.ndarray
    capability: np.ndarray
    allocated: np.ndarray
    request: np.ndarray
    inqueue: np.ndarray
    elastic: np.ndarray
    deserved: np.ndarray
    real_capability: np.ndarray
    share: float = 0.0
    #: The share is recomputed when read after allocations changed (queue order reads it).
    stale: bool = False
    #: deserved - allocated as floats, kept by the event handlers once the quota check made it.
    room: list[float] | None = None

    def current_share(self) -> float:
        if self.stale:
            self.share = share(self.allocated, self.deserved)
            self.stale = False
        return self.share


def _room(attr: QueueAttr) -> list[float]:
    """deserved - allocated as plain floats (one list lookup per requested resource), made at the first
    admission check of a session and kept by the event handlers."""
    if attr.room is None:
        attr.room = (attr.deserved - attr.allocated).tolist()
    return attr.room


def capability_vector(space: ResourceSpace, capability: dict[str, Any] | None) -> np.ndarray:
    """A queue capability: missing dimensions (and cpu/memory <= 0) are unlimited."""
    if capability is None:
        return np.full(space.size, np.inf)
    vec = space.vector(capability, missing=np.inf)
    for d in (0, 1):
        if vec[d] <= 0:
            vec[d] = np.inf
    return vec


class ProportionPlugin(Plugin):
    name = "proportion"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weighted_admission = arguments.get_bool(WEIGHTED_ADMISSION, False)
        self.work_conserving = arguments.get_bool(WORK_CONSERVING, False)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        space = self.space = ssn.space
        total = ssn.total_resource
        total_guarantee = space.zeros()
        for q in ssn.queues.values():
            if q.guarantee:
                total_guarantee += space.vector(q.guarantee)
        #: Per queue with jobs: its share of the cluster and what it holds.
        self.attrs: dict[str, QueueAttr] = {}
        for name, usage in opening_usage(ssn).items():
            queue = ssn.queues.get(name)
            if queue is None:
                continue
            q = queue
            guarantee = space.vector(q.guarantee)
            capability = capability_vector(space, q.capability)
            self.attrs[name] = QueueAttr(
                queue=q, weight=q.weight, guarantee=guarantee, capability=capability,
                allocated=usage.allocated.copy(), request=usage.request.copy(), inqueue=usage.inqueue.copy(),
                elastic=usage.elastic, deserved=space.zeros(),
                real_capability=np.minimum(np.maximum(total - total_guarantee, 0) + guarantee, capability),
            )
        if self.work_conserving:
            ssn.overflow = set()
        water_fill(self.attrs, total)
        self.total = total
        ssn.add(QUEUE_ORDER, self.name, self.queue_order)
        ssn.add(RECLAIMABLE, self.name, self.reclaimable)
        ssn.add(OVERUSED, self.name, self.overused)
        ssn.add(ALLOCATABLE, self.name, self.allocatable)
        ssn.add(PREEMPTIVE, self.name, self.preemptive)
        ssn.add(JOB_ENQUEUEABLE, self.name, self.enqueueable)
        ssn.add(JOB_ENQUEUED, self.name, self.enqueued)
        ssn.add_event_handler(self.on_allocate, self.on_deallocate, self.on_allocate_run)

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Higher priority first, then the lower share of deserved."""
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        if self.weighted_admission and self.ssn.admitting:
            return self.admission_order(left, right)
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        ls = la.current_share() if la else 0.0
        rs = ra.current_share() if ra else 0.0
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def admission_share(self, queue: QueueInfo) -> float:
        """What the queue holds and has admitted (allocated + inqueue), as a dominant share of the
        cluster, per unit of weight."""
        attr = self.attrs.get(queue.name)
        if attr is None:
            return 0.0
        held = share(attr.allocated + attr.inqueue, self.total)
        if attr.weight <= 0:
            return np.inf if held > 0 else 0.0
        return held / attr.weight

    def admission_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """pumice's admission order (``weightedAdmission``): the queue holding the least per unit of
        weight, its admitted jobs counted, admits next. Volcano orders by allocated/deserved, which does
        not move while enqueue admits, so one queue's jobs are admitted first while shares tie."""
        ls, rs = self.admission_share(left), self.admission_share(right)
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Tasks of queues above their deserved share.

        Volcano skips a queue whose allocation is below the reclaimer's whole request on some
        resource (``LessPartly``), even when the node's idle resources cover the rest, and then
        evicts nothing. pumice asks the queue only for what the node lacks (the reclaimees are all
        on one node): the request minus the node's future idle resources (a deliberate difference).
        """
        victims = []
        allocations: dict[str, np.ndarray] = {}
        need = reclaimer.resreq
        if reclaimees and reclaimees[0].node >= 0:
            need = np.maximum(need - self.ssn.nodes.future_idle_at(reclaimees[0].node), 0.0)
        for t in reclaimees:
            if t.job is None or t.job.queue not in self.attrs:
                continue
            attr = self.attrs[t.job.queue]
            alloc = allocations.setdefault(t.job.queue, attr.allocated.copy())
            if bool(np.any(alloc < need - EPS)):  # Volcano: LessPartly(reclaimer.Resreq)
                continue
            if not less_equal(alloc, attr.deserved):
                alloc -= t.resreq
                victims.append(t)
        return victims, PERMIT

    def overused(self, queue: QueueInfo) -> bool:
        attr = self.attrs.get(queue.name)
        if attr is None:
            return False
        if self.ssn.overflowing:
            return False
        over = less_equal(attr.deserved, attr.allocated)
        if over and self.ssn.overflow is not None:
            self.ssn.overflow.add(queue.name)
        if over and queue.name not in self.ssn.queue_reasons:
            allocated, deserved, space = attr.allocated.copy(), attr.deserved.copy(), self.space
            self.ssn.queue_reasons[queue.name] = lambda: (
                f"queue {queue.name} is overused: allocated {space.describe(allocated)} "
                f">= deserved {space.describe(deserved)}"
            )
        return over

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if queue.state != "Open":
            self.ssn.queue_reasons.setdefault(queue.name, f"queue {queue.name} is {queue.state}, not Open")
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return True
        if self.ssn.overflowing:  # beyond deserved, never beyond the queue's real capability
            return fits_requested(attr.allocated + task.resreq, attr.real_capability, task.resreq)
        room = _room(attr)
        ok = True
        for d, r in task.requested:  # all(...) without a generator: once per placement
            if not r - room[d] < EPS:
                ok = False
                break
        if not ok and self.ssn.overflow is not None:
            self.ssn.overflow.add(queue.name)
        if not ok and task.job is not None and not task.job.quota_reason:
            space = self.space
            task.job.quota_reason = (
                f"queue {queue.name} quota: allocated {space.describe(attr.allocated)} + "
                f"{space.describe(task.resreq)} exceeds deserved {space.describe(attr.deserved)}"
            )
        return ok

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        # Volcano's queueAllocatable, shared with AllocatableFn: a queue that is not Open
        # reclaims nothing either.
        if queue.state != "Open":
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return True
        return fits_requested(attr.allocated + task.resreq, attr.deserved, task.resreq)

    def enqueueable(self, job: JobInfo) -> int:
        q = self.ssn.queues.get(job.queue)
        if q is None or q.state != "Open":
            job.pending_reason = f"queue {job.queue} is not Open"
            return REJECT
        if job.min_resources is None:
            return PERMIT
        attr = self.attrs.get(job.queue)
        if attr is None:
            return PERMIT
        need = job.min_resources + attr.allocated + attr.inqueue - attr.elastic
        if fits_requested(need, attr.real_capability, job.min_resources):
            return PERMIT
        space = self.space
        job.pending_reason = (
            f"queue {job.queue} resource quota insufficient: needs {space.describe(need)}, "
            f"capability {space.describe(attr.real_capability)}"
        )
        return REJECT

    def enqueued(self, job: JobInfo) -> None:
        attr = self.attrs.get(job.queue)
        if attr is not None and job.min_resources is not None:
            attr.inqueue += job.min_resources

    def on_allocate(self, task: TaskInfo) -> None:
        if task.job is not None and task.job.queue in self.attrs:
            attr = self.attrs[task.job.queue]
            attr.allocated += task.resreq
            attr.stale = True
            if attr.room is not None:
                for d, r in task.requested:
                    attr.room[d] -= r

    def on_allocate_run(self, tasks: list[TaskInfo]) -> None:
        """``on_allocate`` for each of a run of one job's replicas: the allocation at once (whole units), the
        room as each replica would leave it."""
        job = tasks[0].job
        if job is not None and job.queue in self.attrs:
            attr = self.attrs[job.queue]
            attr.allocated += run_request(tasks)
            attr.stale = True
            room = attr.room
            if room is not None:
                for task in tasks:
                    for d, r in task.requested:
                        room[d] -= r

    def allocatable_run(self, queue: QueueInfo, task: TaskInfo, n: int) -> int | None:
        """``AllocatableRun``: replicas like ``task`` admitted in a row, each checked against the room the ones
        before it leave (as ``allocatable`` then ``on_allocate`` would); the first refusal is left to
        ``allocatable`` (its reasons)."""
        if queue.state != "Open" or self.ssn.overflowing:
            return None
        attr = self.attrs.get(queue.name)
        if attr is None:
            return n
        room = _room(attr)
        left = {d: room[d] for d, _ in task.requested}
        for admitted in range(n):
            for d, r in task.requested:
                if not r - left[d] < EPS:
                    return admitted
            for d, r in task.requested:
                left[d] -= r
        return n

    def on_deallocate(self, task: TaskInfo) -> None:
        if task.job is not None and task.job.queue in self.attrs:
            attr = self.attrs[task.job.queue]
            attr.allocated -= task.resreq
            attr.stale = True
            if attr.room is not None:
                for d, r in task.requested:
                    attr.room[d] += r


def water_fill(attrs: dict[str, QueueAttr], total: np.ndarray) -> None:
    """Volcano's deserved loop: the remaining resources are shared by weight among the queues
    not yet met, each capped by its real capability and request and raised to its guarantee.

    In Python floats (the same IEEE operations in the same order as the vector form): a few
    queues by a few resources, where each NumPy call would cost more than its arithmetic."""
    remaining = total.tolist()
    deserved = {name: a.deserved.tolist() for name, a in attrs.items()}
    limits = {name: list(zip(a.real_capability.tolist(), a.request.tolist(), a.guarantee.tolist(),
                             strict=True)) for name, a in attrs.items()}
    meet: set[str] = set()
    while True:
        weight_sum = sum(a.weight for name, a in attrs.items() if name not in meet)
        if weight_sum == 0:
            break
        old = remaining
        increased = [0.0] * len(remaining)
        decreased = [0.0] * len(remaining)
        for name, attr in attrs.items():
            if name in meet:
                continue
            prev = deserved[name]
            w = attr.weight
            new = [max(min(min(p + r * w / weight_sum, cap), req), guarantee)
                   for p, r, (cap, req, guarantee) in zip(prev, remaining, limits[name], strict=True)]
            deserved[name] = new
            attr.share = _share(attr.allocated.tolist(), new)
            if all(req - d < EPS for (_, req, _), d in zip(limits[name], new, strict=True)) or new == prev:
                meet.add(name)
            for d, (n, p) in enumerate(zip(new, prev, strict=True)):
                diff = n - p
                increased[d] += max(diff, 0.0)
                decreased[d] += max(-diff, 0.0)
        remaining = [max(r + dec - inc, 0.0) for r, dec, inc in zip(remaining, decreased, increased, strict=True)]
        if all(r < EPS for r in remaining) or remaining == old:
            break
    for name, attr in attrs.items():
        attr.deserved = np.array(deserved[name], dtype=float)


def _share(allocated: list[float], deserved: list[float]) -> float:
    """``share(allocated, deserved)`` on floats."""
    return max((a / d for a, d in zip(allocated, deserved, strict=True) if d >= EPS), default=0.0)
