"""The resource types a store knows, named exactly as Kubernetes names them.

A resource string is ``plural`` for the core group and ``plural.group`` otherwise
(``podgroups.scheduling.volcano.sh``). Knowing the scope and whether a ``status`` subresource exists is all
the store needs; schemas live in ``pumice.api``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import NotFound

__all__ = ["CRDS", "DEFAULT_RESOURCES", "ResourceInfo", "ResourceRegistry", "custom_resource", "custom_resources"]

#: The resource of CustomResourceDefinitions, whose objects add resource types.
CRDS = "customresourcedefinitions.apiextensions.k8s.io"


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One resource type: its name, API version, kind, scope, and whether it has a status subresource."""

    name: str
    api_version: str
    kind: str
    namespaced: bool
    has_status: bool = True
    #: Other versions of the group served with the same schema (stored objects carry ``api_version``).
    other_versions: tuple[str, ...] = ()
    #: The defining CustomResourceDefinition's name, for a custom resource; with its names for discovery.
    custom: str | None = None
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        """The storage version (``v1`` of ``apps/v1``)."""
        return self.api_version.rpartition("/")[2]

    @property
    def versions(self) -> tuple[str, ...]:
        """Every served version, the storage version first."""
        return (self.version, *self.other_versions)

    def serves(self, api_version: str) -> bool:
        """Whether ``api_version`` (``group/version``) is one this resource is served under."""
        group, _, version = api_version.rpartition("/")
        return group == self.group and version in self.versions


DEFAULT_RESOURCES: tuple[ResourceInfo, ...] = (
    ResourceInfo("pods", "v1", "Pod", namespaced=True),
    ResourceInfo("nodes", "v1", "Node", namespaced=False),
    ResourceInfo("namespaces", "v1", "Namespace", namespaced=False),
    ResourceInfo("events", "v1", "Event", namespaced=True, has_status=False),
    ResourceInfo("services", "v1", "Service", namespaced=True),
    ResourceInfo("configmaps", "v1", "ConfigMap", namespaced=True, has_status=False),
    ResourceInfo("secrets", "v1", "Secret", namespaced=True, has_status=False),
    ResourceInfo("serviceaccounts", "v1", "ServiceAccount", namespaced=True, has_status=False),
    ResourceInfo("resourcequotas", "v1", "ResourceQuota", namespaced=True),
    ResourceInfo("networkpolicies.networking.k8s.io", "networking.k8s.io/v1", "NetworkPolicy", namespaced=True,
                 has_status=False),
    ResourceInfo(
        "priorityclasses.scheduling.k8s.io",
        "scheduling.k8s.io/v1",
        "PriorityClass",
        namespaced=False,
        has_status=False,
        other_versions=("v1beta1",),  # kube-apiserver 1.20 serves both; objects are stored as v1
    ),
    ResourceInfo("podgroups.scheduling.volcano.sh", "scheduling.volcano.sh/v1beta1", "PodGroup", namespaced=True),
    ResourceInfo("queues.scheduling.volcano.sh", "scheduling.volcano.sh/v1beta1", "Queue", namespaced=False),
    ResourceInfo("jobs.batch.volcano.sh", "batch.volcano.sh/v1alpha1", "Job", namespaced=True),
    ResourceInfo("jobflows.flow.volcano.sh", "flow.volcano.sh/v1alpha1", "JobFlow", namespaced=True),
    ResourceInfo("jobtemplates.flow.volcano.sh", "flow.volcano.sh/v1alpha1", "JobTemplate", namespaced=True),
    ResourceInfo("commands.bus.volcano.sh", "bus.volcano.sh/v1alpha1", "Command", namespaced=True, has_status=False),
    ResourceInfo("hypernodes.topology.volcano.sh", "topology.volcano.sh/v1alpha1", "HyperNode", namespaced=False),
    ResourceInfo("cronjobs.batch.volcano.sh", "batch.volcano.sh/v1alpha1", "CronJob", namespaced=True),
    ResourceInfo("numatopologies.nodeinfo.volcano.sh", "nodeinfo.volcano.sh/v1alpha1", "Numatopology",
                 namespaced=False, has_status=False),
    ResourceInfo("deployments.apps", "apps/v1", "Deployment", namespaced=True),
    ResourceInfo("replicasets.apps", "apps/v1", "ReplicaSet", namespaced=True),
    ResourceInfo("statefulsets.apps", "apps/v1", "StatefulSet", namespaced=True),
    ResourceInfo("jobs.batch", "batch/v1", "Job", namespaced=True),
    ResourceInfo("roles.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1", "Role", namespaced=True,
                 has_status=False),
    ResourceInfo("rolebindings.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1", "RoleBinding",
                 namespaced=True, has_status=False),
    ResourceInfo("clusterroles.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1", "ClusterRole",
                 namespaced=False, has_status=False),
    ResourceInfo("clusterrolebindings.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1",
                 "ClusterRoleBinding", namespaced=False, has_status=False),
    ResourceInfo("customresourcedefinitions.apiextensions.k8s.io", "apiextensions.k8s.io/v1",
                 "CustomResourceDefinition", namespaced=False),
    ResourceInfo("poddisruptionbudgets.policy", "policy/v1", "PodDisruptionBudget", namespaced=True,
                 other_versions=("v1beta1",), short_names=("pdb",)),
    ResourceInfo("leases.coordination.k8s.io", "coordination.k8s.io/v1", "Lease", namespaced=True, has_status=False),
    ResourceInfo("clusters.federation.pumice.io", "federation.pumice.io/v1alpha1", "Cluster", namespaced=False),
)


class ResourceRegistry(Mapping[str, ResourceInfo]):
    """Lookup of resource types; unknown names are refused with the list of known ones.

    The built-in types are fixed; custom resources come and go with their CustomResourceDefinitions
    (``define_custom``), and ``generation`` counts those changes so that readers (the API server's discovery)
    know when to look again.
    """

    def __init__(self, resources: Iterable[ResourceInfo] = DEFAULT_RESOURCES) -> None:
        self._fixed = {info.name: info for info in resources}
        self._by_name = dict(self._fixed)
        self._by_type: dict[tuple[str, str], ResourceInfo] = {}
        self.generation = 0
        self._index_types()

    def _index_types(self) -> None:
        by_type: dict[tuple[str, str], ResourceInfo] = {}
        for info in self._by_name.values():
            by_type.setdefault((info.group, info.kind), info)
        self._by_type = by_type

    def define_custom(self, infos: Iterable[ResourceInfo]) -> None:
        """Replace the custom resources with ``infos`` (those of every stored CustomResourceDefinition); a name
        that a built-in type has is left to the built-in one."""
        by_name = dict(self._fixed)
        for info in infos:
            by_name.setdefault(info.name, info)
        if by_name != self._by_name:
            self._by_name = by_name
            self._index_types()
            self.generation += 1

    def for_kind(self, kind: str) -> ResourceInfo | None:
        """The first resource (in registration order) whose kind is ``kind``, whatever its group."""
        return next((info for info in self._by_name.values() if info.kind == kind), None)

    def for_type(self, api_version: str, kind: str) -> ResourceInfo | None:
        """The resource serving objects of ``apiVersion``/``kind``, or None (a version not served is None)."""
        info = self._by_type.get((api_version.rpartition("/")[0], kind))
        return info if info is not None and info.serves(api_version) else None

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


def custom_resource(crd: Mapping[str, Any]) -> ResourceInfo | None:
    """The resource type a CustomResourceDefinition defines (None if it serves no version or is malformed).

    Its storage version is the one objects are stored in; every other served version shares its schema here
    (pumice does no conversion between versions, as a CRD without a conversion webhook does not).
    """
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return None
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    versions = [v for v in spec.get("versions") or [] if isinstance(v, Mapping) and v.get("served")]
    if not (isinstance(group, str) and group and isinstance(plural, str) and plural and isinstance(kind, str)
            and kind and versions):
        return None
    storage = next((v for v in versions if v.get("storage")), versions[0])
    has_status = isinstance((storage.get("subresources") or {}).get("status"), Mapping)
    return ResourceInfo(
        f"{plural}.{group}", f"{group}/{storage.get('name')}", kind, namespaced=spec.get("scope") != "Cluster",
        has_status=has_status, other_versions=tuple(str(v.get("name")) for v in versions if v is not storage),
        custom=str((crd.get("metadata") or {}).get("name") or ""), singular=str(names.get("singular") or ""),
        short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
    )


def custom_resources(crds: Iterable[Mapping[str, Any]]) -> list[ResourceInfo]:
    """The resource types of ``crds`` (see ``custom_resource``)."""
    return [info for crd in crds if (info := custom_resource(crd)) is not None]
