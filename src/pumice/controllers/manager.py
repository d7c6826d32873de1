"""``ControllerManager``: every controller of ``vc-controller-manager`` over one store and one clock, and in an
embedded cluster the controllers of ``kube-controller-manager`` that Volcano's users rely on.

``sync()`` runs the controllers in a fixed order until a whole round writes nothing (bounded, so a
controller that keeps writing cannot hang the caller); ``next_wakeup()`` is the earliest time any of
them needs to act again by the clock (TTLs, policy timeouts), or None.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pumice.api.resources import (
    BATCH_JOBS,
    CRONJOBS,
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    REPLICASETS,
    RESOURCEQUOTAS,
    STATEFULSETS,
)
from pumice.clock import Clock
from pumice.events import EventRecorder
from pumice.store import Store

from .batchjob import BatchJobController
from .cronjob import CronJobController
from .deployment import DeploymentController
from .disruption import DisruptionController
from .dormant import Dormant
from .gc import GarbageCollector
from .hypernode import HyperNodeController
from .job import COMPONENT, JobController
from .jobflow import JobFlowController, JobTemplateController
from .namespace import NamespaceController
from .owned import OwnedPods
from .podgroup import PodGroupController
from .queue import QueueController, ensure_default_queues
from .quota import QuotaController
from .replicaset import ReplicaSetController
from .statefulset import StatefulSetController

__all__ = ["Controller", "ControllerManager"]

MAX_ROUNDS = 50
NAMESPACES = "namespaces"


class Controller(Protocol):
    def sync(self) -> bool: ...

    def next_wakeup(self) -> float | None: ...


@runtime_checkable
class KnowsPending(Protocol):
    """A controller capability (optional): ``pending()`` says whether ``sync`` has anything to do."""

    def pending(self) -> bool: ...


class ControllerManager:
    """Volcano's Queue, PodGroup, Job, JobFlow, JobTemplate, CronJob, GC and HyperNode controllers; creates the
    ``root`` and ``default`` queues.

    ``kubernetes=True`` (an embedded cluster) adds what kube-controller-manager does on a real cluster:
    Deployments, ReplicaSets, StatefulSets, batch/v1 Jobs, ResourceQuota status and the namespace lifecycle
    (a deleted namespace emptied, then gone). Against a real API server
    pass ``kubernetes=False``: Kubernetes' own controllers do that there (Volcano's CronJob controller stays).
    Both groups stay ``Dormant`` until an object of their kinds exists. ``discovery``: HyperNodes from node
    labels (see ``HyperNodeController``); node counts are kept either way.
    """

    def __init__(self, store: Store, clock: Clock, *, max_rounds: int = MAX_ROUNDS, kubernetes: bool = True,
                 discovery: Any = None) -> None:
        self.store = store
        self.clock = clock
        self.max_rounds = max_rounds
        ensure_default_queues(store)
        #: Events of every controller, as ``vc-controller-manager`` (one recorder: repeats fold across them)
        self.recorder = EventRecorder(store, COMPONENT, clock=clock)
        self.queues = QueueController(store, clock, self.recorder)
        self.podgroups = PodGroupController(store, clock)
        self.jobs = JobController(store, clock, self.recorder)
        self.jobflows = JobFlowController(store, clock, self.recorder)
        self.jobtemplates = JobTemplateController(store, clock)
        self.cronjobs = Dormant(store, clock, (CRONJOBS,), lambda: (CronJobController(store, clock),))
        self.gc = GarbageCollector(store, clock)
        self.hypernodes = HyperNodeController(store, clock, discovery)
        volcano: tuple[Controller, ...] = (self.queues, self.podgroups, self.jobs, self.jobflows, self.jobtemplates,
                                           self.cronjobs, self.gc, self.hypernodes)
        self.kubernetes: Dormant | None = None
        if kubernetes:
            def build() -> tuple[Controller, ...]:
                pods = OwnedPods(store, clock)
                return (DeploymentController(store, clock), ReplicaSetController(store, clock, pods),
                        StatefulSetController(store, clock, pods), BatchJobController(store, clock, pods),
                        QuotaController(store, clock, pods))

            self.kubernetes = Dormant(store, clock, (DEPLOYMENTS, REPLICASETS, STATEFULSETS, BATCH_JOBS,
                                                     RESOURCEQUOTAS), build)
        #: kube-controller-manager's namespace lifecycle, dormant until a Namespace exists
        self.namespaces = Dormant(store, clock, (NAMESPACES,), lambda: (NamespaceController(store, clock),)) \
            if kubernetes else None
        #: PodDisruptionBudget status (embedded only), with its own pod watch once a budget exists
        self.disruption = Dormant(store, clock, (PODDISRUPTIONBUDGETS,),
                                  lambda: (DisruptionController(store, clock),)) if kubernetes else None
        kube: tuple[Controller, ...] = tuple(c for c in (self.kubernetes, self.namespaces, self.disruption)
                                             if c is not None)
        self.controllers: tuple[Controller, ...] = (*kube, *volcano)
        #: for ``controllers``: [(sync, pending)], their ``next_wakeup``s, and whether every one has a ``pending``
        self._checked: tuple[tuple[Controller, ...], list[tuple[Any, Any]], tuple[Any, ...], bool] | None = None
        self._changes = store.change_marker  # moves with every store write
        self._quiet: object = None  # its value when a sync last left every controller idle

    def _steps(self) -> tuple[tuple[Controller, ...], list[tuple[Any, Any]], tuple[Any, ...], bool]:
        controllers = self.controllers
        steps = [(c.sync, c.pending if isinstance(c, KnowsPending) else None) for c in controllers]
        self._checked = (controllers, steps, tuple(c.next_wakeup for c in controllers),
                         all(pending is not None for _, pending in steps))
        self._quiet = None
        return self._checked

    def sync(self) -> bool:
        """Run every controller until none writes; True if anything was written.

        A controller that says it has nothing pending (no watch event, no queued work, no timer due: its
        ``pending()``) is not asked, since its ``sync`` would do nothing. None is asked when the store has
        not changed since a sync left them all idle and no timer is due: each would say so.
        """
        checked = self._checked
        if checked is None or checked[0] is not self.controllers:
            checked = self._steps()
        version = self._changes()
        if version == self._quiet and not self._timer_due(checked[2]):
            return False
        self._quiet = None
        steps = checked[1]
        wrote = False
        for _ in range(self.max_rounds):
            round_wrote = False
            for sync, pending in steps:
                if (pending is None or pending()) and sync():
                    round_wrote = True
            if not round_wrote:
                if checked[3] and self._changes() == version:
                    self._quiet = version  # the last round wrote nothing: every watch drained, every queue emptied
                return wrote
            wrote = True
            version = self._changes()  # as the next round starts
        return wrote

    def _timer_due(self, wakeups: tuple[Any, ...]) -> bool:
        now = None
        for next_wakeup in wakeups:
            due = next_wakeup()
            if due is not None:
                now = self.clock.now() if now is None else now
                if due <= now:
                    return True
        return False

    def next_wakeup(self) -> float | None:
        first = None
        for controller in self.controllers:
            due = controller.next_wakeup()
            if due is not None and (first is None or due < first):
                first = due
        return first
