"""``pumice.controllers``: Volcano's controller manager as store clients driven by a clock.

Volcano's controllers, and in an embedded cluster the workload and quota controllers of kube-controller-manager.
Each controller is ``Controller(store, clock)`` with ``sync() -> bool`` (drain its watches, reconcile,
True if it wrote) and ``next_wakeup() -> float | None``; ``ControllerManager`` runs them all.

Names are imported on first use (PEP 562): a command that needs one controller does not pay
for the import of every other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pumice.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .batchjob import BatchJobController
    from .cronjob import CronJobController
    from .deployment import DeploymentController
    from .dormant import Dormant
    from .gc import GarbageCollector, expires_at
    from .hypernode import HyperNodeController, node_count
    from .job import JobController, cascade_delete
    from .job_state import JobFacts, Step, plan
    from .manager import Controller, ControllerManager
    from .mirror import Delta, Mirror
    from .owned import OwnedPods
    from .podgroup import PodGroupController, podgroup_for_pod
    from .queue import DEFAULT_QUEUES, QueueController, ensure_default_queues
    from .quota import QuotaController
    from .replicaset import ReplicaSetController
    from .statefulset import StatefulSetController

_EXPORTS: dict[str, str] = {
    "BatchJobController": "pumice.controllers.batchjob",
    "CronJobController": "pumice.controllers.cronjob",
    "DeploymentController": "pumice.controllers.deployment",
    "Dormant": "pumice.controllers.dormant",
    "GarbageCollector": "pumice.controllers.gc",
    "expires_at": "pumice.controllers.gc",
    "HyperNodeController": "pumice.controllers.hypernode",
    "node_count": "pumice.controllers.hypernode",
    "JobController": "pumice.controllers.job",
    "cascade_delete": "pumice.controllers.job",
    "JobFacts": "pumice.controllers.job_state",
    "Step": "pumice.controllers.job_state",
    "plan": "pumice.controllers.job_state",
    "Controller": "pumice.controllers.manager",
    "ControllerManager": "pumice.controllers.manager",
    "Delta": "pumice.controllers.mirror",
    "Mirror": "pumice.controllers.mirror",
    "OwnedPods": "pumice.controllers.owned",
    "PodGroupController": "pumice.controllers.podgroup",
    "podgroup_for_pod": "pumice.controllers.podgroup",
    "DEFAULT_QUEUES": "pumice.controllers.queue",
    "QueueController": "pumice.controllers.queue",
    "ensure_default_queues": "pumice.controllers.queue",
    "QuotaController": "pumice.controllers.quota",
    "ReplicaSetController": "pumice.controllers.replicaset",
    "StatefulSetController": "pumice.controllers.statefulset",
}

__all__ = [
    "DEFAULT_QUEUES",
    "BatchJobController",
    "Controller",
    "ControllerManager",
    "CronJobController",
    "Delta",
    "DeploymentController",
    "Dormant",
    "GarbageCollector",
    "HyperNodeController",
    "JobController",
    "JobFacts",
    "Mirror",
    "OwnedPods",
    "PodGroupController",
    "QueueController",
    "QuotaController",
    "ReplicaSetController",
    "StatefulSetController",
    "Step",
    "cascade_delete",
    "ensure_default_queues",
    "expires_at",
    "node_count",
    "plan",
    "podgroup_for_pod",
]


if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
