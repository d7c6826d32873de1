"""A scheduling session: the snapshot, the plugins' callbacks, and Volcano's rules for combining them.

Every extension point keeps its callbacks per plugin name. Evaluation walks the tiers in order and,
inside a tier, the plugins in order, skipping a plugin whose ``enable*`` flag is off — exactly as
Volcano's ``framework/session_plugins.go`` does. The combination rule of each point is documented
on its method.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from pumice.scheduler.cache import ClusterState, may_wait
from pumice.scheduler.conf import PluginOption, SchedulerConf
from pumice.scheduler.framework.plugin import PLUGINS, BatchScorer, NodeFilter, NodeScorer, Plugin
from pumice.scheduler.model import ALLOCATED_STATUS, JobInfo, NodeTable, QueueInfo, TaskInfo
from pumice.scheduler.resources import ResourceSpace

PERMIT, ABSTAIN, REJECT = 1, 0, -1

CompareFn = Callable[[Any, Any], int]
EventFn = Callable[[TaskInfo], None]

# extension point -> the plugin flag that switches it (None: always on)
FLAGS: dict[str, str | None] = {
    "job_order": "enableJobOrder",
    "queue_order": "enableQueueOrder",
    "victim_queue_order": None,
    "task_order": "enableTaskOrder",
    "predicate": "enablePredicate",
    "pre_predicate": "enablePredicate",
    "node_order": "enableNodeOrder",
    "batch_node_order": "enableNodeOrder",
    "best_node": "enableBestNode",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "overused": "enabledOverused",
    "allocatable": "enabledAllocatable",
    "preemptive": "enablePreemptive",
    "job_ready": "enableJobReady",
    "job_pipelined": "enableJobPipelined",
    "job_enqueueable": "enableJobEnqueued",
    "job_enqueued": "enableJobEnqueued",
    "job_starving": "enableJobStarving",
    "job_valid": None,
    "victim_tasks": "enabledVictim",
    "hypernode_order": "enabledHyperNodeOrder",
    "hypernode_gradient": "enabledHyperNodeGradient",
}


class Session:
    """One scheduling cycle over a :class:`ClusterState` (which it mutates: pass a fresh one)."""

    def __init__(self, state: ClusterState, conf: SchedulerConf, now: float | None = None) -> None:
        #: The session's time (virtual in simulations): waiting times and SLAs are measured against it.
        self.now = time.time() if now is None else now
        self.conf = conf
        self.state = state
        self.space: ResourceSpace = state.space
        self.nodes: NodeTable = state.nodes
        self.jobs: dict[str, JobInfo] = state.active_jobs if state.active_jobs is not None else state.jobs
        self.queues: dict[str, QueueInfo] = state.queues
        self.total_resource: np.ndarray = state.nodes.total
        self.plugins: dict[str, Plugin] = {}
        self._fns: dict[str, dict[str, Any]] = {point: {} for point in FLAGS}
        self._flat: dict[str, list[Any]] = {}
        self._event_handlers: list[tuple[EventFn | None, EventFn | None]] = []
        #: pods bound / evicted / pipelined by committed statements, in order.
        self.binds: dict[str, str] = {}
        #: Called with (pod key, node) as each bind is committed (Volcano dispatches binds on commit), or None.
        self.on_bind: Callable[[str, str], None] | None = None
        self.evictions: list[str] = []
        #: Per-queue explanations of why jobs did not get resources (for people).
        #: A reason may be a function that words it (only read if a job stays waiting).
        self.queue_reasons: dict[str, str | Callable[[], str]] = {}
        #: Per-session memo for values several plugins derive from the same job at open.
        self.memo: dict[Any, Any] = {}
        #: Jobs whose tasks or phase this session changed (they are reported at close), and what each
        #: held when first touched, i.e. at open: (allocated, allocated pods). See ``touch``.
        self.touched: set[str] = set()
        self.opening: dict[str, tuple[np.ndarray, int]] = {}
        #: Every statement of the session; what none committed or discarded is undone by ``revert``.
        self.statements: list[Any] = []
        # Set by the placement engine on first use.
        self._placer: Any = None
        #: For the metrics: (plugin, "OnSessionOpen"/"OnSessionClose", seconds) of every plugin call, and
        #: the preempt action's attempts and the victims of its last successful one (Volcano's counters).
        self.plugin_seconds: list[tuple[str, str, float]] = []
        self.preemption_attempts = 0
        self.preemption_victims: int | None = None
        for job in self.jobs.values():
            job.reset_session_notes()
        #: The jobs enqueue, allocate and backfill look at (the others have nothing for them).
        self.waiting: list[JobInfo] = self._waiting_jobs()

    def _waiting_jobs(self) -> list[JobInfo]:
        """The active jobs that may have work; the live cache's index is pruned of those that have none."""
        index = self.state.waiting_jobs
        if index is None:
            return list(self.jobs.values())
        out = []
        for uid in list(index):
            job = self.jobs.get(uid)
            if job is None or not may_wait(job):
                index.discard(uid)  # admitted and placed: an event brings it back if that changes
            else:
                out.append(job)
        return out

    def reportable(self) -> list[JobInfo]:
        """Jobs whose state a report must say again: all of them, or with a live cache the ones an
        event or this session changed and the ones still waiting (the rest was reported as it is)."""
        dirty = self.state.dirty_jobs
        if dirty is None:
            return list(self.jobs.values())
        uids = dirty | self.touched
        uids.update(j.uid for j in self.waiting)
        return [job for uid in uids if (job := self.jobs.get(uid)) is not None]

    # --- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        for tier in self.conf.tiers:
            for opt in tier.plugins:
                cls = PLUGINS.get(opt.name)
                if cls is None:
                    continue  # Volcano logs and skips plugins it cannot build
                start = time.perf_counter()
                plugin = cls(opt.arguments)
                self.plugins[opt.name] = plugin
                plugin.on_session_open(self)
                self.plugin_seconds.append((opt.name, "OnSessionOpen", time.perf_counter() - start))

    def close(self) -> None:
        for name, plugin in self.plugins.items():
            start = time.perf_counter()
            plugin.on_session_close(self)
            self.plugin_seconds.append((name, "OnSessionClose", time.perf_counter() - start))

    def dispose(self) -> None:
        """Drop the plugins and their handlers: their closures and the session refer to each other,
        and a long-running loop should free a finished session by reference counting, not leave
        ~150 objects of cyclic garbage per cycle to the collector."""
        self.plugins.clear()
        for fns in self._fns.values():
            fns.clear()
        self._flat.clear()
        self._event_handlers.clear()
        self.memo.clear()
        self.statements.clear()
        self._placer = None

    def revert(self) -> None:
        """Undo placements no statement committed (pipelined tasks, gangs left half-placed), so a
        long-lived cache holds only what the store will confirm."""
        for stmt in reversed(self.statements):
            if stmt.operations:
                stmt.discard()
        self.statements.clear()

    @property
    def placer(self) -> Any:
        if self._placer is None:
            from pumice.scheduler.framework.placement import Placer

            self._placer = Placer(self)
        return self._placer

    # --- registration ------------------------------------------------------------------------
    def add(self, point: str, plugin: str, fn: Any) -> None:
        if point not in self._fns:
            raise KeyError(f"unknown extension point {point!r}")
        self._fns[point][plugin] = fn
        self._flat.clear()

    def add_event_handler(self, allocate: EventFn | None = None, deallocate: EventFn | None = None) -> None:
        self._event_handlers.append((allocate, deallocate))

    def fire_allocate(self, task: TaskInfo) -> None:
        for alloc, _ in self._event_handlers:
            if alloc is not None:
                alloc(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for _, dealloc in self._event_handlers:
            if dealloc is not None:
                dealloc(task)

    def _registered(self, point: str) -> Iterable[list[tuple[PluginOption, Any]]]:
        """Per tier, the enabled (option, fn) pairs registered at ``point``."""
        fns = self._fns[point]
        for options in self.conf.enabled_options(FLAGS[point]):
            yield [(opt, fns[opt.name]) for opt in options if opt.name in fns]

    def _all(self, point: str) -> list[Any]:
        flat = self._flat.get(point)
        if flat is None:
            flat = self._flat[point] = [fn for tier in self._registered(point) for _, fn in tier]
        return flat

    def has(self, point: str) -> bool:
        return bool(self._all(point))

    # --- orders: first non-zero answer wins, then the default order ----------------------------
    def _compare(self, point: str, left: Any, right: Any) -> int:
        for fn in self._all(point):
            c = fn(left, right)
            if c != 0:
                return c
        return 0

    def job_order_less(self, left: JobInfo, right: JobInfo) -> bool:
        c = self._compare("job_order", left, right)
        if c != 0:
            return c < 0
        if left.creation != right.creation:
            return left.creation < right.creation
        return left.uid < right.uid

    def queue_order_less(self, left: QueueInfo, right: QueueInfo) -> bool:
        c = self._compare("queue_order", left, right)
        if c != 0:
            return c < 0
        if left.creation != right.creation:
            return left.creation < right.creation
        return left.uid < right.uid

    def victim_queue_order_less(self, left: QueueInfo, right: QueueInfo, preemptor: TaskInfo) -> bool:
        for fn in self._all("victim_queue_order"):
            c = fn(left, right, preemptor)
            if c != 0:
                return c < 0
        return not self.queue_order_less(left, right)

    def task_order_cmp(self, left: TaskInfo, right: TaskInfo) -> int:
        """TaskOrderFn as a three-way comparison (negative: ``left`` goes first)."""
        for fn in self._all("task_order"):
            c = fn(left, right)
            if c != 0:
                return c
        # Volcano's CompareTask: index under the task, then creation time, then UID.
        if left.index is not None and right.index is not None and left.index != right.index:
            return -1 if left.index < right.index else 1
        if left.creation != right.creation:
            return -1 if left.creation < right.creation else 1
        if left.uid == right.uid:
            return 0
        return -1 if left.uid < right.uid else 1

    def task_order_less(self, left: TaskInfo, right: TaskInfo) -> bool:
        return self.task_order_cmp(left, right) < 0

    # --- predicates and node order -------------------------------------------------------------
    def pre_predicate(self, task: TaskInfo) -> str | None:
        """First error wins."""
        for fn in self._all("pre_predicate"):
            err = fn(task)
            if err:
                return err
        return None

    def node_filters(self) -> list[tuple[str, NodeFilter]]:
        return [(opt.name, fn) for tier in self._registered("predicate") for opt, fn in tier]

    def node_scorers(self) -> list[tuple[str, NodeScorer]]:
        return [(opt.name, fn) for tier in self._registered("node_order") for opt, fn in tier]

    def batch_scorers(self) -> list[tuple[str, BatchScorer]]:
        return [(opt.name, fn) for tier in self._registered("batch_node_order") for opt, fn in tier]

    # --- victims: intersection inside a tier, first tier with an answer wins -------------------
    def _victims(self, point: str, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        for tier in self._registered(point):
            victims: list[TaskInfo] | None = None
            for _, fn in tier:
                chosen, abstain = fn(actor, candidates)
                if abstain == 0:
                    continue
                if not chosen:
                    victims = None
                    break
                if victims is None:
                    victims = list(chosen)
                else:
                    keep = {id(t) for t in chosen}
                    victims = [t for t in victims if id(t) in keep]
            if victims is not None:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims("preemptable", preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims("reclaimable", reclaimer, reclaimees)

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Union inside a tier; the first tier with a non-empty set wins."""
        for tier in self._registered("victim_tasks"):
            found: dict[str, TaskInfo] = {}
            for _, fn in tier:
                for t in fn(tasks):
                    found[t.uid] = t
            if found:
                return list(found.values())
        return []

    # --- queue gates ----------------------------------------------------------------------------
    def overused(self, queue: QueueInfo) -> bool:
        """OR over plugins."""
        return any(fn(queue) for fn in self._all("overused"))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AND over plugins."""
        for fn in self._all("allocatable"):  # noqa: SIM110 - hot path, no generator
            if not fn(queue, task):
                return False
        return True

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AND over plugins: may this queue take resources back for ``task``?"""
        return all(fn(queue, task) for fn in self._all("preemptive"))

    # --- job predicates ----------------------------------------------------------------------
    def job_valid(self, job: JobInfo) -> str | None:
        """The first failing plugin's reason, or None."""
        for fn in self._all("job_valid"):
            err = fn(job)
            if err:
                return err
        return None

    def job_ready(self, job: JobInfo) -> bool:
        for fn in self._all("job_ready"):  # noqa: SIM110 - hot path, no generator
            if not fn(job):
                return False
        return True

    def _vote(self, point: str, job: JobInfo) -> bool:
        """Reject anywhere: false; a permit in a tier: true; all abstain: true."""
        for tier in self._registered(point):
            permitted = False
            for _, fn in tier:
                res = fn(job)
                if res < 0:
                    return False
                if res > 0:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self._all("job_enqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """AND inside the first tier that has any function; false if none has."""
        for tier in self._registered("job_starving"):
            if not tier:
                continue
            return all(fn(job) for _, fn in tier)
        return False

    # --- helpers for actions --------------------------------------------------------------------
    def touch(self, job: JobInfo) -> None:
        """Note that this session is about to change ``job`` (statements and actions call it first):
        what the job held until now is what it held at open, for whoever needs that at close."""
        if job.uid not in self.touched:
            self.touched.add(job.uid)
            self.opening[job.uid] = (job.allocated.copy(), job.count(ALLOCATED_STATUS))

    def allocated_at_open(self, job: JobInfo) -> np.ndarray:
        """What ``job`` held when the session opened (read-only)."""
        before = self.opening.get(job.uid)
        return job.allocated if before is None else before[0]

    def queue_reason(self, queue: str) -> str:
        reason = self.queue_reasons.get(queue, "")
        return reason if isinstance(reason, str) else reason()

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)

    def record_bind(self, task: TaskInfo, node: str) -> None:
        self.binds[task.key] = node
        if self.on_bind is not None:
            self.on_bind(task.key, node)

    def record_eviction(self, task: TaskInfo) -> None:
        self.evictions.append(task.key)
