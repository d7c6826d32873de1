"""The runtime: a cluster assembled from store, admission, controllers, scheduler loop and simulated nodes.

``Cluster`` drives the parts in virtual or real time; ``load_admission`` gives Volcano's webhooks as a
store admission hook; ``resource_for`` maps a manifest's kind to its store resource.

Names are imported on first use (PEP 562): a command that needs one kind does not pay for
the import of every other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pumice.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

_EXPORTS: dict[str, str] = {
    "MAX_ROUNDS": "pumice.runtime.cluster",
    "Cluster": "pumice.runtime.cluster",
    "Demand": "pumice.runtime.demand",
    "DEFAULT_NAMESPACES": "pumice.runtime.wiring",
    "admitted_deletes": "pumice.runtime.wiring",
    "admitted_resources": "pumice.runtime.wiring",
    "admitted_updates": "pumice.runtime.wiring",
    "attach_admission": "pumice.runtime.wiring",
    "default_objects": "pumice.runtime.wiring",
    "default_queues": "pumice.runtime.wiring",
    "load_admission": "pumice.runtime.wiring",
    "resource_for": "pumice.runtime.wiring",
}

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


if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
