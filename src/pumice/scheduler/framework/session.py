"""A scheduling session: the snapshot, the plugins' callbacks, and Volcano's rules for combining them.

Every extension point (:mod:`pumice.scheduler.framework.points`) keeps its callbacks per plugin
name. Evaluation walks the tiers in order and, inside a tier, the plugins in order, skipping a
plugin whose ``enable*`` flag is off — exactly as Volcano's ``framework/session_plugins.go`` does.
The combination rule of each point is documented on its method.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.conf import SchedulerConf
from pumice.scheduler.framework.points import (
    ALLOCATABLE,
    HYPERNODE_GRADIENT,
    HYPERNODE_ORDER,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_ORDER,
    JOB_PIPELINED,
    JOB_READY,
    JOB_STARVING,
    JOB_VALID,
    OVERUSED,
    POINTS,
    PRE_PREDICATE,
    PREEMPTABLE,
    PREEMPTIVE,
    QUEUE_ORDER,
    RECLAIMABLE,
    SUBJOB_ORDER,
    SUBJOB_PIPELINED,
    SUBJOB_READY,
    TASK_ORDER,
    UNIFIED_EVICTABLE,
    VICTIM_FILTER,
    VICTIM_QUEUE_ORDER,
    VICTIM_TASKS,
    EvictionContext,
    Point,
    UnifiedEvictableFn,
    VictimsFn,
)
from pumice.scheduler.model import ALLOCATED_STATUS, JobInfo, NodeTable, QueueInfo, TaskInfo
from pumice.scheduler.resources import ResourceSpace
from pumice.scheduler.snapshot import ClusterState, may_wait

if TYPE_CHECKING:
    from pumice.scheduler.framework.placement import Placer
    from pumice.scheduler.framework.plugin import Plugin
    from pumice.scheduler.framework.replica_run import RunHooks
    from pumice.scheduler.framework.statement import Statement
    from pumice.scheduler.framework.usage import OpeningSums
    from pumice.scheduler.topology.context import SearchRequest, TopologyContext
    from pumice.scheduler.topology.subjobs import SubJob
    from pumice.scheduler.topology.tree import HyperNodeInfo

F = TypeVar("F")
T = TypeVar("T")

EventFn = Callable[[TaskInfo], None]
RunEventFn = Callable[[list[TaskInfo]], None]
#: What builds a plugin from its configured arguments (a plugin class).
PluginFactory = Callable[[Arguments], "Plugin"]


@runtime_checkable
class JobOrderKey(Protocol):
    """A plugin capability (optional): its JobOrderFn is a comparison of per-job values, offered as
    a key — equal keys where the function answers 0, smaller first where it answers -1 — that
    changes only when the job's own tasks are placed or evicted."""

    def job_order_key(self, job: JobInfo) -> Any:
        """The job's value (None: not comparable as a key, e.g. a NaN share)."""
        ...


@runtime_checkable
class TaskOrderKey(Protocol):
    """A plugin capability (optional): its TaskOrderFn as a key (equal where it answers 0, smaller
    first where it answers -1)."""

    def task_order_key(self, task: TaskInfo) -> Any:
        """The task's value."""
        ...


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
        self._fns: dict[Point[Any], dict[str, Any]] = {point: {} for point in POINTS}
        self._flat: dict[Point[Any], list[Any]] = {}
        self._event_handlers: list[tuple[EventFn | None, EventFn | None]] = []
        #: Per allocate handler, its run version (or None).
        self._run_handlers: list[RunEventFn | None] = []
        #: pods bound / evicted / pipelined by committed statements, in order.
        self.binds: dict[str, str] = {}
        #: Called with (pod key, node) as each bind is committed (Volcano dispatches binds on commit), or None.
        self.on_bind: Callable[[str, str, dict[str, str] | None], None] | None = None
        #: Annotations a plugin writes on a pod with its bind (deviceshare's GPU assignment), by pod key.
        self.bind_annotations: dict[str, dict[str, str]] = {}
        self.evictions: list[str] = []
        #: Per-queue explanations of why jobs did not get resources (for people).
        #: A reason may be a function that words it (only read if a job stays waiting).
        self.queue_reasons: dict[str, str | Callable[[], str]] = {}
        #: Jobs whose tasks or phase this session changed (they are reported at close), and what each
        #: held when first touched, i.e. at open: (allocated, allocated pods). See ``touch``.
        self.touched: set[str] = set()
        self.opening: dict[str, tuple[np.ndarray, int]] = {}
        #: Every statement of the session; what none committed or discarded is undone by ``revert``.
        self.statements: list[Statement] = []
        # Per-session caches, built on first use by their owners:
        #: the per-queue sums at open (:func:`pumice.scheduler.framework.usage.opening_usage`),
        self.opening_sums: OpeningSums | None = None
        #: the HyperNode tree and the jobs' SubJobs (:func:`pumice.scheduler.topology.topology_of`),
        self.topology: TopologyContext | None = None
        #: the placement engine (``placer``).
        self._placer: Placer | None = None
        #: ``run_hooks`` once asked (False: not yet).
        self._run_hooks: RunHooks | bool | None = False
        #: For the metrics: (plugin, "OnSessionOpen"/"OnSessionClose", seconds) of every plugin call, and
        #: the preempt action's attempts and the victims of its last successful one (Volcano's counters).
        self.plugin_seconds: list[tuple[str, str, float]] = []
        self.preemption_attempts = 0
        self.preemption_victims: int | None = None
        #: True while enqueue orders queues to admit their jobs (proportion's ``weightedAdmission``).
        self.admitting = False
        #: The queues a quota held back in allocate, for its last pass over what is left idle, or None
        #: when no plugin asks for that pass (Volcano; proportion's ``workConserving`` asks), and
        #: True during that pass (quotas let those queues go beyond their deserved share).
        self.overflow: set[str] | None = None
        self.overflowing = False
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
    def open(self, plugins: Mapping[str, PluginFactory]) -> None:
        """Build the configured plugins from ``plugins`` (name -> factory) and let them register."""
        for tier in self.conf.tiers:
            for opt in tier.plugins:
                factory = plugins.get(opt.name)
                if factory is None:
                    continue  # Volcano skips plugins it cannot build (the configuration warned)
                start = time.perf_counter()
                plugin = factory(opt.args)
                self.plugins[opt.name] = plugin
                plugin.on_session_open(self)
                self.plugin_seconds.append((opt.name, "OnSessionOpen", time.perf_counter() - start))

    def close(self) -> None:
        for name, plugin in self.plugins.items():
            start = time.perf_counter()
            plugin.on_session_close(self)
            self.plugin_seconds.append((name, "OnSessionClose", time.perf_counter() - start))

    def dispose(self) -> None:
        """Drop the plugins and their handlers: their callbacks and the session refer to each other,
        and a long-running loop should free a finished session by reference counting, not leave
        ~150 objects of cyclic garbage per cycle to the collector."""
        self.plugins.clear()
        for fns in self._fns.values():
            fns.clear()
        self._flat.clear()
        self._event_handlers.clear()
        self._run_handlers.clear()
        self._run_hooks = False
        self.statements.clear()
        self.opening_sums = None
        self.topology = None
        self._placer = None

    def revert(self) -> None:
        """Undo placements no statement committed (pipelined tasks, gangs left half-placed), so a
        long-lived cache holds only what the store will confirm."""
        for stmt in reversed(self.statements):
            if stmt.operations:
                stmt.discard()
        self.statements.clear()

    @property
    def placer(self) -> Placer:
        if self._placer is None:
            from pumice.scheduler.framework.placement import Placer

            self._placer = Placer(self)
        return self._placer

    @property
    def run_hooks(self) -> RunHooks | None:
        """What places a run of replicas at once, if this session's plugins allow it (``replica_run.py``);
        asked once the plugins have registered."""
        hooks = self._run_hooks
        if hooks is False:
            from pumice.scheduler.framework.replica_run import run_hooks

            hooks = self._run_hooks = run_hooks(self)
        return None if hooks is None or isinstance(hooks, bool) else hooks

    # --- registration ------------------------------------------------------------------------
    def add(self, point: Point[F], plugin: str, fn: F) -> None:
        """Register ``plugin``'s callback ``fn`` at ``point``."""
        fns = self._fns.get(point)
        if fns is None:
            raise KeyError(f"unknown extension point {point!r}")
        fns[plugin] = fn
        self._flat.clear()

    def add_event_handler(self, allocate: EventFn | None = None, deallocate: EventFn | None = None,
                          allocate_run: RunEventFn | None = None) -> None:
        """``allocate_run``: optional, for speed: ``allocate`` for each of a run of one job's replicas placed at
        once (the same state after it); without it no run is placed at once (see ``replica_run.py``)."""
        self._event_handlers.append((allocate, deallocate))
        if allocate is not None:
            self._run_handlers.append(allocate_run)

    def fire_allocate_run(self, tasks: list[TaskInfo]) -> None:
        """``fire_allocate`` for a run of one job's replicas placed at once (every handler offers it:
        ``allocates_runs``)."""
        for run in self._run_handlers:
            if run is not None:
                run(tasks)

    def allocates_runs(self) -> bool:
        """Whether every allocate event handler takes a run at once."""
        return all(run is not None for run in self._run_handlers)

    def fire_allocate(self, task: TaskInfo) -> None:
        for alloc, _ in self._event_handlers:
            if alloc is not None:
                alloc(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for _, dealloc in self._event_handlers:
            if dealloc is not None:
                dealloc(task)

    def _tiers(self, point: Point[F]) -> Iterator[list[tuple[str, F]]]:
        """Per tier, the (plugin name, callback) pairs registered at ``point`` whose flag is on."""
        fns = self._fns[point]
        for options in self.conf.enabled_options(point.flag):
            yield [(opt.name, fns[opt.name]) for opt in options if opt.name in fns]

    def registered(self, point: Point[F]) -> list[tuple[str, F]]:
        """The enabled (plugin name, callback) pairs of ``point``, in tier and plugin order."""
        return [pair for tier in self._tiers(point) for pair in tier]

    def callbacks(self, point: Point[F]) -> list[F]:
        """The enabled callbacks of ``point`` in order (kept until the next registration)."""
        flat = self._flat.get(point)
        if flat is None:
            flat = self._flat[point] = [fn for tier in self._tiers(point) for _, fn in tier]
        return flat

    # --- orders: first non-zero answer wins, then the default order ----------------------------
    def job_order_less(self, left: JobInfo, right: JobInfo) -> bool:
        for fn in self.callbacks(JOB_ORDER):
            c = fn(left, right)
            if c != 0:
                return c < 0
        if left.creation != right.creation:
            return left.creation < right.creation
        return left.uid < right.uid

    def offers(self, point: Point[Any], capability: Any) -> list[Any] | None:
        """The plugins of ``point``'s enabled callbacks, in order, if every one offers ``capability``
        (a runtime-checkable protocol)."""
        offers = []
        for name, _ in self.registered(point):
            plugin = self.plugins.get(name)
            if not isinstance(plugin, capability):
                return None
            offers.append(plugin)
        return offers

    def task_order_key(self) -> Callable[[TaskInfo], tuple[Any, ...]] | None:
        """A sort key that orders tasks exactly as :meth:`task_order_cmp` does, for tasks that all
        have an index (the default order compares indices only when both tasks have one), if every
        enabled TaskOrderFn's plugin offers one (:class:`TaskOrderKey`), else None."""
        offers = self.offers(TASK_ORDER, TaskOrderKey)
        if offers is None:
            return None
        parts: list[Callable[[TaskInfo], Any]] = [plugin.task_order_key for plugin in offers]
        if len(parts) == 1:
            part = parts[0]
            return lambda task: (part(task), task.index, task.creation, task.uid)
        return lambda task: (*[p(task) for p in parts], task.index, task.creation, task.uid)

    def job_order_key(self) -> Callable[[JobInfo], tuple[Any, ...] | None] | None:
        """A sort key that orders jobs exactly as :meth:`job_order_less` does, if every enabled
        JobOrderFn's plugin offers one (:class:`JobOrderKey`), else None. A job's key may be None
        (its plugins cannot say now); a :class:`PriorityQueue` then falls back to the comparisons."""
        offers = self.offers(JOB_ORDER, JobOrderKey)
        if offers is None:
            return None
        parts: list[Callable[[JobInfo], Any]] = [plugin.job_order_key for plugin in offers]

        def key(job: JobInfo) -> tuple[Any, ...] | None:
            values = [part(job) for part in parts]
            if None in values:
                return None
            return (*values, job.creation, job.uid)

        return key

    def queue_order_less(self, left: QueueInfo, right: QueueInfo) -> bool:
        for fn in self.callbacks(QUEUE_ORDER):
            c = fn(left, right)
            if c != 0:
                return c < 0
        if left.creation != right.creation:
            return left.creation < right.creation
        return left.uid < right.uid

    def victim_queue_order_less(self, left: QueueInfo, right: QueueInfo, preemptor: TaskInfo) -> bool:
        for fn in self.callbacks(VICTIM_QUEUE_ORDER):
            c = fn(left, right, preemptor)
            if c != 0:
                return c < 0
        return not self.queue_order_less(left, right)

    def task_order_cmp(self, left: TaskInfo, right: TaskInfo) -> int:
        """TaskOrderFn as a three-way comparison (negative: ``left`` goes first)."""
        for fn in self.callbacks(TASK_ORDER):
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

    def subjob_order_less(self, left: SubJob, right: SubJob) -> bool:
        """SubJobOrderFn: first non-zero answer, then the match index, then the UID."""
        for fn in self.callbacks(SUBJOB_ORDER):
            c = fn(left, right)
            if c != 0:
                return c < 0
        if left.match_index != right.match_index:
            return left.match_index < right.match_index
        return left.uid < right.uid

    # --- predicates ----------------------------------------------------------------------------
    def pre_predicate(self, task: TaskInfo) -> str | None:
        """First error wins."""
        for fn in self.callbacks(PRE_PREDICATE):
            err = fn(task)
            if err:
                return err
        return None

    # --- victims: intersection inside a tier, first tier with an answer wins -------------------
    def _victims(self, point: Point[VictimsFn] | Point[UnifiedEvictableFn], actor: Any,
                 candidates: list[TaskInfo]) -> list[TaskInfo]:
        """``actor``: the task (preemptable, reclaimable) or the EvictionContext (unified_evictable)."""
        for tier in self._tiers(point):  # type: ignore[misc]  # one walk for both kinds of victim callback
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
        return self._victims(PREEMPTABLE, preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(RECLAIMABLE, reclaimer, reclaimees)

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims of the gang actions: as ``preemptable`` (intersection in a tier, first tier with
        an answer wins), every registered plugin asked."""
        return self._victims(UNIFIED_EVICTABLE, ctx, candidates)

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Union inside a tier; the first tier with a non-empty set wins. Then every VictimFilter
        (pumice: PodDisruptionBudgets) keeps what may really go."""
        victims: list[TaskInfo] = []
        for tier in self._tiers(VICTIM_TASKS):
            found: dict[str, TaskInfo] = {}
            for _, fn in tier:
                for t in fn(tasks):
                    found[t.uid] = t
            if found:
                victims = list(found.values())
                break
        for keep in self.callbacks(VICTIM_FILTER):
            if not victims:
                break
            victims = keep(victims)
        return victims

    # --- queue gates ----------------------------------------------------------------------------
    def overused(self, queue: QueueInfo) -> bool:
        """OR over plugins."""
        return any(fn(queue) for fn in self.callbacks(OVERUSED))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AND over plugins."""
        for fn in self.callbacks(ALLOCATABLE):  # noqa: SIM110 - hot path, no generator
            if not fn(queue, task):
                return False
        return True

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AND over plugins: may this queue take resources back for ``task``?"""
        return all(fn(queue, task) for fn in self.callbacks(PREEMPTIVE))

    # --- job predicates ----------------------------------------------------------------------
    def job_valid(self, job: JobInfo) -> str | None:
        """The first failing plugin's reason, or None."""
        for fn in self.callbacks(JOB_VALID):
            err = fn(job)
            if err:
                return err
        return None

    def job_ready(self, job: JobInfo) -> bool:
        """AND over plugins."""
        for fn in self.callbacks(JOB_READY):  # noqa: SIM110 - hot path, no generator
            if not fn(job):
                return False
        return True

    def _vote(self, point: Point[Callable[[T], int]], subject: T) -> bool:
        """Reject anywhere: false; a permit in a tier: true; all abstain: true."""
        for tier in self._tiers(point):
            permitted = False
            for _, fn in tier:
                res = fn(subject)
                if res < 0:
                    return False
                if res > 0:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote(JOB_PIPELINED, job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote(JOB_ENQUEUEABLE, job)

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self.callbacks(JOB_ENQUEUED):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """AND inside the first tier that has any function; false if none has."""
        for tier in self._tiers(JOB_STARVING):
            if not tier:
                continue
            return all(fn(job) for _, fn in tier)
        return False

    # --- SubJobs (for jobs with a subGroupPolicy) and HyperNodes -----------------------------------
    def subjob_ready(self, subjob: SubJob) -> bool:
        """AND over plugins."""
        return all(fn(subjob) for fn in self.callbacks(SUBJOB_READY))

    def subjob_pipelined(self, subjob: SubJob) -> bool:
        """A vote, as ``job_pipelined``."""
        return self._vote(SUBJOB_PIPELINED, subjob)

    def hypernode_gradients(self, request: SearchRequest, root: HyperNodeInfo,
                            purpose: str) -> list[list[HyperNodeInfo]]:
        """The first enabled HyperNodeGradientFn answers; without one the search root is the only candidate."""
        for fn in self.callbacks(HYPERNODE_GRADIENT):
            return fn(request, root, purpose) or []
        return [[root]]

    def hypernode_scores(self, subjob: SubJob, candidates: list[HyperNodeInfo]) -> dict[str, float]:
        """Σ over enabled HyperNodeOrderFns (Volcano ``PrioritizeHyperNodes``)."""
        total = {hn.name: 0.0 for hn in candidates}
        for fn in self.callbacks(HYPERNODE_ORDER):
            for name, score in fn(subjob, candidates).items():
                if name in total:
                    total[name] += score
        return total

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
            self.on_bind(task.key, node, self.bind_annotations.get(task.key))

    def record_eviction(self, task: TaskInfo) -> None:
        self.evictions.append(task.key)
