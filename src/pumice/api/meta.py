"""``meta/v1`` types: object metadata, owner references, label selectors, and the object base."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from pumice.api.base import ApiModel, Int, StrictBool, openapi

__all__ = [
    "Condition",
    "KubeObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ObjectMeta",
    "OwnerReference",
    "PrinterColumn",
]


class OwnerReference(ApiModel):
    api_version: str | None = openapi(required=True)
    kind: str | None = openapi(required=True)
    name: str | None = openapi(required=True)
    uid: str | None = openapi(required=True)
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

    type: str | None = openapi(
        required=True, maxLength=316,
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    )
    status: str | None = openapi(required=True, enum=["True", "False", "Unknown"])
    observed_generation: Int | None = openapi(minimum=0)
    last_transition_time: str | None = openapi(required=True, format="date-time")
    reason: str | None = openapi(
        required=True, minLength=1, maxLength=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    )
    message: str | None = openapi(required=True, maxLength=32768)


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One of a kind's ``kubectl get`` columns, as a CRD's ``additionalPrinterColumns`` declares it."""

    name: str
    #: ``string``, ``integer``, ``number``, ``boolean`` or ``date``.
    type: str
    json_path: str
    #: 0: always shown; 1: only with ``-o wide``.
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        """The CRD form (``apiextensions.k8s.io/v1`` ``CustomResourceColumnDefinition``)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.priority:
            out["priority"] = self.priority
        return out


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
    #: ``kubectl get`` columns of a custom kind (its CRD's ``additionalPrinterColumns``).
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = ()
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
