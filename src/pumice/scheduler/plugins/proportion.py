"""proportion: weighted fair share between queues (deserved by water-filling), queue quotas."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import PERMIT, REJECT, Session
from pumice.scheduler.framework.usage import opening_usage
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo
from pumice.scheduler.resources import EPS, ResourceSpace, fits_requested, less_equal, share


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
    deserved: np.ndarray = field(default=None)  # type: ignore[assignment]
    real_capability: np.ndarray = field(default=None)  # type: ignore[assignment]
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


def capability_vector(space: ResourceSpace, capability: dict | None) -> np.ndarray:
    """A queue capability: missing dimensions (and cpu/memory <= 0) are unlimited."""
    if capability is None:
        return np.full(space.size, np.inf)
    vec = space.vector(capability, missing=np.inf)
    for d in (0, 1):
        if vec[d] <= 0:
            vec[d] = np.inf
    return vec


@register_plugin
class ProportionPlugin(Plugin):
    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        space = ssn.space
        total = ssn.total_resource
        attrs: dict[str, QueueAttr] = {}
        total_guarantee = space.zeros()
        for q in ssn.queues.values():
            if q.guarantee:
                total_guarantee += space.vector(q.guarantee)
        for name, usage in opening_usage(ssn).items():
            q = ssn.queues.get(name)
            if q is None:
                continue
            attrs[name] = QueueAttr(
                queue=q, weight=q.weight, guarantee=space.vector(q.guarantee),
                capability=capability_vector(space, q.capability), allocated=usage.allocated.copy(),
                request=usage.request.copy(), inqueue=usage.inqueue.copy(), elastic=usage.elastic,
            )

        for attr in attrs.values():
            real = np.maximum(total - total_guarantee, 0) + attr.guarantee
            attr.real_capability = np.minimum(real, attr.capability)
            attr.deserved = space.zeros()

        self._water_fill(attrs, total)
        self.attrs = attrs

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            if left.priority != right.priority:
                return -1 if left.priority > right.priority else 1
            la, ra = attrs.get(left.name), attrs.get(right.name)
            ls = la.current_share() if la else 0.0
            rs = ra.current_share() if ra else 0.0
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        ssn.add("queue_order", self.name, queue_order)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims = []
            allocations: dict[str, np.ndarray] = {}
            for t in reclaimees:
                if t.job is None or t.job.queue not in attrs:
                    continue
                attr = attrs[t.job.queue]
                alloc = allocations.setdefault(t.job.queue, attr.allocated.copy())
                if bool(np.any(alloc < reclaimer.resreq - EPS)):  # LessPartly(reclaimer.Resreq)
                    continue
                if not less_equal(alloc, attr.deserved):
                    alloc -= t.resreq
                    victims.append(t)
            return victims, PERMIT

        ssn.add("reclaimable", self.name, reclaimable)

        def overused(queue: QueueInfo) -> bool:
            attr = attrs.get(queue.name)
            if attr is None:
                return False
            over = less_equal(attr.deserved, attr.allocated)
            if over and queue.name not in ssn.queue_reasons:
                allocated, deserved = attr.allocated.copy(), attr.deserved.copy()
                ssn.queue_reasons[queue.name] = lambda: (
                    f"queue {queue.name} is overused: allocated {space.describe(allocated)} "
                    f">= deserved {space.describe(deserved)}"
                )
            return over

        ssn.add("overused", self.name, overused)

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            if queue.state != "Open":
                ssn.queue_reasons.setdefault(queue.name, f"queue {queue.name} is {queue.state}, not Open")
                return False
            attr = attrs.get(queue.name)
            if attr is None:
                return True
            # room = deserved - allocated as plain floats: one list lookup per requested resource
            room = attr.room
            if room is None:
                room = attr.room = (attr.deserved - attr.allocated).tolist()
            ok = all(r - room[d] < EPS for d, r in task.requested)
            if not ok and task.job is not None and not task.job.quota_reason:
                task.job.quota_reason = (
                    f"queue {queue.name} quota: allocated {space.describe(attr.allocated)} + "
                    f"{space.describe(task.resreq)} exceeds deserved {space.describe(attr.deserved)}"
                )
            return ok

        ssn.add("allocatable", self.name, allocatable)

        def preemptive(queue: QueueInfo, task: TaskInfo) -> bool:
            # Volcano's queueAllocatable, shared with AllocatableFn: a queue that is not Open
            # reclaims nothing either.
            if queue.state != "Open":
                return False
            attr = attrs.get(queue.name)
            if attr is None:
                return True
            return fits_requested(attr.allocated + task.resreq, attr.deserved, task.resreq)

        ssn.add("preemptive", self.name, preemptive)

        def enqueueable(job: JobInfo) -> int:
            q = ssn.queues.get(job.queue)
            if q is None or q.state != "Open":
                job.pending_reason = f"queue {job.queue} is not Open"
                return REJECT
            if job.min_resources is None:
                return PERMIT
            attr = attrs.get(job.queue)
            if attr is None:
                return PERMIT
            need = job.min_resources + attr.allocated + attr.inqueue - attr.elastic
            if fits_requested(need, attr.real_capability, job.min_resources):
                return PERMIT
            job.pending_reason = (
                f"queue {job.queue} resource quota insufficient: needs {space.describe(need)}, "
                f"capability {space.describe(attr.real_capability)}"
            )
            return REJECT

        ssn.add("job_enqueueable", self.name, enqueueable)

        def enqueued(job: JobInfo) -> None:
            attr = attrs.get(job.queue)
            if attr is not None and job.min_resources is not None:
                attr.inqueue += job.min_resources

        ssn.add("job_enqueued", self.name, enqueued)

        def on_allocate(task: TaskInfo) -> None:
            if task.job is not None and task.job.queue in attrs:
                attr = attrs[task.job.queue]
                attr.allocated += task.resreq
                attr.stale = True
                if attr.room is not None:
                    for d, r in task.requested:
                        attr.room[d] -= r

        def on_deallocate(task: TaskInfo) -> None:
            if task.job is not None and task.job.queue in attrs:
                attr = attrs[task.job.queue]
                attr.allocated -= task.resreq
                attr.stale = True
                if attr.room is not None:
                    for d, r in task.requested:
                        attr.room[d] += r

        ssn.add_event_handler(on_allocate, on_deallocate)

    @staticmethod
    def _water_fill(attrs: dict[str, QueueAttr], total: np.ndarray) -> None:
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
