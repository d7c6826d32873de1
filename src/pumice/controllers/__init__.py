"""``pumice.controllers``: Volcano's controller manager as store clients driven by a clock.

Volcano's controllers, and in an embedded cluster the workload and quota controllers of kube-controller-manager.
Each controller is ``Controller(store, clock)`` with ``sync() -> bool`` (drain its watches, reconcile,
True if it wrote) and ``next_wakeup() -> float | None``; ``ControllerManager`` runs them all.
"""

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
