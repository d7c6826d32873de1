"""``rbac.authorization.k8s.io/v1`` Role, ClusterRole, RoleBinding and ClusterRoleBinding.

Stored and served so that bundles carrying them apply; the embedded API server has one user (the bearer
token's holder, a cluster admin) and enforces none of them (see the README).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from pumice.api.base import ApiModel
from pumice.api.meta import KubeObject, LabelSelector

__all__ = ["AggregationRule", "ClusterRole", "ClusterRoleBinding", "PolicyRule", "Role", "RoleBinding", "RoleRef",
           "Subject"]


class PolicyRule(ApiModel):
    verbs: list[str] | None = None
    api_groups: list[str] | None = None
    resources: list[str] | None = None
    resource_names: list[str] | None = None
    non_resource_urls: list[str] | None = Field(None, alias="nonResourceURLs")


class AggregationRule(ApiModel):
    cluster_role_selectors: list[LabelSelector] | None = None


class Subject(ApiModel):
    kind: str | None = None
    api_group: str | None = None
    name: str | None = None
    namespace: str | None = None


class RoleRef(ApiModel):
    api_group: str | None = None
    kind: str | None = None
    name: str | None = None


_GROUP_VERSION = "rbac.authorization.k8s.io/v1"


class Role(KubeObject):
    API_VERSION: ClassVar[str] = _GROUP_VERSION
    KIND: ClassVar[str] = "Role"
    PLURAL: ClassVar[str] = "roles"

    rules: list[PolicyRule] | None = None


class ClusterRole(KubeObject):
    API_VERSION: ClassVar[str] = _GROUP_VERSION
    KIND: ClassVar[str] = "ClusterRole"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "clusterroles"

    rules: list[PolicyRule] | None = None
    aggregation_rule: AggregationRule | None = None


class RoleBinding(KubeObject):
    API_VERSION: ClassVar[str] = _GROUP_VERSION
    KIND: ClassVar[str] = "RoleBinding"
    PLURAL: ClassVar[str] = "rolebindings"

    subjects: list[Subject] | None = None
    role_ref: RoleRef | None = None


class ClusterRoleBinding(KubeObject):
    API_VERSION: ClassVar[str] = _GROUP_VERSION
    KIND: ClassVar[str] = "ClusterRoleBinding"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "clusterrolebindings"

    subjects: list[Subject] | None = None
    role_ref: RoleRef | None = None
