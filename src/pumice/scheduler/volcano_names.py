"""The names in Volcano's own registries (``pkg/scheduler/plugins/factory.go`` and
``pkg/scheduler/actions/factory.go`` at ed72c7c8): a configuration naming one that pumice has not
built yet is Volcano's and warned about; any other unknown name is a mistake and refused. What pumice
has built is its registry (``registry.py``), never this list."""

from __future__ import annotations

VOLCANO_PLUGINS: tuple[str, ...] = (
    "drf", "gang", "deviceshare", "predicates", "priority", "nodeorder", "conformance", "binpack",
    "resource-strategy-fit", "tdm", "overcommit", "sla", "task-topology", "numa-aware", "cdp", "rescheduling",
    "usage", "pdb", "nodegroup", "network-topology-aware", "proportion", "capacity", "extender", "resourcequota",
)

VOLCANO_ACTIONS: tuple[str, ...] = (
    "reclaim", "allocate", "backfill", "preempt", "gangpreempt", "gangreclaim", "enqueue", "shuffle",
)
