"""``scheduling.k8s.io/v1`` PriorityClass and ``scheduling.volcano.sh/v1beta1`` PodGroup and Queue."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from pumice.api.base import ApiModel, Int, ResourceList, StrictBool
from pumice.api.meta import KubeObject, LabelSelector

__all__ = [
    "Cluster",
    "Guarantee",
    "NetworkTopologySpec",
    "NodeGroupAffinity",
    "NodeGroupAntiAffinity",
    "PodGroup",
    "PodGroupCondition",
    "PodGroupSpec",
    "PodGroupStatus",
    "PriorityClass",
    "Queue",
    "QueueAffinity",
    "QueueSpec",
    "QueueStatus",
    "Reservation",
    "SubGroupPolicy",
]


class PriorityClass(KubeObject):
    """Cluster-scoped; its fields sit at the top level, there is no ``spec``."""

    API_VERSION: ClassVar[str] = "scheduling.k8s.io/v1"
    KIND: ClassVar[str] = "PriorityClass"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "priorityclasses"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pc",)

    value: Int | None = None
    global_default: StrictBool | None = None
    preemption_policy: str | None = None
    description: str | None = None


# ---------------------------------------------------------------------------- PodGroup


class NetworkTopologySpec(ApiModel):
    """``mode`` is ``hard`` or ``soft``; ``highestTierAllowed`` and ``highestTierName`` exclude each other."""

    mode: str | None = None
    highest_tier_allowed: Int | None = None
    highest_tier_name: str | None = None


class SubGroupPolicy(ApiModel):
    name: str | None = None
    network_topology: NetworkTopologySpec | None = None
    sub_group_size: Int | None = None
    min_sub_groups: Int | None = None
    label_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None


class PodGroupSpec(ApiModel):
    min_member: Int | None = None
    min_task_member: dict[str, Int] | None = None
    queue: str | None = None
    priority_class_name: str | None = None
    min_resources: ResourceList | None = None
    network_topology: NetworkTopologySpec | None = None
    sub_group_policy: list[SubGroupPolicy] | None = None


class PodGroupCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    transition_id: str | None = Field(None, alias="transitionID")
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class PodGroupStatus(ApiModel):
    phase: str | None = None
    conditions: list[PodGroupCondition] | None = None
    running: Int | None = None
    succeeded: Int | None = None
    failed: Int | None = None


class PodGroup(KubeObject):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "PodGroup"
    PLURAL: ClassVar[str] = "podgroups"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pg", "podgroup-v1beta1")

    spec: PodGroupSpec | None = None
    status: PodGroupStatus | None = None


# ---------------------------------------------------------------------------- Queue


class Cluster(ApiModel):
    name: str | None = None
    weight: Int | None = None
    capacity: ResourceList | None = None


class Guarantee(ApiModel):
    resource: ResourceList | None = None


class NodeGroupAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None


class NodeGroupAntiAffinity(NodeGroupAffinity):
    """Same shape as :class:`NodeGroupAffinity`, opposite meaning."""


class QueueAffinity(ApiModel):
    node_group_affinity: NodeGroupAffinity | None = None
    node_group_anti_affinity: NodeGroupAntiAffinity | None = None


class QueueSpec(ApiModel):
    weight: Int | None = None
    capability: ResourceList | None = None
    reclaimable: StrictBool | None = None
    extend_clusters: list[Cluster] | None = None
    guarantee: Guarantee | None = None
    affinity: QueueAffinity | None = None
    type: str | None = None
    parent: str | None = None
    deserved: ResourceList | None = None
    priority: Int | None = None
    dequeue_strategy: str | None = None


class Reservation(ApiModel):
    nodes: list[str] | None = None
    resource: ResourceList | None = None


class QueueStatus(ApiModel):
    state: str | None = None
    unknown: Int | None = None
    pending: Int | None = None
    running: Int | None = None
    inqueue: Int | None = None
    completed: Int | None = None
    reservation: Reservation | None = None
    allocated: ResourceList | None = None


class Queue(KubeObject):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "Queue"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "queues"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("q", "queue-v1beta1")

    spec: QueueSpec | None = None
    status: QueueStatus | None = None
