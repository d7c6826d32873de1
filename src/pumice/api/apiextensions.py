"""``apiextensions.k8s.io/v1`` CustomResourceDefinition: the kinds a user (an operator's bundle) adds.

The schema itself (``openAPIV3Schema``) is kept as a plain mapping; ``pumice.admission.crds`` checks it and
validates custom resources against it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from pumice.api.base import ApiModel, StrictBool
from pumice.api.meta import KubeObject

__all__ = [
    "CustomResourceDefinition",
    "CustomResourceDefinitionNames",
    "CustomResourceDefinitionSpec",
    "CustomResourceDefinitionStatus",
    "CustomResourceDefinitionVersion",
    "CustomResourceSubresources",
    "CustomResourceValidation",
]


class CustomResourceDefinitionNames(ApiModel):
    plural: str | None = None
    singular: str | None = None
    kind: str | None = None
    list_kind: str | None = None
    short_names: list[str] | None = None
    categories: list[str] | None = None


class CustomResourceValidation(ApiModel):
    open_apiv3_schema: dict[str, Any] | None = Field(None, alias="openAPIV3Schema")


class CustomResourceSubresources(ApiModel):
    status: dict[str, Any] | None = None
    scale: dict[str, Any] | None = None


class CustomResourceDefinitionVersion(ApiModel):
    name: str | None = None
    served: StrictBool | None = None
    storage: StrictBool | None = None
    deprecated: StrictBool | None = None
    deprecation_warning: str | None = None
    schema_: CustomResourceValidation | None = Field(None, alias="schema")
    subresources: CustomResourceSubresources | None = None
    additional_printer_columns: list[dict[str, Any]] | None = None


class CustomResourceDefinitionSpec(ApiModel):
    group: str | None = None
    names: CustomResourceDefinitionNames | None = None
    #: ``Namespaced`` or ``Cluster``.
    scope: str | None = None
    versions: list[CustomResourceDefinitionVersion] | None = None
    conversion: dict[str, Any] | None = None
    preserve_unknown_fields: StrictBool | None = None


class CustomResourceDefinitionStatus(ApiModel):
    conditions: list[dict[str, Any]] | None = None
    accepted_names: CustomResourceDefinitionNames | None = None
    stored_versions: list[str] | None = None


class CustomResourceDefinition(KubeObject):
    API_VERSION: ClassVar[str] = "apiextensions.k8s.io/v1"
    KIND: ClassVar[str] = "CustomResourceDefinition"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "customresourcedefinitions"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("crd", "crds")

    spec: CustomResourceDefinitionSpec | None = None
    status: CustomResourceDefinitionStatus | None = None
