"""``federation.pumice.io/v1alpha1`` Cluster: a member cluster of a pumice federation.

A ``Cluster`` lives on the federation's own API server (the *host*) and names a member by kubeconfig (a
Secret on the host, or a file the federation can read). Its labels carry region, zone and provider
(``topology.kubernetes.io/region``, ``topology.kubernetes.io/zone``, ``federation.pumice.io/provider``); its
spec a price per resource-hour and taints that jobs must tolerate. The federation keeps ``status`` current:
whether the member answers, and what it holds (see :class:`ResourceSummary`).

Named ``MemberCluster`` in Python: ``pumice.api.Cluster`` is the Queue's ``extendClusters`` entry.
"""

from __future__ import annotations

from typing import ClassVar

from pumice.api.base import ApiModel, Int, ResourceList, StrictBool, openapi
from pumice.api.core import Taint
from pumice.api.meta import KubeObject, PrinterColumn

__all__ = [
    "BlockSummary",
    "ClusterCondition",
    "ClusterSpec",
    "ClusterStatus",
    "GpuModelSummary",
    "KubeconfigSource",
    "MemberCluster",
    "NodeShapeSummary",
    "ResourceSummary",
    "SecretKeyReference",
    "TierSummary",
]


class SecretKeyReference(ApiModel):
    """A key of a Secret on the host (``key`` defaults to ``kubeconfig``)."""

    namespace: str | None = openapi(required=True, minLength=1)
    name: str | None = openapi(required=True, minLength=1)
    key: str | None = None


class KubeconfigSource(ApiModel):
    """Exactly one of ``secretRef`` and ``file``; ``context`` picks one of the kubeconfig's contexts."""

    secret_ref: SecretKeyReference | None = None
    file: str | None = None
    context: str | None = None


class ClusterSpec(ApiModel):
    kubeconfig: KubeconfigSource | None = None
    #: Price of one unit of a resource for one hour: ``cpu`` per core, ``memory`` per GiB, others per unit.
    cost: ResourceList | None = None
    #: Jobs that do not tolerate a ``NoSchedule``/``NoExecute`` taint are not sent here (see the docs).
    taints: list[Taint] | None = None
    #: Cordon: no new job is sent to this member; running ones stay.
    unschedulable: StrictBool | None = None


class ClusterCondition(ApiModel):
    """``Ready``: the member answers (``True``), or has not answered since ``lastTransitionTime``."""

    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    last_heartbeat_time: str | None = None


class NodeShapeSummary(ApiModel):
    """Nodes of one shape (allocatable and GPU model): how many, what is free, the most free on one node."""

    resources: ResourceList | None = None
    gpu_model: str | None = None
    nodes: Int | None = None
    #: Nodes with nothing allocated.
    idle_nodes: Int | None = None
    free: ResourceList | None = None
    largest_free: ResourceList | None = None


class GpuModelSummary(ApiModel):
    model: str | None = None
    nodes: Int | None = None
    allocatable: Int | None = None
    free: Int | None = None


class BlockSummary(ApiModel):
    """The HyperNode of a tier with the most free capacity (GPUs if the member has any, else CPU)."""

    hyper_node: str | None = None
    nodes: Int | None = None
    idle_nodes: Int | None = None
    free: ResourceList | None = None


class TierSummary(ApiModel):
    tier: Int | None = None
    tier_name: str | None = None
    hyper_nodes: Int | None = None
    largest_free_block: BlockSummary | None = None


class ResourceSummary(ApiModel):
    nodes: Int | None = None
    ready_nodes: Int | None = None
    allocatable: ResourceList | None = None
    allocated: ResourceList | None = None
    free: ResourceList | None = None
    node_shapes: list[NodeShapeSummary] | None = None
    gpu_models: list[GpuModelSummary] | None = None
    hyper_node_tiers: list[TierSummary] | None = None


class ClusterStatus(ApiModel):
    conditions: list[ClusterCondition] | None = None
    kubernetes_version: str | None = None
    resource_summary: ResourceSummary | None = None
    #: Jobs the federation has placed here that have not finished.
    dispatched_jobs: Int | None = None


class MemberCluster(KubeObject):
    API_VERSION: ClassVar[str] = "federation.pumice.io/v1alpha1"
    KIND: ClassVar[str] = "Cluster"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "clusters"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("mc",)
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("READY", "string", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("REGION", "string", ".metadata.labels.topology\\.kubernetes\\.io/region"),
        PrinterColumn("NODES", "integer", ".status.resourceSummary.readyNodes"),
        PrinterColumn("JOBS", "integer", ".status.dispatchedJobs"),
        PrinterColumn("AGE", "date", ".metadata.creationTimestamp"),
        PrinterColumn("ZONE", "string", ".metadata.labels.topology\\.kubernetes\\.io/zone", priority=1),
        PrinterColumn("VERSION", "string", ".status.kubernetesVersion", priority=1),
    )

    spec: ClusterSpec | None = None
    status: ClusterStatus | None = None
