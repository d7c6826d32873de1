"""Which model class reads which ``(apiVersion, kind)``, and resource names for the CLI."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import import_module
from typing import TYPE_CHECKING, Any

from pumice.api.errors import UnknownResourceError
from pumice.api.meta import KubeObject

__all__ = [
    "ALIASES",
    "KINDS",
    "MODELS",
    "GenericObject",
    "kind_for_resource",
    "model_for",
    "model_for_resource",
    "parse_object",
]


class GenericObject(KubeObject):
    """Any object of a kind pumice does not model: kept whole, never an error."""

    @property
    def namespace(self) -> str | None:
        # The scope of an unknown kind is not known: trust the manifest.
        return self.metadata.namespace

    @property
    def key(self) -> str:
        namespace = self.namespace
        return f"{namespace}/{self.name}" if namespace else self.name


#: Every modelled kind: (apiVersion, kind, module, class). Where two share a CLI word (``jobs``), the first
#: wins: Volcano's Job before Kubernetes' (``jobs.batch`` names that one). A model's module is imported when
#: the model is first asked for: building the pydantic classes of every kind costs a command that reads a few
#: kinds a fifth of a second (``tests/api/test_api_registry.py`` checks the table against the classes).
KINDS: tuple[tuple[str, str, str, str], ...] = (
    ("v1", "Namespace", "pumice.api.core", "Namespace"),
    ("v1", "Node", "pumice.api.core", "Node"),
    ("v1", "Pod", "pumice.api.core", "Pod"),
    ("v1", "ResourceQuota", "pumice.api.core", "ResourceQuota"),
    ("v1", "ServiceAccount", "pumice.api.core", "ServiceAccount"),
    ("scheduling.k8s.io/v1", "PriorityClass", "pumice.api.scheduling", "PriorityClass"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup", "pumice.api.scheduling", "PodGroup"),
    ("scheduling.volcano.sh/v1beta1", "Queue", "pumice.api.scheduling", "Queue"),
    ("topology.volcano.sh/v1alpha1", "HyperNode", "pumice.api.topology", "HyperNode"),
    ("batch.volcano.sh/v1alpha1", "Job", "pumice.api.batch", "Job"),
    ("batch.volcano.sh/v1alpha1", "CronJob", "pumice.api.batch", "CronJob"),
    ("bus.volcano.sh/v1alpha1", "Command", "pumice.api.batch", "Command"),
    ("nodeinfo.volcano.sh/v1alpha1", "Numatopology", "pumice.api.nodeinfo", "Numatopology"),
    ("apps/v1", "Deployment", "pumice.api.apps", "Deployment"),
    ("apps/v1", "ReplicaSet", "pumice.api.apps", "ReplicaSet"),
    ("apps/v1", "StatefulSet", "pumice.api.apps", "StatefulSet"),
    ("batch/v1", "Job", "pumice.api.batch_v1", "BatchJob"),
    ("rbac.authorization.k8s.io/v1", "Role", "pumice.api.rbac", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "pumice.api.rbac", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "pumice.api.rbac", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "pumice.api.rbac", "ClusterRoleBinding"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "pumice.api.apiextensions", "CustomResourceDefinition"),
    ("flow.volcano.sh/v1alpha1", "JobFlow", "pumice.api.flow", "JobFlow"),
    ("flow.volcano.sh/v1alpha1", "JobTemplate", "pumice.api.flow", "JobTemplate"),
    ("federation.pumice.io/v1alpha1", "Cluster", "pumice.api.federation", "MemberCluster"),
    ("policy/v1", "PodDisruptionBudget", "pumice.api.policy", "PodDisruptionBudget"),
)

#: Other versions a kind is served under with the same schema (kube-apiserver 1.20 still serves these):
#: (apiVersion, kind) -> the (apiVersion, kind) of :data:`KINDS` that reads them.
_ALIAS_OF: dict[tuple[str, str], tuple[str, str]] = {
    ("scheduling.k8s.io/v1beta1", "PriorityClass"): ("scheduling.k8s.io/v1", "PriorityClass"),
    ("policy/v1beta1", "PodDisruptionBudget"): ("policy/v1", "PodDisruptionBudget"),
}

_WHERE: dict[tuple[str, str], tuple[str, str]] = {(v, k): (mod, cls) for v, k, mod, cls in KINDS}
_WHERE.update({alias: _WHERE[target] for alias, target in _ALIAS_OF.items()})
#: (apiVersion, kind) -> model, filled as kinds are asked for.
_BY_TYPE: dict[tuple[str, str], type[KubeObject]] = {}

if TYPE_CHECKING:
    MODELS: tuple[type[KubeObject], ...]
    ALIASES: dict[tuple[str, str], type[KubeObject]]


def _load(api_version: str, kind: str) -> type[KubeObject]:
    module, name = _WHERE[(api_version, kind)]
    model: type[KubeObject] = getattr(import_module(module), name)
    _BY_TYPE[(api_version, kind)] = model
    return model


@functools.cache
def _models() -> tuple[type[KubeObject], ...]:
    return tuple(_load(v, k) for v, k, _, _ in KINDS)


def __getattr__(name: str) -> Any:
    """``MODELS`` (every modelled kind, in :data:`KINDS` order) and ``ALIASES`` import every model."""
    if name == "MODELS":
        return _models()
    if name == "ALIASES":
        return {alias: _load(*alias) for alias in _ALIAS_OF}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _resource_names(model: type[KubeObject]) -> set[str]:
    group = model.API_VERSION.rpartition("/")[0]
    names = {model.PLURAL, model.KIND.lower(), *model.SHORT_NAMES}
    if group:  # kubectl's fully qualified form, e.g. "jobs.batch.volcano.sh"
        names |= {f"{model.PLURAL}.{group}", f"{model.KIND.lower()}.{group}"}
    return names


@functools.cache
def _by_resource() -> dict[str, type[KubeObject]]:
    table: dict[str, type[KubeObject]] = {}
    for model in _models():
        for name in _resource_names(model):
            table.setdefault(name, model)
    return table


def versions_of(kind: str) -> list[str]:
    """The apiVersions pumice reads ``kind`` in (an empty list for a kind it does not know)."""
    return [v for v, k in _WHERE if k == kind]


def model_for(api_version: str, kind: str) -> type[KubeObject]:
    """The model for an ``(apiVersion, kind)``; :class:`GenericObject` when unknown.

    Both must match: ``batch/v1`` Job is a Kubernetes Job, not a Volcano one.
    """
    model = _BY_TYPE.get((api_version, kind))
    if model is None:
        model = _load(api_version, kind) if (api_version, kind) in _WHERE else GenericObject
    return model


def parse_object(data: Mapping[str, Any]) -> KubeObject:
    """Validate one object's wire form (camelCase keys only) into its model.

    Raises :class:`pydantic.ValidationError`; :mod:`pumice.api.io` turns that into a
    one-line :class:`~pumice.api.errors.ManifestError`.
    """
    model = model_for(str(data.get("apiVersion", "")), str(data.get("kind", "")))
    return model.model_validate(data, by_alias=True, by_name=False)


def model_for_resource(name: str) -> type[KubeObject]:
    """The model named by a CLI resource word: plural, singular, short name or kind (any case)."""
    model = _by_resource().get(name.lower())
    if model is None:
        raise UnknownResourceError(name)
    return model


def kind_for_resource(name: str) -> str:
    """``kind_for_resource("vj") == "Job"``, ``kind_for_resource("po") == "Pod"``."""
    return model_for_resource(name).KIND
