"""``Components``: pumice's parts on a shared store in wall time, each in a thread of its own (``pumice run``).

Volcano runs its scheduler and its controller manager as separate processes; here each component is a
thread over the same store (and so the same informer caches):

* ``scheduler`` — the ``SchedulerLoop`` every ``period`` seconds when something changed (Volcano's
  ``schedulePeriod``), creating the ``root`` and ``default`` queues first as Volcano's scheduler does; its
  configuration file (``ConfFile``) is re-read when it changes;
* ``controllers`` — the ``ControllerManager`` (Job, PodGroup, Queue, GC, HyperNode);
* ``nodes`` — ``FakeNodes``, the kubelets of the nodes annotated ``kwok.x-k8s.io/node: fake``;
* ``descheduler`` — the load-aware ``Descheduler`` every ``deschedulingInterval``, on the node metrics of the
  metrics API (``metrics.k8s.io``), or of the fake nodes when they run in this process.

Node metrics for the scheduler (its ``usage`` plugin) follow the configuration's ``metrics`` section: ``type:
kubernetes`` reads the metrics API, ``type: simulated`` the fake nodes run here; without one, none (Volcano's
scheduler collects nothing without it).

With ``leader_elect`` each component first acquires its own Lease (``vc-scheduler``, ``vc-controller-manager``,
``pumice-kwok``: replicas with different components do not exclude each other) and the process gives up when
it loses one (``lost``), as Volcano's and kube-scheduler's do, so a replica cut off never acts alongside its
successor.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pumice.clock import Clock, WallClock
from pumice.store import Store, StoreError

from .leader import LeaderElector

if TYPE_CHECKING:
    from .schedconf import ConfFile

__all__ = ["COMPONENTS", "DEFAULT_COMPONENTS", "LEASE_NAMES", "Components", "RunSettings"]

log = logging.getLogger("pumice.run")

COMPONENTS = ("scheduler", "controllers", "admission", "nodes", "descheduler")
DEFAULT_COMPONENTS = ("scheduler", "controllers", "admission")
LEASE_NAMES = {"scheduler": "vc-scheduler", "controllers": "vc-controller-manager", "nodes": "pumice-kwok",
               "descheduler": "vc-descheduler"}
#: Longest sleep of a component between two looks at the store (wall seconds).
MAX_IDLE = 1.0
#: Shortest pause between two looks: a burst of watch events is taken in one go, not one wake-up per event.
MIN_PAUSE = 0.02
#: Stopping (SIGTERM): how long the components get to finish their current step, then how long the Leases
#: get to be released (as client-go's ``release``, bounded): with the scheduler's status writes (5 s) and the
#: store's flush, ``pumice run`` is gone well within a pod's 30 s grace period even when the API server has
#: stopped answering.
STOP_STEPS = 5.0
STOP_RELEASE = 5.0


@dataclass
class RunSettings:
    """What to run and how (see ``pumice run``)."""

    components: tuple[str, ...] = ("scheduler", "controllers")
    scheduler_names: tuple[str, ...] = ("volcano",)
    conf_file: ConfFile | None = None
    discovery: Any = None
    leader_elect: bool = False
    lock_namespace: str = "volcano-system"
    identity: str | None = None
    period: float = 1.0
    time_scale: float = 1.0
    elector_options: dict[str, float] = field(default_factory=dict)
    #: A ``pumice.metrics.SchedulerMetrics`` the scheduler records every cycle into (None: not recorded).
    metrics: Any = None
    #: ``get_json(path)`` on the cluster's API server, for the metrics API (None: no metrics API).
    get_json: Callable[[str], Any] | None = None
    #: The descheduler's policy (``pumice.descheduler.DeschedulerPolicy``; None: Volcano's defaults).
    descheduler: Any = None


class Components:
    """The components of ``settings`` on ``store`` and ``clock``; ``start()``, then ``wait()``/``stop()``."""

    def __init__(self, store: Store, clock: Clock, settings: RunSettings) -> None:
        unknown = [c for c in settings.components if c not in COMPONENTS or c == "admission"]
        if unknown:  # admission is a webhook server of its own (pumice.webhooks), started beside these
            raise ValueError(f"component {unknown[0]!r} cannot run here (components: scheduler, controllers, nodes, "
                             "descheduler)")
        self.store = store
        self.clock = clock
        self.settings = settings
        self.stopping = threading.Event()
        self.done = threading.Event()  # set when stopping, or when a component failed or lost its Lease
        self.failure: str | None = None
        self.lost: str | None = None
        self.cycles = 0
        self.scheduler: Any = None
        self.controllers: Any = None
        self.nodes: Any = None
        self.descheduler: Any = None
        self._nodes_ready = threading.Event()  # set once the fake nodes' kubelet exists (their metrics)
        self.electors: dict[str, LeaderElector] = {}
        self._wakes: dict[str, threading.Event] = {c: threading.Event() for c in settings.components}
        self._threads: list[threading.Thread] = []
        self._listening = callable(getattr(store, "add_listener", None))

    # --- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> Components:
        if self._listening:
            self.store.add_listener(self._poke)  # type: ignore[attr-defined]
        runners: dict[str, Callable[[], None]] = {"scheduler": self._run_scheduler,
                                                   "controllers": self._run_controllers, "nodes": self._run_nodes,
                                                   "descheduler": self._run_descheduler}
        for component in self.settings.components:
            thread = threading.Thread(target=self._guard, args=(component, runners[component]),
                                      name=f"pumice-{component}", daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    def _poke(self) -> None:
        for wake in self._wakes.values():
            wake.set()

    def _guard(self, component: str, body: Callable[[], None]) -> None:
        try:
            body()
        except Exception as err:
            if not self.stopping.is_set():
                self.failure = f"{component}: {type(err).__name__}: {err}"
                log.exception("%s stopped", component)
                self.done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Until stopping, a failure or a lost Lease (``timeout``: at most that long); True when done."""
        if self.done.wait(timeout):
            return True
        self._check_leases()
        return self.done.is_set()

    def _check_leases(self) -> None:
        """A Lease not renewed within its renew deadline is lost now, not when the renewal that hangs on an
        API server that stopped answering gives up (client-go bounds each renewal by the deadline)."""
        for component, elector in list(self.electors.items()):
            if elector.transitions and not elector.leading and not self.stopping.is_set():
                log.error("%s: the lease %s/%s was not renewed within %.0f s", component,
                          self.settings.lock_namespace, LEASE_NAMES[component], elector.renew_deadline)
                self._lose(component)

    def stop(self) -> None:
        """Stop every component, give the Leases up and send the scheduler's status writes, in bounded time."""
        self.stopping.set()
        self.done.set()
        self._poke()
        for elector in self.electors.values():
            elector.halt()  # no more renewals while the components finish
        deadline = time.monotonic() + STOP_STEPS
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        if stuck:
            log.warning("stopping: %s still waiting for the API server after %.0f s; going on", ", ".join(stuck),
                        STOP_STEPS)
        if self._listening:
            with contextlib.suppress(Exception):
                self.store.remove_listener(self._poke)  # type: ignore[attr-defined]
        released_by = time.monotonic() + STOP_RELEASE  # each release is bounded (LeaderElector.stop): one budget
        for elector in self.electors.values():
            elector.stop(release=True, timeout=max(0.0, released_by - time.monotonic()))
        for part in (self.nodes, self.controllers):
            close = getattr(part, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()
        if self.scheduler is not None:
            with contextlib.suppress(Exception):
                self.scheduler.close()  # its status writes in flight are sent
            for informer in self.scheduler.informers.values():
                informer.close()

    # --- helpers ----------------------------------------------------------------------------------------

    def _lead(self, component: str) -> bool:
        """Wait for this component's Lease (with ``leader_elect``); False when stopping first."""
        if not self.settings.leader_elect:
            return True
        options = self.settings.elector_options
        elector = LeaderElector(self.store, LEASE_NAMES[component], self.settings.lock_namespace,
                                self.settings.identity, on_lost=lambda: self._lose(component),
                                lease_duration=options.get("lease_duration", 15.0),
                                renew_deadline=options.get("renew_deadline", 10.0),
                                retry_period=options.get("retry_period", 2.0))
        self.electors[component] = elector
        elector.start()
        log.info("%s: waiting for the lease %s/%s as %s", component, self.settings.lock_namespace,
                 LEASE_NAMES[component], elector.identity)
        while not self.stopping.is_set():
            if elector.wait_leading(0.5):
                log.info("%s: leading", component)
                return True
        return False

    def _lose(self, component: str) -> None:
        self.lost = component
        self.done.set()

    def leading(self, component: str) -> bool:
        elector = self.electors.get(component)
        return elector is None or elector.leading

    def _sleep(self, component: str, seconds: float, *, wakeable: bool = True) -> None:
        """Sleep ``seconds`` (at most ``MAX_IDLE``), or until the store changes when ``wakeable``."""
        seconds = max(MIN_PAUSE, min(MAX_IDLE, seconds))
        if not self._listening:
            seconds = min(seconds, 0.05)
        self.stopping.wait(MIN_PAUSE)
        wake = self._wakes[component]
        if wakeable:
            wake.wait(seconds - MIN_PAUSE)
        else:
            self.stopping.wait(seconds - MIN_PAUSE)
        wake.clear()

    def _wall(self, cluster_seconds: float) -> float:
        return cluster_seconds / self.settings.time_scale

    # --- components -------------------------------------------------------------------------------------

    def _run_scheduler(self) -> None:
        from pumice.controllers.queue import ensure_default_queues
        from pumice.scheduler.loop import SchedulerLoop

        from .schedconf import live_default_conf

        if not self._lead("scheduler"):
            return
        settings = self.settings
        while not self.stopping.is_set():  # Volcano retries the default queues until they exist
            try:
                ensure_default_queues(self.store)
                break
            except StoreError as err:
                log.warning("scheduler: default queues not created yet: %s", err.message)
                self.stopping.wait(1.0)
        prefetch = getattr(self.store, "prefetch", None)
        started = time.monotonic()
        if callable(prefetch):  # the scheduler's informers listed together, not one after the other
            from pumice.scheduler.loop import WATCHED

            prefetch(WATCHED)
        log.info("scheduler: caches filled in %.2f s", time.monotonic() - started)
        conf = settings.conf_file.conf if settings.conf_file is not None else live_default_conf()
        # the scheduler's timestamps (events, conditions) are the API server's: real time, whatever the time scale
        loop = self.scheduler = SchedulerLoop(self.store, conf, WallClock(), metrics=settings.metrics,
                                                    scheduler_names=settings.scheduler_names,
                                                    metrics_source=self._metrics_source(conf))
        last = -math.inf
        polled = time.monotonic()
        while not self.stopping.is_set():
            if not self.leading("scheduler"):
                return
            now = time.monotonic()
            if settings.conf_file is not None and now - polled >= 1.0:
                polled = now
                fresh = settings.conf_file.poll()
                if fresh is not None:
                    loop.conf = fresh
            loop.sync()
            wait, wakeable = MAX_IDLE, True
            measured = loop.metrics_due()  # pods wait and node metrics are read: a cycle when fresh ones are due
            if loop.has_work() or (measured is not None and time.time() >= measured):
                due = last + settings.period
                wakeable = False  # the next cycle is due at a time: more events until then change nothing
                if now >= due:
                    outcome = loop.run_once()
                    self.cycles += 1
                    last = time.monotonic()
                    if outcome.binds or outcome.evictions:
                        stats = getattr(outcome, "stats", None)
                        session = float(getattr(stats, "seconds", 0.0) or 0.0)
                        log.info("scheduler: cycle %d: %d binds, %d evictions; session %.2f s, cycle %.2f s",
                                 self.cycles, len(outcome.binds), len(outcome.evictions), session, last - now)
                    wait = settings.period
                else:
                    wait = due - now
            self._sleep("scheduler", wait, wakeable=wakeable)

    def _run_controllers(self) -> None:
        from pumice.controllers import ControllerManager
        from pumice.federation.fence import add_fence_agent

        if not self._lead("controllers"):
            return
        manager = self.controllers = ControllerManager(self.store, self.clock, kubernetes=False,
                                                     discovery=self.settings.discovery)
        # a federation member fences its jobs, counting the lease in real seconds whatever --time-scale says
        add_fence_agent(manager, self.store, self.clock, lease_clock=WallClock(), scale=self.settings.time_scale)
        while not self.stopping.is_set():
            if not self.leading("controllers"):
                return
            manager.sync()
            nxt = manager.next_wakeup()
            self._sleep("controllers", MAX_IDLE if nxt is None else self._wall(nxt - self.clock.now()))

    def _metrics_source(self, conf: Any) -> Any:
        """The scheduler's node metrics, by its configuration's ``metrics.type`` (see the module doc)."""
        kind = conf.metrics.type if conf.metrics is not None else ""
        if kind == "kubernetes":
            return self._api_metrics()
        if kind == "simulated":
            if "nodes" not in self.settings.components:
                raise ValueError("metrics.type simulated: the fake nodes must run in this process (--components "
                                 "...,nodes)")
            return _Deferred(self)
        return None

    def _api_metrics(self) -> Any:
        from pumice.node_metrics import KubernetesMetricsSource

        if self.settings.get_json is None:
            raise ValueError("the metrics API needs a connection to the cluster's API server")
        return KubernetesMetricsSource(self.settings.get_json)

    def _run_descheduler(self) -> None:
        from pumice.descheduler import Descheduler

        if not self._lead("descheduler"):
            return
        source = _Deferred(self) if "nodes" in self.settings.components else self._api_metrics()
        part = self.descheduler = Descheduler(self.store, self.clock, source, self.settings.descheduler,
                                              scheduler_names=self.settings.scheduler_names)
        while not self.stopping.is_set():
            if not self.leading("descheduler"):
                return
            part.sync()
            self._sleep("descheduler", self._wall(part.next_wakeup() - self.clock.now()), wakeable=False)

    def _run_nodes(self) -> None:
        from pumice.nodes.kwok import FakeNodes

        if not self._lead("nodes"):
            return
        nodes = self.nodes = FakeNodes(self.store, self.clock)
        self._nodes_ready.set()
        while not self.stopping.is_set():
            if not self.leading("nodes"):
                return
            nodes.sync()
            nxt = nodes.next_wakeup()
            self._sleep("nodes", MAX_IDLE if nxt is None else self._wall(nxt - self.clock.now()))


class _Deferred:
    """The fake nodes' metrics, once their kubelet exists (components start in threads of their own)."""

    def __init__(self, parts: Components) -> None:
        self.parts = parts

    def node_metrics(self, now: float) -> Any:
        if not self.parts._nodes_ready.is_set() or self.parts.nodes is None:
            return {}
        return self.parts.nodes.node_metrics(now)
