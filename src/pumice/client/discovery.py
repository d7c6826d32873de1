"""Resource types: group, version, plural and scope, from the server's discovery documents.

Discovery (``/api/v1``, ``/apis``, ``/apis/GROUP/VERSION``) is asked lazily, one group version
at a time; when a server serves no discovery document for a group version, the fallback table
of pumice's own kinds (and a few core ones) answers instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pumice.client.errors import ApiError, UnknownResource

__all__ = ["FALLBACK", "Discovery", "Resource"]


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource type as the API serves it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    singular: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``jobs.batch.volcano.sh``, ``pods``: how error messages and ``kubectl`` name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def type_name(self) -> str:
        """``job.batch.volcano.sh``, ``pod``: the prefix of ``kubectl apply``'s ``TYPE/NAME`` reports."""
        singular = self.singular or self.kind.lower()
        return f"{singular}.{self.group}" if self.group else singular

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def names(self) -> set[str]:
        """Every word that names this resource on a command line (lower case)."""
        singular = self.singular or self.kind.lower()
        words = {self.plural, singular, self.kind.lower(), *self.short_names}
        if self.group:
            words |= {f"{self.plural}.{self.group}", f"{singular}.{self.group}"}
            words |= {f"{self.plural}.{self.version}.{self.group}"}
        return {w.lower() for w in words}


#: pumice's kinds (those of ``pumice.api.registry.KINDS``, in its order, as their models name them) and a few
#: core ones: used when a server has no discovery document for them. Written out rather than read from the
#: models, which would build every kind's pydantic classes (a fifth of a second) in every command that talks
#: to a server; ``tests/cli/test_client.py`` checks it against the models.
FALLBACK: tuple[Resource, ...] = (
    Resource("", "v1", "namespaces", "Namespace", False, ("ns",)),
    Resource("", "v1", "nodes", "Node", False, ("no",)),
    Resource("", "v1", "pods", "Pod", True, ("po",)),
    Resource("", "v1", "resourcequotas", "ResourceQuota", True, ("quota",)),
    Resource("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True, ("pg", "podgroup-v1beta1")),
    Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, ("q", "queue-v1beta1")),
    Resource("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, ("hn",)),
    Resource("batch.volcano.sh", "v1alpha1", "jobs", "Job", True, ("vcjob", "vj")),
    Resource("batch.volcano.sh", "v1alpha1", "cronjobs", "CronJob", True, ("cronvcjob", "cronvj")),
    Resource("bus.volcano.sh", "v1alpha1", "commands", "Command", True),
    Resource("nodeinfo.volcano.sh", "v1alpha1", "numatopologies", "Numatopology", False, ("numatopo",)),
    Resource("apps", "v1", "deployments", "Deployment", True, ("deploy",)),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",)),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",)),
    Resource("batch", "v1", "jobs", "Job", True),
    Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
             ("crd", "crds")),
    Resource("flow.volcano.sh", "v1alpha1", "jobflows", "JobFlow", True, ("jf",)),
    Resource("flow.volcano.sh", "v1alpha1", "jobtemplates", "JobTemplate", True, ("jt",)),
    Resource("federation.pumice.io", "v1alpha1", "clusters", "Cluster", False, ("mc",)),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",)),
    Resource("", "v1", "events", "Event", True, ("ev",)),
    Resource("", "v1", "services", "Service", True, ("svc",)),
    Resource("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    Resource("", "v1", "secrets", "Secret", True),
)

#: Words that name pumice's kinds, looked up before asking the server (``jobs`` is Volcano's Job here).
_LOCAL_WORDS: dict[str, Resource] = {word: r for r in reversed(FALLBACK) for word in r.names()}


class Discovery:
    """Resolves words and ``(apiVersion, kind)`` to :class:`Resource`, asking ``get_json`` for documents."""

    def __init__(self, get_json: Callable[[str], Any]) -> None:
        self._get = get_json
        self._by_gv: dict[str, list[Resource] | None] = {}
        self._all: list[Resource] | None = None

    # ------------------------------------------------------------------ one group version
    def group_version(self, api_version: str) -> list[Resource] | None:
        """The resources the server lists for ``api_version``; None when it serves no such document."""
        if api_version in self._by_gv:
            return self._by_gv[api_version]
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{api_version}" if group else f"/api/{version}"
        try:
            doc = self._get(path)
        except ApiError as err:
            if err.code in (403, 404, 405, 501):
                self._by_gv[api_version] = None
                return None
            raise
        resources = list(self._parse(doc, group, version)) if isinstance(doc, dict) else []
        self._by_gv[api_version] = resources
        return resources

    @staticmethod
    def _parse(doc: dict[str, Any], group: str, version: str) -> Iterable[Resource]:
        for item in doc.get("resources") or []:
            name = str(item.get("name") or "")
            if not name or "/" in name:  # subresources (pods/status, pods/binding)
                continue
            yield Resource(
                group,
                version,
                name,
                str(item.get("kind") or ""),
                bool(item.get("namespaced")),
                tuple(item.get("shortNames") or ()),
                str(item.get("singularName") or ""),
            )

    def for_kind(self, api_version: str, kind: str) -> Resource:
        """The resource serving objects of ``apiVersion``/``kind`` (what ``apply -f`` needs). A kind not among
        the group version's known resources is asked for again once: a CRD applied since may serve it now."""
        served = self.group_version(api_version)
        if not any(r.kind == kind for r in served or ()) and api_version in self._by_gv:
            del self._by_gv[api_version]
            self._all = None
            served = self.group_version(api_version)
        if served:
            for r in served:
                if r.kind == kind:
                    return r
        for r in FALLBACK:
            if r.api_version == api_version and r.kind == kind:
                if served:  # the server lists the group version and not this kind: it is not served
                    break
                return r
        raise UnknownResource(f'no resource of kind "{kind}" in version "{api_version}" is served')

    # ------------------------------------------------------------------ command-line words
    def resolve(self, word: str) -> Resource:
        """``pumice get WORD``: pumice's own words first (``jobs`` = Volcano Job), then the server's."""
        key = word.lower()
        local = _LOCAL_WORDS.get(key)
        if local is not None:
            return self.for_kind(local.api_version, local.kind)
        for r in self.everything():
            if key in r.names():
                return r
        raise UnknownResource(f'the server doesn\'t have a resource type "{word}"')

    def everything(self) -> list[Resource]:
        """Every resource of every preferred group version (several requests: only for unknown words)."""
        if self._all is not None:
            return self._all
        found: list[Resource] = list(self.group_version("v1") or [])
        try:
            groups = self._get("/apis")
        except ApiError as err:
            if err.code != 404:
                raise
            groups = {}
        for group in (groups or {}).get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            versions = [v.get("groupVersion") for v in group.get("versions") or []]
            gv = preferred or (versions[0] if versions else None)
            if gv:
                found.extend(self.group_version(gv) or [])
        self._all = found
        return found
