"""Core ``v1`` types: Node, Pod, Namespace, ResourceQuota, ServiceAccount and the pod template of workloads.

Only the fields the scheduler and controllers read are modelled; everything else in a
manifest passes through untouched as an extra field.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from pumice.api.base import ApiModel, Int, ResourceList, StrictBool
from pumice.api.meta import KubeObject, LabelSelector, ObjectMeta

__all__ = [
    "Affinity",
    "Container",
    "ContainerPort",
    "ContainerStatus",
    "Namespace",
    "NamespaceSpec",
    "NamespaceStatus",
    "Node",
    "NodeAddress",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodCondition",
    "PodSchedulingGate",
    "PodSpec",
    "PodStatus",
    "PodTemplateSpec",
    "PreferredSchedulingTerm",
    "ResourceQuota",
    "ResourceQuotaSpec",
    "ResourceQuotaStatus",
    "ResourceRequirements",
    "ScopeSelector",
    "ScopedResourceSelectorRequirement",
    "ServiceAccount",
    "Taint",
    "Toleration",
    "WeightedPodAffinityTerm",
]


# ---------------------------------------------------------------------------- Node


class Taint(ApiModel):
    key: str | None = None
    value: str | None = None
    effect: str | None = None
    time_added: str | None = None


class NodeSpec(ApiModel):
    unschedulable: StrictBool | None = None
    taints: list[Taint] | None = None


class NodeCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_heartbeat_time: str | None = None
    last_transition_time: str | None = None


class NodeAddress(ApiModel):
    type: str | None = None
    address: str | None = None


class NodeStatus(ApiModel):
    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    conditions: list[NodeCondition] | None = None
    addresses: list[NodeAddress] | None = None


class Node(KubeObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Node"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "nodes"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("no",)

    spec: NodeSpec | None = None
    status: NodeStatus | None = None


# ---------------------------------------------------------------------------- Pod: containers


class ResourceRequirements(ApiModel):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class ContainerPort(ApiModel):
    name: str | None = None
    container_port: Int | None = None
    host_port: Int | None = None
    protocol: str | None = None
    host_ip: str | None = Field(None, alias="hostIP")


class Container(ApiModel):
    name: str | None = None
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    resources: ResourceRequirements | None = None
    ports: list[ContainerPort] | None = None
    #: ``Always`` on an init container makes it a sidecar (counted with the app containers).
    restart_policy: str | None = None


# ---------------------------------------------------------------------------- Pod: affinity


class NodeSelectorRequirement(ApiModel):
    key: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class NodeSelectorTerm(ApiModel):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(ApiModel):
    node_selector_terms: list[NodeSelectorTerm] | None = None


class PreferredSchedulingTerm(ApiModel):
    weight: Int | None = None
    preference: NodeSelectorTerm | None = None


class NodeAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = None


class PodAffinityTerm(ApiModel):
    label_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    topology_key: str | None = None
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None


class WeightedPodAffinityTerm(ApiModel):
    weight: Int | None = None
    pod_affinity_term: PodAffinityTerm | None = None


class PodAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = None


class PodAntiAffinity(PodAffinity):
    """Same shape as :class:`PodAffinity`, opposite meaning."""


class Affinity(ApiModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class Toleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int | None = None


class PodSchedulingGate(ApiModel):
    name: str | None = None


# ---------------------------------------------------------------------------- Pod


class PodSpec(ApiModel):
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    overhead: ResourceList | None = None
    node_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    priority: Int | None = None
    priority_class_name: str | None = None
    scheduler_name: str | None = None
    preemption_policy: str | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    restart_policy: str | None = None
    # Read by the Volcano job webhook (hostNetwork without dnsPolicy -> ClusterFirstWithHostNet).
    host_network: StrictBool | None = None
    dns_policy: str | None = None


class PodCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_probe_time: str | None = None
    last_transition_time: str | None = None


class ContainerStatus(ApiModel):
    name: str | None = None
    ready: StrictBool | None = None
    restart_count: Int | None = None
    #: ``{running|waiting|terminated: {...}}`` kept as a plain mapping.
    state: dict[str, Any] | None = None
    last_state: dict[str, Any] | None = None


class PodStatus(ApiModel):
    phase: str | None = None
    conditions: list[PodCondition] | None = None
    reason: str | None = None
    message: str | None = None
    nominated_node_name: str | None = None
    start_time: str | None = None
    container_statuses: list[ContainerStatus] | None = None
    init_container_statuses: list[ContainerStatus] | None = None


class Pod(KubeObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Pod"
    PLURAL: ClassVar[str] = "pods"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("po",)

    spec: PodSpec | None = None
    status: PodStatus | None = None


class PodTemplateSpec(ApiModel):
    """The pod template of a workload (a Volcano Job task, a Deployment...): not a top-level object."""

    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None


# ---------------------------------------------------------------------------- Namespace


class NamespaceSpec(ApiModel):
    finalizers: list[str] | None = None


class NamespaceStatus(ApiModel):
    phase: str | None = None


class Namespace(KubeObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Namespace"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "namespaces"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("ns",)

    spec: NamespaceSpec | None = None
    status: NamespaceStatus | None = None


# ---------------------------------------------------------------------------- ResourceQuota, ServiceAccount


class ScopedResourceSelectorRequirement(ApiModel):
    scope_name: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class ScopeSelector(ApiModel):
    match_expressions: list[ScopedResourceSelectorRequirement] | None = None


class ResourceQuotaSpec(ApiModel):
    hard: ResourceList | None = None
    scopes: list[str] | None = None
    scope_selector: ScopeSelector | None = None


class ResourceQuotaStatus(ApiModel):
    hard: ResourceList | None = None
    used: ResourceList | None = None


class ResourceQuota(KubeObject):
    """A namespace's resource quota; ``status`` (hard and used) is kept by the quota controller."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ResourceQuota"
    PLURAL: ClassVar[str] = "resourcequotas"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("quota",)

    spec: ResourceQuotaSpec | None = None
    status: ResourceQuotaStatus | None = None


class ServiceAccount(KubeObject):
    """Stored so that bundles naming one apply; no tokens are minted."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ServiceAccount"
    PLURAL: ClassVar[str] = "serviceaccounts"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("sa",)
