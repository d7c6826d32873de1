"""Which model class reads which ``(apiVersion, kind)``, and resource names for the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice.api.batch import Command, Job
from pumice.api.core import Namespace, Node, Pod
from pumice.api.errors import UnknownResourceError
from pumice.api.federation import MemberCluster
from pumice.api.flow import JobFlow, JobTemplate
from pumice.api.meta import KubeObject
from pumice.api.scheduling import PodGroup, PriorityClass, Queue
from pumice.api.topology import HyperNode

__all__ = [
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


#: Every modelled kind.
MODELS: tuple[type[KubeObject], ...] = (
    Namespace,
    Node,
    Pod,
    PriorityClass,
    PodGroup,
    Queue,
    HyperNode,
    Job,
    Command,
    JobFlow,
    JobTemplate,
    MemberCluster,
)

_BY_TYPE: dict[tuple[str, str], type[KubeObject]] = {(m.API_VERSION, m.KIND): m for m in MODELS}


def _resource_names(model: type[KubeObject]) -> set[str]:
    group = model.API_VERSION.rpartition("/")[0]
    names = {model.PLURAL, model.KIND.lower(), *model.SHORT_NAMES}
    if group:  # kubectl's fully qualified form, e.g. "jobs.batch.volcano.sh"
        names |= {f"{model.PLURAL}.{group}", f"{model.KIND.lower()}.{group}"}
    return names


_BY_RESOURCE: dict[str, type[KubeObject]] = {
    name: model for model in MODELS for name in _resource_names(model)
}


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
