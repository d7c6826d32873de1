"""The runtime: a cluster assembled from store, admission, controllers, scheduler loop and simulated nodes.

``Cluster`` drives the parts in virtual or real time; ``load_admission`` gives Volcano's webhooks as a
store admission hook; ``resource_for`` maps a manifest's kind to its store resource.
"""

from .cluster import MAX_ROUNDS, Cluster
from .demand import Demand
from .wiring import (
    DEFAULT_NAMESPACES,
    admitted_deletes,
    admitted_resources,
    admitted_updates,
    attach_admission,
    default_objects,
    default_queues,
    load_admission,
    resource_for,
)

__all__ = [
    "DEFAULT_NAMESPACES",
    "MAX_ROUNDS",
    "Cluster",
    "Demand",
    "admitted_deletes",
    "admitted_resources",
    "admitted_updates",
    "attach_admission",
    "default_objects",
    "default_queues",
    "load_admission",
    "resource_for",
]
