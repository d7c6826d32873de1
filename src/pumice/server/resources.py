"""What the server exposes: each store resource with the discovery facts kubectl needs.

A store resource string (``pods``, ``jobs.batch.volcano.sh``) becomes an ``ApiResource`` with its group,
version, plural, singular, kind, scope, verbs, short names, categories and subresources. Resources the store
knows but this table does not describe are still served, with facts derived from the ``ResourceInfo``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pumice.store import ResourceInfo

__all__ = ["VERBS", "ApiResource", "ResourceIndex"]

#: Verbs of every served resource (as for a CRD).
VERBS: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

# plural.group -> (singular, short names, categories)
_EXTRA: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "pods": ("pod", ("po",), ("all",)),
    "nodes": ("node", ("no",), ()),
    "namespaces": ("namespace", ("ns",), ()),
    "events": ("event", ("ev",), ()),
    "services": ("service", ("svc",), ("all",)),
    "configmaps": ("configmap", ("cm",), ()),
    "secrets": ("secret", (), ()),
    "networkpolicies.networking.k8s.io": ("networkpolicy", ("netpol",), ()),
    "priorityclasses.scheduling.k8s.io": ("priorityclass", ("pc",), ()),
    "jobs.batch.volcano.sh": ("job", ("vcjob", "vj"), ("volcano",)),
    "podgroups.scheduling.volcano.sh": ("podgroup", ("pg", "podgroup-v1beta1"), ("volcano",)),
    "queues.scheduling.volcano.sh": ("queue", ("q", "queue-v1beta1"), ("volcano",)),
    "commands.bus.volcano.sh": ("command", (), ("volcano",)),
    "jobflows.flow.volcano.sh": ("jobflow", ("jf",), ("volcano",)),
    "jobtemplates.flow.volcano.sh": ("jobtemplate", ("jt",), ("volcano",)),
    "hypernodes.topology.volcano.sh": ("hypernode", ("hn",), ("volcano",)),
    "cronjobs.batch.volcano.sh": ("cronjob", ("cronvcjob", "cronvj"), ("volcano",)),
    "numatopologies.nodeinfo.volcano.sh": ("numatopology", ("numatopo",), ()),
    "serviceaccounts": ("serviceaccount", ("sa",), ()),
    "resourcequotas": ("resourcequota", ("quota",), ()),
    "deployments.apps": ("deployment", ("deploy",), ("all",)),
    "replicasets.apps": ("replicaset", ("rs",), ("all",)),
    "statefulsets.apps": ("statefulset", ("sts",), ("all",)),
    "jobs.batch": ("job", (), ("all",)),
    "poddisruptionbudgets.policy": ("poddisruptionbudget", ("pdb",), ()),
    "customresourcedefinitions.apiextensions.k8s.io": ("customresourcedefinition", ("crd", "crds"),
                                                       ("api-extensions",)),
    "clusters.federation.pumice.io": ("cluster", ("mc",), ("pumice",)),
}

#: Kinds whose Go types kubectl knows (strategic merge patch applies to them, not to custom resources).
CORE_GROUPS = frozenset({"", "scheduling.k8s.io", "networking.k8s.io", "apps", "batch", "rbac.authorization.k8s.io",
                         "apiextensions.k8s.io"})


@dataclass(frozen=True, slots=True)
class ApiResource:
    """One served resource type."""

    store_name: str
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    has_status: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = field(default=())
    #: The version objects are stored in; served under ``version`` (another one) they are converted.
    storage_version: str = ""

    @property
    def converts(self) -> bool:
        """Whether objects change ``apiVersion`` between this version and the stored one."""
        return bool(self.storage_version) and self.storage_version != self.version

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def strategic(self) -> bool:
        """Whether strategic merge patches are accepted (built-in kinds only, as Kubernetes does)."""
        return self.group in CORE_GROUPS

    def discovery(self) -> list[dict[str, object]]:
        """The ``APIResource`` entries of this type and of its subresources."""
        main: dict[str, object] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(VERBS),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        out = [main]
        for sub in self.subresources:
            kind, verbs = {"binding": ("Binding", ["create"]), "log": (self.kind, ["get"])}.get(
                sub, (self.kind, ["get", "patch", "update"]))
            out.append(
                {"name": f"{self.plural}/{sub}", "singularName": "", "namespaced": self.namespaced, "kind": kind,
                 "verbs": verbs}
            )
        return out


def _describe(info: ResourceInfo, version: str) -> ApiResource:
    group = info.group
    plural = info.name.split(".", 1)[0]
    singular, shorts, categories = _EXTRA.get(info.name, (info.singular or info.kind.lower(), info.short_names,
                                                          info.categories))
    subs: list[str] = []
    if info.has_status:
        subs.append("status")
    if info.name == "pods":
        subs += ["binding", "log"]
    return ApiResource(
        store_name=info.name,
        group=group,
        version=version,
        plural=plural,
        singular=singular,
        kind=info.kind,
        namespaced=info.namespaced,
        has_status=info.has_status,
        short_names=shorts,
        categories=categories,
        subresources=tuple(subs),
        storage_version=info.version,
    )


class ResourceIndex:
    """Served resources by ``(group, version, plural)`` and by group."""

    def __init__(self, infos: Iterable[ResourceInfo]) -> None:
        #: one entry per served version, the storage version first
        self.resources: list[ApiResource] = [_describe(info, v) for info in infos for v in info.versions]
        self._by_path = {(r.group, r.version, r.plural): r for r in self.resources}

    def lookup(self, group: str, version: str, plural: str) -> ApiResource | None:
        return self._by_path.get((group, version, plural))

    def groups(self) -> dict[str, list[str]]:
        """Group name -> versions, in first-seen order (the core group is ``""``; the first is preferred)."""
        out: dict[str, list[str]] = {}
        for r in self.resources:
            versions = out.setdefault(r.group, [])
            if r.version not in versions:
                versions.append(r.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ApiResource]:
        return [r for r in self.resources if r.group == group and r.version == version]
