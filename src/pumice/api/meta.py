"""``meta/v1`` types: object metadata, owner references, label selectors, and the object base."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from pumice.api.base import ApiModel, Int, StrictBool

__all__ = [
    "Condition",
    "KubeObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ObjectMeta",
    "OwnerReference",
]


class OwnerReference(ApiModel):
    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: StrictBool | None = None
    block_owner_deletion: StrictBool | None = None


class ObjectMeta(ApiModel):
    """Timestamps are kept as the RFC 3339 strings they were written as."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: Int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


class LabelSelectorRequirement(ApiModel):
    key: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class LabelSelector(ApiModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class Condition(ApiModel):
    """``metav1.Condition`` (used by HyperNode status)."""

    type: str | None = None
    status: str | None = None
    observed_generation: Int | None = None
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class KubeObject(ApiModel):
    """A top-level API object: ``apiVersion``, ``kind``, ``metadata`` and kind-specific fields.

    Subclasses set the class variables; constructing one without ``api_version``/``kind``
    fills them in from ``API_VERSION``/``KIND`` (and marks them set, so they are dumped).
    """

    API_VERSION: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = True
    PLURAL: ClassVar[str] = ""
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    _LEADING_KEYS: ClassVar[tuple[str, ...]] = ("apiVersion", "kind")

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def model_post_init(self, context: Any, /) -> None:
        if self.api_version is None and self.API_VERSION:
            self.api_version = self.API_VERSION
        if self.kind is None and self.KIND:
            self.kind = self.KIND
        # metadata is always part of the wire form, even when empty.
        self.__pydantic_fields_set__.add("metadata")

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str | None:
        """The object's namespace; ``default`` when a namespaced object names none."""
        if not self.NAMESPACED:
            return None
        return self.metadata.namespace or "default"

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
        namespace = self.namespace
        return f"{namespace}/{self.name}" if namespace is not None else self.name
