"""``scheduling.k8s.io/v1`` PriorityClass and ``scheduling.volcano.sh/v1beta1`` PodGroup and Queue."""

from __future__ import annotations

from typing import ClassVar

from pumice.api.base import ApiModel, Int, ResourceList, StrictBool, openapi
from pumice.api.meta import KubeObject, LabelSelector, PrinterColumn

__all__ = [
    "DNS1123_SUBDOMAIN",
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


#: A DNS-1123 subdomain (object names: queues, priority classes, ...).
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


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

    mode: str | None = openapi(default="hard", enum=["hard", "soft"])
    highest_tier_allowed: Int | None = openapi(minimum=0)
    highest_tier_name: str | None = openapi(maxLength=253)


class SubGroupPolicy(ApiModel):
    name: str | None = openapi(maxLength=253)
    network_topology: NetworkTopologySpec | None = None
    sub_group_size: Int | None = openapi(default=1, minimum=1)
    min_sub_groups: Int | None = openapi(default=0, minimum=0)
    label_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None


class PodGroupSpec(ApiModel):
    min_member: Int | None = openapi(minimum=0)
    min_task_member: dict[str, Int] | None = None
    queue: str | None = openapi(default="default", maxLength=253, pattern=DNS1123_SUBDOMAIN)
    priority_class_name: str | None = openapi(maxLength=253)
    min_resources: ResourceList | None = None
    network_topology: NetworkTopologySpec | None = None
    sub_group_policy: list[SubGroupPolicy] | None = None


class PodGroupCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    transition_id: str | None = openapi(alias="transitionID")
    last_transition_time: str | None = openapi(format="date-time")
    reason: str | None = None
    message: str | None = None


class PodGroupStatus(ApiModel):
    phase: str | None = openapi(enum=["Pending", "Running", "Unknown", "Inqueue", "Completed"])
    conditions: list[PodGroupCondition] | None = None
    running: Int | None = openapi(minimum=0)
    succeeded: Int | None = openapi(minimum=0)
    failed: Int | None = openapi(minimum=0)


class PodGroup(KubeObject):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "PodGroup"
    PLURAL: ClassVar[str] = "podgroups"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pg", "podgroup-v1beta1")
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("STATUS", "string", ".status.phase"),
        PrinterColumn("minMember", "integer", ".spec.minMember"),
        PrinterColumn("RUNNINGS", "integer", ".status.running"),
        PrinterColumn("AGE", "date", ".metadata.creationTimestamp"),
        PrinterColumn("QUEUE", "string", ".spec.queue", priority=1),
    )

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
    weight: Int | None = openapi(default=1, minimum=1, maximum=65535)
    capability: ResourceList | None = None
    reclaimable: StrictBool | None = None
    extend_clusters: list[Cluster] | None = None
    guarantee: Guarantee | None = None
    affinity: QueueAffinity | None = None
    type: str | None = openapi(maxLength=253)
    parent: str | None = openapi(maxLength=253, pattern=DNS1123_SUBDOMAIN)
    deserved: ResourceList | None = None
    priority: Int | None = openapi(minimum=0)
    dequeue_strategy: str | None = openapi(default="traverse", enum=["fifo", "traverse"])


class Reservation(ApiModel):
    nodes: list[str] | None = None
    resource: ResourceList | None = None


class QueueStatus(ApiModel):
    state: str | None = openapi(enum=["Open", "Closed", "Closing", "Unknown"])
    unknown: Int | None = openapi(minimum=0)
    pending: Int | None = openapi(minimum=0)
    running: Int | None = openapi(minimum=0)
    inqueue: Int | None = openapi(minimum=0)
    completed: Int | None = openapi(minimum=0)
    reservation: Reservation | None = None
    allocated: ResourceList | None = None


class Queue(KubeObject):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "Queue"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "queues"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("q", "queue-v1beta1")
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (PrinterColumn("PARENT", "string", ".spec.parent"),)

    spec: QueueSpec | None = None
    status: QueueStatus | None = None
