"""The resource types a store knows, named exactly as Kubernetes names them.

A resource string is ``plural`` for the core group and ``plural.group`` otherwise
(``podgroups.scheduling.volcano.sh``). Knowing the scope and whether a ``status`` subresource exists is all
the store needs; schemas live in ``pumice.api``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from .errors import NotFound

__all__ = ["DEFAULT_RESOURCES", "ResourceInfo", "ResourceRegistry"]


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One resource type: its name, API version, kind, scope, and whether it has a status subresource."""

    name: str
    api_version: str
    kind: str
    namespaced: bool
    has_status: bool = True

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]


DEFAULT_RESOURCES: tuple[ResourceInfo, ...] = (
    ResourceInfo("pods", "v1", "Pod", namespaced=True),
    ResourceInfo("nodes", "v1", "Node", namespaced=False),
    ResourceInfo("namespaces", "v1", "Namespace", namespaced=False),
    ResourceInfo("events", "v1", "Event", namespaced=True, has_status=False),
    ResourceInfo("services", "v1", "Service", namespaced=True),
    ResourceInfo("configmaps", "v1", "ConfigMap", namespaced=True, has_status=False),
    ResourceInfo("secrets", "v1", "Secret", namespaced=True, has_status=False),
    ResourceInfo("networkpolicies.networking.k8s.io", "networking.k8s.io/v1", "NetworkPolicy", namespaced=True,
                 has_status=False),
    ResourceInfo(
        "priorityclasses.scheduling.k8s.io",
        "scheduling.k8s.io/v1",
        "PriorityClass",
        namespaced=False,
        has_status=False,
    ),
    ResourceInfo("podgroups.scheduling.volcano.sh", "scheduling.volcano.sh/v1beta1", "PodGroup", namespaced=True),
    ResourceInfo("queues.scheduling.volcano.sh", "scheduling.volcano.sh/v1beta1", "Queue", namespaced=False),
    ResourceInfo("jobs.batch.volcano.sh", "batch.volcano.sh/v1alpha1", "Job", namespaced=True),
    ResourceInfo("jobflows.flow.volcano.sh", "flow.volcano.sh/v1alpha1", "JobFlow", namespaced=True),
    ResourceInfo("jobtemplates.flow.volcano.sh", "flow.volcano.sh/v1alpha1", "JobTemplate", namespaced=True),
    ResourceInfo("commands.bus.volcano.sh", "bus.volcano.sh/v1alpha1", "Command", namespaced=True, has_status=False),
    ResourceInfo("hypernodes.topology.volcano.sh", "topology.volcano.sh/v1alpha1", "HyperNode", namespaced=False),
    ResourceInfo("clusters.federation.pumice.io", "federation.pumice.io/v1alpha1", "Cluster", namespaced=False),
)


class ResourceRegistry(Mapping[str, ResourceInfo]):
    """Read-only lookup of resource types; unknown names are refused with the list of known ones."""

    def __init__(self, resources: Iterable[ResourceInfo] = DEFAULT_RESOURCES) -> None:
        self._by_name = {info.name: info for info in resources}

    def __getitem__(self, name: str) -> ResourceInfo:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def info(self, resource: str) -> ResourceInfo:
        """The type named ``resource``; raises ``NotFound`` (as an API server does) for an unknown one."""
        try:
            return self._by_name[resource]
        except (KeyError, TypeError):
            known = ", ".join(sorted(self._by_name))
            raise NotFound(f"the server doesn't have a resource type {resource!r} (known: {known})") from None
