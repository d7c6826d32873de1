"""``Cluster``: one embedded cluster assembled from parts, driven in virtual (or real) time.

Store (with admission when available) + controllers + scheduler loop + simulated kubelets. A
``step()`` lets every part react to what the others wrote, until nothing moves; ``run_until(t)``
jumps a virtual clock from one wake-up to the next (kubelet timers, controller timeouts, the
scheduling period), so an idle hour costs nothing. The scheduler runs at most once per period, and
only when something it watches changed since its last cycle, as Volcano's would find nothing new.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from pumice.clock import Clock, VirtualClock, WallClock, rfc3339, to_datetime
from pumice.controllers import ControllerManager
from pumice.descheduler import Descheduler, DeschedulerPolicy
from pumice.metrics import ClusterMetrics
from pumice.nodes import SimulatedKubelet
from pumice.scheduler import SchedulerConf
from pumice.scheduler.loop import SchedulerLoop
from pumice.store import (
    DEFAULT_HISTORY,
    AlreadyExists,
    MemoryStore,
    NotFound,
    ResourceInfo,
    Store,
)

from .demand import Demand
from .wiring import attach_admission, default_queues, load_admission, resource_for

__all__ = ["MAX_ROUNDS", "Cluster"]

#: How many react-to-each-other rounds one step may take before it is declared a livelock.
MAX_ROUNDS = 10_000
#: With the scheduler apart (``schedule_apart``): rounds of one step, after which it returns to its caller (the
#: store of a live control plane never stops moving while clients write).
APART_ROUNDS = 32


class _Moments:
    """A ``Clock``'s time as the store reads it (a datetime, or its RFC 3339 text), made once per instant: a virtual
    clock stands still through the many writes of a step."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last: tuple[float, datetime] | None = None
        self._text: tuple[float, str] = (math.nan, "")

    def __call__(self) -> datetime:
        now = self._clock.now()
        last = self._last
        if last is None or last[0] != now:
            last = self._last = (now, to_datetime(now))
        return last[1]

    def rfc3339(self) -> str:
        """``format_timestamp(self())``, without the datetime."""
        now = self._clock.now()
        text = self._text
        if text[0] != now:
            text = self._text = (now, rfc3339(now))
        return text[1]


class Cluster:
    """An embedded cluster. ``store``/``clock`` default to a fresh ``MemoryStore`` on a ``VirtualClock``."""

    def __init__(
        self,
        store: Store | None = None,
        clock: Clock | None = None,
        conf: SchedulerConf | None = None,
        *,
        period: float = 1.0,
        controllers: bool = True,
        kubernetes_controllers: bool = True,
        seed: int = 0,
        lazy_status: bool | None = None,
        history: int = DEFAULT_HISTORY,
        screen: bool = True,
        metrics: ClusterMetrics | None = None,
        discovery: Any = None,
        descheduler: DeschedulerPolicy | None = None,
    ) -> None:
        self.clock: Clock = clock or VirtualClock()
        if store is None:  # ``history``: how far back a watch of this store can resume (see ``BaseStore``)
            store = MemoryStore(clock=_Moments(self.clock), admission=load_admission(), rng=random.Random(seed),
                                history=history)
            # ``screen=False``: only this process writes the store, from parsed manifests (a simulation), so its
            # parts need not check every object they read (see ``pumice.api.wellformed``)
            store.screened = screen  # type: ignore[attr-defined]
        attach_admission(store)
        self.store: Store = store
        self._changes = store.change_marker  # what moves when the store is written (see ``_settle``)
        self.period = period
        # ``kubernetes_controllers``: kube-controller-manager's part (Deployments...), off where a real one runs;
        # ``discovery``: HyperNodes from node labels (a ``pumice.topology_discovery`` configuration)
        self.controllers = ControllerManager(store, self.clock, kubernetes=kubernetes_controllers,
                                             discovery=discovery) if controllers else None
        if self.controllers is None:
            default_queues(store)
        #: Prometheus metrics of this cluster, in a registry of its own (``pumice.metrics``).
        self.metrics = metrics if metrics is not None else ClusterMetrics(store)
        # per-pod scheduler events (Scheduled, FailedScheduling) for kubectl in real time; a simulation skips them
        self.kubelet = SimulatedKubelet(store, self.clock)
        # node usage: what the simulated kubelet measures of its pods' ``pumice.io/usage`` (``pumice.nodes.meter``)
        self.scheduler = SchedulerLoop(store, conf, clock=self.clock, metrics=self.metrics.scheduler,
                                       pod_events=not isinstance(self.clock, VirtualClock), metrics_source=self.kubelet)
        #: The load-aware descheduler (off unless a policy is given), on the simulated kubelet's node metrics.
        self.descheduler = Descheduler(store, self.clock, self.kubelet, descheduler) if descheduler else None
        #: Defer status-only cycles (see ``Demand``): on by default in virtual time, off in real time.
        self.lazy_status = isinstance(self.clock, VirtualClock) if lazy_status is None else lazy_status
        self.demand = Demand(store)
        self.cycles = 0
        self._apart = False  # see ``schedule_apart``
        self._last_cycle = -math.inf
        self._metrics_wake: tuple[int, float | None] | None = None  # (cycles, when) of ``_metrics_due``
        self._due: tuple[tuple[Any, ...], Any, float | None] | None = None  # scheduler_due: (key, last outcome, due)
        self._kinds: dict[tuple[str, str], ResourceInfo] = {}  # (apiVersion, kind) -> resource, as resource_for
        self._kinds_of = getattr(getattr(store, "resources", None), "generation", None)  # says (until a CRD changes)

    # --- driving --------------------------------------------------------------------------------------------

    def _version(self) -> object:
        return self._changes()

    def schedule_apart(self) -> None:
        """Leave scheduling cycles to another thread, which calls :meth:`schedule`: ``step`` then only moves the
        controllers and kubelets (a bounded number of rounds), so that neither waits for the other, and a busy
        API (clients writing all the time) cannot keep the scheduler from binding (``pumice up``)."""
        self._apart = True

    def schedule(self) -> float | None:
        """With the scheduler apart: run a cycle if one is due now; when the next one is due (None: nothing to
        do until something changes). Call it from one thread only."""
        due = self.scheduler_due()
        if due is not None and due <= self.clock.now():
            self.scheduler.run_once()
            self.cycles += 1
            self._last_cycle = self.clock.now()
            due = self.scheduler_due()
        return due

    def _settle(self) -> bool:
        """Controllers and kubelets until neither writes anything."""
        moved = False
        before = self._version()
        for rounds in range(MAX_ROUNDS):
            if self._apart and rounds >= APART_ROUNDS:
                return True  # others keep writing: the caller steps again
            if self.controllers is not None:
                self.controllers.sync()
            self.kubelet.sync()
            if self.descheduler is not None:
                self.descheduler.sync()
            after = self._version()
            if after == before:
                return moved
            moved = True
            before = after
        raise RuntimeError("controllers and kubelets keep writing: no quiet state reached")

    def scheduler_due(self) -> float | None:
        """When the next scheduling cycle may run: only if something changed since the last one.

        The answer is kept until the store, the clock or the scheduler moves (``next_wakeup`` asks again right
        after ``step`` did, with nothing changed in between).
        """
        key = (self._version(), self.clock.now(), self.cycles, self.lazy_status, self.period)
        known = self._due
        if known is not None and known[0] == key and known[1] is self.scheduler.last:
            return known[2]
        self.scheduler.sync()
        due = None
        if self.scheduler.has_work() and not (self.lazy_status and not self.demand):
            due = max(self.clock.now(), self._last_cycle + self.period)
        elif (measured := self._metrics_due()) is not None:  # pods wait, and the nodes' usage changes
            due = max(self.clock.now(), self._last_cycle + self.period, measured)
        self._due = (key, self.scheduler.last, due)
        return due

    def _metrics_due(self) -> float | None:
        """When the nodes' measured usage next changes enough to matter to pods left waiting: the next step of a
        running pod's usage profile, once the metrics window has seen it and a new reading is due (None: none)."""
        polled = self.scheduler.metrics_due()
        if polled is None:
            return None
        known = self._metrics_wake
        if known is not None and known[0] == self.cycles:
            return known[1]  # decided since the last cycle: it stands until a cycle runs
        meter = self.kubelet.usage
        step = meter.next_step(self.clock.now())
        wake = None if step is None else max(step + meter.window, polled)
        self._metrics_wake = (self.cycles, wake)
        return wake

    def flush(self) -> bool:
        """Run the status-only cycle that ``lazy_status`` deferred, if anything changed; True if it ran."""
        self.step()
        self.scheduler.sync()
        if not self.scheduler.has_work():
            return False
        self.scheduler.run_once()
        self.cycles += 1
        self._last_cycle = self.clock.now()
        self.step()
        return True

    def step(self) -> bool:
        """Everything due now: controllers -> scheduler (when due and there is work) -> kubelets, until quiet."""
        if self._apart:
            return self._settle()
        moved = False
        for _ in range(MAX_ROUNDS):
            moved |= self._settle()
            due = self.scheduler_due()
            if due is None or due > self.clock.now():
                return moved
            before = self._version()
            self.scheduler.run_once()
            self.cycles += 1
            self._last_cycle = self.clock.now()
            if self._version() == before:
                return moved
            moved = True
        raise RuntimeError("the cluster does not settle")

    def next_wakeup(self) -> float | None:
        """The earliest time any part has something to do."""
        first = self.kubelet.next_wakeup()
        scheduler = None if self._apart else self.scheduler_due()
        # the descheduler looks again every interval while pods run (an idle cluster has nothing to move)
        deschedule = self.descheduler.next_wakeup() if self.descheduler is not None and self.kubelet.usage else None
        for due in (scheduler, None if self.controllers is None else self.controllers.next_wakeup(), deschedule):
            if due is not None and (first is None or due < first):
                first = due
        return first

    def run_until(self, t: float, on_step: Callable[[float], None] | None = None) -> None:
        """Advance to time ``t`` (virtual: jumping between wake-ups; wall: sleeping), stepping at each."""
        stuck = 0
        while True:
            self.step()
            now = self.clock.now()
            if on_step is not None:
                on_step(now)
            nxt = self.next_wakeup()
            if nxt is None or nxt > t:
                if now < t:
                    self._advance(t)
                    self.step()
                self.flush()
                return
            stuck = stuck + 1 if nxt <= now else 0
            if stuck > MAX_ROUNDS:
                raise RuntimeError(f"a part keeps asking to wake up at {nxt} without moving")
            self._advance(nxt)

    def run_idle(self, limit: float = math.inf) -> float:
        """Run until nothing is left to do (or ``limit``); returns the time reached."""
        while True:
            self.step()
            nxt = self.next_wakeup()
            if nxt is None or nxt > limit:
                self.flush()
                return self.clock.now()
            self._advance(nxt)

    def _advance(self, t: float) -> None:
        clock = self.clock
        if isinstance(clock, VirtualClock):
            if t > clock.now():
                clock.advance_to(t)
        elif isinstance(clock, WallClock):
            clock.sleep_until(t)
        else:  # pragma: no cover - any other clock moves by itself
            pass

    # --- objects --------------------------------------------------------------------------------------------

    def apply(
        self, objects: Iterable[Mapping[str, Any]], *, copy: bool = True, owned: bool = False
    ) -> list[dict[str, Any]]:
        """Create or update objects as ``kubectl apply`` would (absent: create; present: merge the new body).

        Returns the stored objects: copies, or with ``copy=False`` the store's own, read-only (cheaper).
        ``owned=True`` hands the objects over (see ``Store.create``): for a caller that never touches them,
        nor any part of them, again.
        """
        out: list[dict[str, Any]] = []
        for raw in objects:
            # a wire dict (most often), or a KubeObject
            obj = dict(raw) if type(raw) is dict else dict(raw.to_dict() if hasattr(raw, "to_dict") else raw)
            info = self._resource(obj)
            meta = dict(obj.get("metadata") or {})
            ns = (meta.get("namespace") or "default") if info.namespaced else None
            if ns is not None:
                meta["namespace"] = ns
                obj["metadata"] = meta
            elif owned:
                obj["metadata"] = meta  # the store fills in its system fields: on this copy, not on the caller's
            name = meta.get("name")
            try:  # absent (the usual case): created at once; the store refuses a taken name before any check
                out.append(self.store.create(info.name, obj, copy=copy, owned=owned))
                continue
            except AlreadyExists:
                if not name:
                    raise
            body = {k: v for k, v in obj.items() if k not in ("status", "apiVersion", "kind")}
            body["metadata"] = {k: v for k, v in meta.items() if k in ("labels", "annotations")}
            out.append(self.store.patch(info.name, ns, name, body, copy=copy))
        return out

    def _resource(self, obj: Mapping[str, Any]) -> ResourceInfo:
        """``resource_for(obj)``, remembered per (apiVersion, kind) while the store's custom resources stay."""
        generation = getattr(getattr(self.store, "resources", None), "generation", None)
        if generation != self._kinds_of:
            self._kinds.clear()
            self._kinds_of = generation
        key = (str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        info = self._kinds.get(key)
        if info is None:
            info = self._kinds[key] = resource_for(obj, self.store)
        return info

    def delete(self, objects: Iterable[Mapping[str, Any]]) -> int:
        """Delete objects named by kind/namespace/name (as ``kubectl delete -f``); returns how many existed."""
        count = 0
        for raw in objects:
            obj = dict(raw.to_dict() if hasattr(raw, "to_dict") else raw)
            info = self._resource(obj)
            meta = obj.get("metadata") or {}
            ns = (meta.get("namespace") or "default") if info.namespaced else None
            with contextlib.suppress(NotFound):
                self.store.delete(info.name, ns, str(meta.get("name")))
                count += 1
        return count

    def close(self) -> None:
        self.kubelet.close()
        self.demand.close()
        for inf in self.scheduler.informers.values():
            inf.close()
        close = getattr(self.controllers, "close", None)
        if callable(close):
            close()
