"""Scheduling policies. Importing this package registers every built-in plugin."""

from pumice.scheduler.plugins import (  # noqa: F401
    binpack,
    capacity,
    conformance,
    drf,
    gang,
    network_topology_aware,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
    sla,
)
