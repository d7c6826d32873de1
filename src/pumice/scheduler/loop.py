"""The scheduler as a client of a store: watch objects, run a session, write decisions back.

One ``run_once`` is one Volcano cycle: bring the informer cache up to date from watch events, run
a session on it, then bind, evict and write PodGroup and Queue status through the store. The
scheduler never creates pods.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any

from pumice.api.resources import PODGROUPS, QUEUES, SCHEDULER_WATCHED
from pumice.api.wellformed import screened
from pumice.clock import Clock
from pumice.events import EventRecorder
from pumice.node_metrics import DEFAULT_INTERVAL, MetricsPoller, MetricsSource, NodeUsage
from pumice.scheduler import SchedulerConf, SessionOutcome, default_conf, run_session
from pumice.scheduler.live import LiveCache
from pumice.store import Gone, Store, StoreError

#: Status writes in flight at once on a store whose writes are requests (Volcano's ``jobUpdaterWorker``).
STATUS_WORKERS = 16
#: How long a stopping scheduler waits for its status writes in flight.
CLOSE_TIMEOUT = 5.0

#: What the scheduler watches, in the order a session needs them.
WATCHED = SCHEDULER_WATCHED
#: Watched when a configured plugin reads them (``pdb``); a server that does not serve them is left alone.
OPTIONAL: dict[str, str] = {"poddisruptionbudgets.policy": "pdb", "numatopologies.nodeinfo.volcano.sh": "numa-aware"}

log = logging.getLogger("pumice.scheduler")
#: Plugins that read measured node usage: without one of them (and without a ``metrics`` section) it is not asked.
USAGE_READERS = frozenset({"usage"})


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class Informer:
    """A list+watch mirror of one resource; on 410 Gone it lists again (deletions included).

    Every change is also handed to ``on_event(type, object)`` (the scheduler's live cache).
    """

    def __init__(self, store: Store, resource: str, on_event: Callable[[str, dict[str, Any]], None]) -> None:
        self.store = store
        self.resource = resource
        self.on_event = on_event
        self.objects: dict[str, dict[str, Any]] = {}
        self.version = 0  # bumped on every change, so callers can tell whether anything moved
        self._relist()

    def _relist(self) -> None:
        items, rv = self.store.list(self.resource, copy=False)  # kept, never changed
        fresh = {_key(o): o for o in items}
        for key, obj in self.objects.items():
            if key not in fresh:
                self.on_event("DELETED", obj)
        for obj in fresh.values():
            self.on_event("MODIFIED", obj)
        self.objects = fresh
        self.version += 1
        self.watch = self.store.watch(self.resource, resource_version=rv)

    def sync(self) -> bool:
        """Apply pending events; True if anything changed."""
        try:
            events = self.watch.drain()
        except Gone:
            self.watch.close()
            self._relist()
            return True
        for ev in events:
            if ev.type == "BOOKMARK":
                continue
            key = _key(ev.object)
            if ev.type == "DELETED":
                self.objects.pop(key, None)
            else:
                self.objects[key] = ev.object
            self.on_event(ev.type, ev.object)
        if events:
            self.version += 1
        return bool(events)

    def close(self) -> None:
        self.watch.close()


class SchedulerLoop:
    """``scheduler_names``: the pods it schedules (``spec.schedulerName``, Volcano's ``--scheduler-name``).

    Events are recorded as Volcano's scheduler records them (``events``: an ``EventRecorder``, or None for
    none): ``Scheduled`` on each pod bound, ``FailedScheduling`` when a pod's unschedulable reason changes,
    ``Unschedulable`` / ``Scheduled`` on PodGroups as their condition changes; ``pod_events=False`` keeps only
    the PodGroups' (a simulation has no reader for one Event per pod).
    """

    def __init__(self, store: Store, conf: SchedulerConf | None = None, clock: Clock | None = None,
                 metrics: Any = None, *, scheduler_names: tuple[str, ...] = ("volcano",),
                 events: EventRecorder | bool | None = True, pod_events: bool = True,
                 metrics_source: MetricsSource | None = None) -> None:
        self.store = store
        #: A ``pumice.metrics.SchedulerMetrics`` that every cycle is recorded into (None: not recorded).
        self.metrics = metrics
        self._conf = conf or default_conf()
        self.clock = clock
        self.cache = LiveCache(tuple(scheduler_names), on_rejected=self._rejected, screen=screened(store))
        self.recorder: EventRecorder | None = (EventRecorder(store, "volcano", clock=clock) if events is True
                                               else events or None)
        self.pod_events = pod_events
        self.informers = {r: Informer(store, r, self.cache.apply) for r in WATCHED}
        self._unwatched: set[str] = set()  # optional kinds the store refused to watch (told once)
        self._watch_optional()
        self.last: SessionOutcome | None = None
        #: PodGroup key -> (resourceVersion, what was written) of the last status write-back.
        self._written: dict[str, tuple[Any, ...]] = {}
        self._seen_versions: tuple[int, ...] = ()
        self._changes = store.change_marker
        self._synced_version: object = None
        self._dispatched: dict[str, bool] = {}  # pod key -> bind sent during the session (True) or refused
        self._pool: ThreadPoolExecutor | None = None
        #: Status writes handed to the pool and not yet settled, by (resource, object key) (see ``_each``).
        self._writing: dict[tuple[str, str], Future[Any]] = {}
        #: Node usage from ``metrics_source`` (Volcano's metrics collection), asked once per metrics interval.
        self.node_metrics = MetricsPoller(metrics_source) if metrics_source is not None else None
        self._node_usage: NodeUsage | None = None

    def sync(self) -> bool:
        if self._writing:
            self._settle(wait=False)
        # Every watch event is a write, and every write moves the store's change marker (after its
        # event is published): when it has not moved since the last sync, there is nothing to drain.
        version = self._changes()
        if version == self._synced_version:
            return False
        changed = False
        for inf in self.informers.values():
            changed |= inf.sync()
        self._synced_version = version
        return changed

    def has_work(self) -> bool:
        """Anything pending to place, or anything changed since the last session."""
        versions = tuple(inf.version for inf in self.informers.values())
        return versions != self._seen_versions

    @property
    def conf(self) -> SchedulerConf:
        return self._conf

    @conf.setter
    def conf(self, conf: SchedulerConf) -> None:
        """A new configuration (a re-read file): the objects its plugins read are watched from now on."""
        self._conf = conf
        self._watch_optional()

    def _watch_optional(self) -> None:
        """Watch what the configured plugins read beyond pods, groups, queues and nodes (PodDisruptionBudgets,
        Numatopologies); a kind the API server does not serve is told once, and the plugin sees none."""
        named = {opt.name for tier in self._conf.tiers for opt in tier.plugins}
        for resource, plugin in OPTIONAL.items():
            if plugin in named and resource not in self.informers:
                try:
                    self.informers[resource] = Informer(self.store, resource, self.cache.apply)
                except StoreError as err:
                    if resource not in self._unwatched:
                        self._unwatched.add(resource)
                        log.warning("%s: %s cannot be watched (%s); the plugin sees none", plugin, resource,
                                    getattr(err, "message", err))

    def objects(self) -> list[dict[str, Any]]:
        return [o for inf in self.informers.values() for o in inf.objects.values()]

    def run_once(self) -> SessionOutcome:
        start = time.perf_counter()
        self.sync()
        now = self.clock.now() if self.clock is not None else time.time()
        # a store that pipelines binds (a real API server) gets each bind as the session commits it, as Volcano
        # dispatches them; the embedded stores get them with the rest of the write-back, in one go
        self._dispatched = {}
        on_bind = self._bind if getattr(self.store, "pipelines_binds", False) else None
        state = self.cache.state()
        state.node_usage = self._measured(now)
        outcome = run_session(state, self.conf, revert=True, now=now, on_bind=on_bind)
        # a cycle's writes in one transaction where the store has them: one durable commit for all its binds,
        # evictions and status, not one each, so that on a store that syncs to disk the scheduler keeps its pace
        # under a busy API (issue 15); a failure rolls them all back, and the next cycle decides again
        batch = getattr(self.store, "batch", None)
        with batch() if callable(batch) else contextlib.nullcontext():
            bind_errors = self._write_back(outcome)
        self.cache.reported()
        self.sync()
        # The session's own writes are seen, so that a quiet cluster costs no cycle; but room freed by its
        # evictions is for the next session (Volcano's next period) to place the pods waiting for it
        # (the reclaiming queue's pipelined pods): that is work, though nothing else moves.
        self._seen_versions = () if outcome.evictions else tuple(inf.version for inf in self.informers.values())
        self.last = outcome
        if self.metrics is not None:
            pods = self.informers["pods"].objects
            created = [pod["metadata"].get("creationTimestamp") or "" for key in outcome.binds
                       if (pod := pods.get(key)) is not None]
            self.metrics.record_cycle(outcome, time.perf_counter() - start, bind_errors=bind_errors,
                                      bound_created=created, now=now)
        return outcome

    def metrics_due(self) -> float | None:
        """When fresh node metrics may place what the last session left waiting (None: no pods wait, or no
        metrics are read): a cluster whose objects do not move still gets a session then, as Volcano's runs
        every period."""
        last = self.last
        if self._node_usage is None or self.node_metrics is None or last is None or not last.pending_pods:
            return None
        return self.node_metrics.next_due()

    def _measured(self, now: float) -> NodeUsage | None:
        """The nodes' latest metrics (asked of the source when the metrics interval has passed)."""
        poller = self.node_metrics
        if poller is None or (self.conf.metrics is None and not self.conf.names_any(USAGE_READERS)):
            return None  # nothing reads it: not measured
        poller.interval = self.conf.metrics.interval if self.conf.metrics is not None else DEFAULT_INTERVAL
        latest = poller.poll(now)
        usage = self._node_usage
        if usage is None or usage.version != poller.version or usage.interval != poller.interval:
            usage = self._node_usage = NodeUsage(dict(latest), poller.interval, poller.version)
        return usage

    # --- write-back ---------------------------------------------------------------------------
    def _bind(self, pod: str, node: str, annotations: dict[str, str] | None = None) -> None:
        """Send one bind now (after the annotations a plugin asked for); remembered (True: sent, False:
        refused) so that the write-back skips it."""
        ns, name = pod.split("/", 1)
        try:
            if annotations:
                self.store.patch("pods", ns, name, {"metadata": {"annotations": annotations}}, copy=False)
            self.store.bind(ns, name, node, copy=False)
        except StoreError:  # deleted or bound meanwhile: take the store's word for it
            self._dispatched[pod] = False
            return
        self._dispatched[pod] = True

    def _each(self, resource: str, write: Callable[[Any], Any], items: list[Any]) -> None:
        """``write(item)`` for each item (``item[0]``: the object's key): in order here, or, on a store whose writes
        are requests to an API server, by ``STATUS_WORKERS`` threads (as Volcano's job updater writes PodGroup
        statuses, 16 at a time) while the loop goes on: the store sends them after the cycle's binds, and a cycle
        that waited for them would leave the pods that arrive meanwhile waiting as long. An object whose last
        write is still in flight is left for a later cycle (``busy``), so that its writes stay in order. A write
        returns None, or a pod and the message of the ``FailedScheduling`` event to record once it is written
        (by ``_settle``, on this thread)."""
        if not getattr(self.store, "pipelines_binds", False):
            for item in items:
                self._record_failed(write(item))
            return
        if not items:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(STATUS_WORKERS, thread_name_prefix="status-writer")
        for item in items:
            self._writing[(resource, item[0])] = self._pool.submit(write, item)

    def busy(self, resource: str, key: str) -> bool:
        """A status write of this object is in flight."""
        return (resource, key) in self._writing

    def _settle(self, *, wait: bool, timeout: float | None = None) -> None:
        """Take the answers of the status writes in flight: all of them (``wait``, up to ``timeout``), else those
        already answered."""
        if wait:
            futures_wait(self._writing.values(), timeout)
        done = [(k, f) for k, f in self._writing.items() if f.done()]
        for key, future in done:
            del self._writing[key]
            if not future.cancelled():  # cancelled by ``close``: nothing was written
                self._record_failed(future.result())

    def _record_failed(self, written: tuple[dict[str, Any], str] | None) -> None:
        if written is not None and self.recorder is not None and self.pod_events:
            self.recorder.event(written[0], "Warning", "FailedScheduling", written[1])

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Wait (up to ``timeout``: a server that does not answer must not hold a stopping scheduler) for the status
        writes in flight, and stop the writers (the informers stay open)."""
        self._settle(wait=True, timeout=timeout)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _write_back(self, outcome: SessionOutcome) -> int:
        """Write the session's decisions; returns how many binds failed."""
        store = self.store
        self._settle(wait=False)
        # write results are only read (``copy=False``: the store may hand back its own objects); the status
        # patches below are built for the store and never touched again: handed over (``owned=True``)
        for pod_key in outcome.evictions:
            ns, name = pod_key.split("/", 1)
            try:
                store.delete("pods", ns, name, copy=False)
            except StoreError:  # already gone: the watch says so
                self.cache.resync("Pod", pod_key)
        recorder = self.recorder
        pod_recorder = recorder if self.pod_events else None
        pods = self.informers["pods"].objects
        dispatched = self._dispatched
        bind_errors = 0
        for bound, node in outcome.binds.items():
            sent = dispatched.get(bound)
            if sent is None:
                ns, name = bound.split("/", 1)
                try:
                    annotations = outcome.pod_annotations.get(bound)
                    if annotations:
                        store.patch("pods", ns, name, {"metadata": {"annotations": annotations}}, copy=False)
                    store.bind(ns, name, node, copy=False)
                    sent = True
                except StoreError:
                    sent = False
            if not sent:  # deleted or bound meanwhile: take the store's word for it
                bind_errors += 1
                self.cache.resync("Pod", bound)
                continue
            if pod_recorder is not None and bound in pods:
                pod_recorder.event(pods[bound], "Normal", "Scheduled", f"Successfully assigned {bound} to {node}")
        pgs = self.informers[PODGROUPS].objects
        jobs = {j.key: j for j in outcome.jobs}
        written = self._written
        pg_writes: list[tuple[str, dict[str, Any], tuple[Any, ...]]] = []
        for key, status in outcome.podgroups.items():
            pg = pgs.get(key)
            if pg is None or self.busy(PODGROUPS, key):
                continue
            job = jobs.get(key)
            # what this cycle would write, and the version it would write it over: when both equal
            # the last cycle's, the PodGroup is as we left it
            signature = (pg["metadata"].get("resourceVersion"), status["phase"], status["running"],
                         status["succeeded"], status["failed"], job.reason if job is not None else "",
                         job is not None and bool(job.tasks) and job.ready >= job.min_available)
            if written.get(key) == signature:
                continue
            written[key] = signature
            old = pg.get("status") or {}
            new = {"phase": status["phase"], "running": status["running"],
                   "succeeded": status["succeeded"], "failed": status["failed"]}
            reason = job.reason if job is not None else ""
            conditions = [c for c in old.get("conditions") or [] if c.get("type") not in ("Unschedulable", "Scheduled")]
            if reason:
                cond = _condition(reason)
            elif job is not None and job.tasks and job.ready >= job.min_available:
                cond = _condition("")
            else:  # nothing new to say (e.g. admitted, pods not created yet): keep what was there
                kept = [c for c in old.get("conditions") or [] if c.get("type") in ("Unschedulable", "Scheduled")]
                cond = kept[0] if kept else {}
            if cond:
                conditions.append(cond)
            new["conditions"] = conditions
            cond_changed = bool(cond) and _cond_changed(old, cond)
            if cond_changed and recorder is not None:
                if reason:
                    recorder.event(pg, "Warning", "Unschedulable", reason)
                else:
                    recorder.event(pg, "Normal", "Scheduled", "pod group is ready")
            if any(old.get(k) != v for k, v in new.items() if k != "conditions") or cond_changed:
                pg_writes.append((key, new, signature))

        def write_pg(item: tuple[str, dict[str, Any], tuple[Any, ...]]) -> None:
            key, new, signature = item
            ns, name = key.split("/", 1)
            try:
                patched = store.patch(PODGROUPS, ns, name, {"status": new}, subresource="status", copy=False,
                                      owned=True)
            except StoreError:
                written.pop(key, None)
            else:
                written[key] = (patched["metadata"].get("resourceVersion"), *signature[1:])

        self._each(PODGROUPS, write_pg, pg_writes)
        pod_writes: list[tuple[str, dict[str, Any], list[dict[str, Any]], str]] = []
        for key, message in outcome.pending_pods.items():
            pending = pods.get(key)
            if pending is None or self.busy("pods", key):
                continue
            status = pending.get("status") or {}
            cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
            others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            current = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
            if current is not None and all(current.get(k) == v for k, v in cond.items()):
                continue
            pod_writes.append((key, pending, [*others, cond], message))

        def write_pod(item: tuple[str, dict[str, Any], list[dict[str, Any]], str]
                      ) -> tuple[dict[str, Any], str] | None:
            key, target, conditions, message = item
            ns, name = key.split("/", 1)
            try:
                store.patch("pods", ns, name, {"status": {"conditions": conditions}}, subresource="status",
                            copy=False, owned=True)
            except StoreError:
                return None
            return target, message  # its event is recorded on the loop's thread: the recorder is not thread-safe

        self._each("pods", write_pod, pod_writes)
        queues = self.informers[QUEUES].objects
        queue_writes = [(name, allocated) for name, allocated in outcome.queue_allocated.items()
                        if (q := queues.get(name)) is not None and not self.busy(QUEUES, name)
                        and (q.get("status") or {}).get("allocated", {}) != allocated]

        def write_queue(item: tuple[str, dict[str, Any]]) -> None:
            name, allocated = item
            with contextlib.suppress(StoreError):
                store.patch(QUEUES, None, name, {"status": {"allocated": allocated or None}}, subresource="status",
                            copy=False)

        self._each(QUEUES, write_queue, queue_writes)
        return bind_errors


    def _rejected(self, obj: dict[str, Any], problem: str) -> None:
        """An object the scheduler cannot read: said once (a log line and a Warning event on it), then skipped."""
        meta = obj.get("metadata") or {}
        name = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
        log.warning("skipping %s %s: %s", obj.get("kind"), name, problem)
        if self.recorder is not None:
            self.recorder.event(obj, "Warning", "Malformed", f"skipped by the scheduler: {problem}")


def _condition(reason: str) -> dict[str, Any]:
    if reason:
        return {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": reason}
    return {"type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled",
            "message": ""}


def _cond_changed(old: dict[str, Any], cond: dict[str, Any]) -> bool:
    for c in old.get("conditions") or []:
        if c.get("type") == cond["type"]:
            return bool(c.get("message") != cond["message"] or c.get("status") != cond["status"])
    return True
