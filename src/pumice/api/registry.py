"""Which model class reads which ``(apiVersion, kind)``, and resource names for the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice.api.apiextensions import CustomResourceDefinition
from pumice.api.apps import Deployment, ReplicaSet, StatefulSet
from pumice.api.batch import Command, CronJob, Job
from pumice.api.batch_v1 import BatchJob
from pumice.api.core import Namespace, Node, Pod, ResourceQuota, ServiceAccount
from pumice.api.errors import UnknownResourceError
from pumice.api.federation import MemberCluster
from pumice.api.flow import JobFlow, JobTemplate
from pumice.api.meta import KubeObject
from pumice.api.nodeinfo import Numatopology
from pumice.api.policy import PodDisruptionBudget
from pumice.api.rbac import ClusterRole, ClusterRoleBinding, Role, RoleBinding
from pumice.api.scheduling import PodGroup, PriorityClass, Queue
from pumice.api.topology import HyperNode

__all__ = [
    "ALIASES",
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


#: Every modelled kind. Where two share a CLI word (``jobs``), the first wins: Volcano's Job before
#: Kubernetes' (``jobs.batch`` names that one).
MODELS: tuple[type[KubeObject], ...] = (
    Namespace,
    Node,
    Pod,
    ResourceQuota,
    ServiceAccount,
    PriorityClass,
    PodGroup,
    Queue,
    HyperNode,
    Job,
    CronJob,
    Command,
    Numatopology,
    Deployment,
    ReplicaSet,
    StatefulSet,
    BatchJob,
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
    CustomResourceDefinition,
    JobFlow,
    JobTemplate,
    MemberCluster,
    PodDisruptionBudget,
)

#: Other versions a kind is served under with the same schema (kube-apiserver 1.20 still serves these).
ALIASES: dict[tuple[str, str], type[KubeObject]] = {("scheduling.k8s.io/v1beta1", "PriorityClass"): PriorityClass,
                                                     ("policy/v1beta1", "PodDisruptionBudget"): PodDisruptionBudget}

_BY_TYPE: dict[tuple[str, str], type[KubeObject]] = {(m.API_VERSION, m.KIND): m for m in MODELS} | ALIASES


def _resource_names(model: type[KubeObject]) -> set[str]:
    group = model.API_VERSION.rpartition("/")[0]
    names = {model.PLURAL, model.KIND.lower(), *model.SHORT_NAMES}
    if group:  # kubectl's fully qualified form, e.g. "jobs.batch.volcano.sh"
        names |= {f"{model.PLURAL}.{group}", f"{model.KIND.lower()}.{group}"}
    return names


_BY_RESOURCE: dict[str, type[KubeObject]] = {}
for _model in MODELS:
    for _name in _resource_names(_model):
        _BY_RESOURCE.setdefault(_name, _model)


def model_for(api_version: str, kind: str) -> type[KubeObject]:
    """The model for an ``(apiVersion, kind)``; :class:`GenericObject` when unknown.

    Both must match: ``batch/v1`` Job is a Kubernetes Job, not a Volcano one.
    """
    return _BY_TYPE.get((api_version, kind), GenericObject)


def parse_object(data: Mapping[str, Any]) -> KubeObject:
    """Validate one object's wire form (camelCase keys only) into its model.

    Raises :class:`pydantic.ValidationError`; :mod:`pumice.api.io` turns that into a
    one-line :class:`~pumice.api.errors.ManifestError`.
    """
    model = model_for(str(data.get("apiVersion", "")), str(data.get("kind", "")))
    return model.model_validate(data, by_alias=True, by_name=False)


def model_for_resource(name: str) -> type[KubeObject]:
    """The model named by a CLI resource word: plural, singular, short name or kind (any case)."""
    model = _BY_RESOURCE.get(name.lower())
    if model is None:
        raise UnknownResourceError(name)
    return model


def kind_for_resource(name: str) -> str:
    """``kind_for_resource("vj") == "Job"``, ``kind_for_resource("po") == "Pod"``."""
    return model_for_resource(name).KIND
