"""``pumice.controllers``: Volcano's controller manager as store clients driven by a clock.

Each controller is ``Controller(store, clock)`` with ``sync() -> bool`` (drain its watches, reconcile,
True if it wrote) and ``next_wakeup() -> float | None``; ``ControllerManager`` runs them all.
"""

from .gc import GarbageCollector, expires_at
from .hypernode import HyperNodeController, node_count
from .job import JobController, cascade_delete
from .job_state import JobFacts, Step, plan
from .manager import Controller, ControllerManager
from .mirror import Delta, Mirror
from .podgroup import PodGroupController, podgroup_for_pod
from .queue import DEFAULT_QUEUES, QueueController, ensure_default_queues

__all__ = [
    "DEFAULT_QUEUES",
    "Controller",
    "ControllerManager",
    "Delta",
    "GarbageCollector",
    "HyperNodeController",
    "JobController",
    "JobFacts",
    "Mirror",
    "PodGroupController",
    "QueueController",
    "Step",
    "cascade_delete",
    "ensure_default_queues",
    "expires_at",
    "node_count",
    "plan",
    "podgroup_for_pod",
]
