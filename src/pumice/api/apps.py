"""``apps/v1`` Deployment, ReplicaSet and StatefulSet: the workloads whose pods Volcano groups itself.

Only the fields the embedded workload controllers read are modelled; the rest of a manifest (volume claim
templates, probes, ...) passes through untouched.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pumice.api.base import ApiModel, Int, StrictBool
from pumice.api.core import PodTemplateSpec
from pumice.api.meta import KubeObject, LabelSelector

__all__ = [
    "Deployment",
    "DeploymentSpec",
    "DeploymentStatus",
    "DeploymentStrategy",
    "ReplicaSet",
    "ReplicaSetSpec",
    "ReplicaSetStatus",
    "RollingUpdateDeployment",
    "RollingUpdateStatefulSetStrategy",
    "StatefulSet",
    "StatefulSetSpec",
    "StatefulSetStatus",
    "StatefulSetUpdateStrategy",
    "WorkloadCondition",
]

#: ``intstr.IntOrString``: a count or a percentage such as ``"25%"``.
IntOrString = Int | str


class WorkloadCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_update_time: str | None = None
    last_transition_time: str | None = None


# ---------------------------------------------------------------------------- ReplicaSet


class ReplicaSetSpec(ApiModel):
    replicas: Int | None = None
    min_ready_seconds: Int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None


class ReplicaSetStatus(ApiModel):
    replicas: Int | None = None
    fully_labeled_replicas: Int | None = None
    ready_replicas: Int | None = None
    available_replicas: Int | None = None
    observed_generation: Int | None = None
    conditions: list[WorkloadCondition] | None = None


class ReplicaSet(KubeObject):
    API_VERSION: ClassVar[str] = "apps/v1"
    KIND: ClassVar[str] = "ReplicaSet"
    PLURAL: ClassVar[str] = "replicasets"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("rs",)

    spec: ReplicaSetSpec | None = None
    status: ReplicaSetStatus | None = None


# ---------------------------------------------------------------------------- Deployment


class RollingUpdateDeployment(ApiModel):
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None


class DeploymentStrategy(ApiModel):
    #: ``RollingUpdate`` (default) or ``Recreate``.
    type: str | None = None
    rolling_update: RollingUpdateDeployment | None = None


class DeploymentSpec(ApiModel):
    replicas: Int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None
    strategy: DeploymentStrategy | None = None
    min_ready_seconds: Int | None = None
    revision_history_limit: Int | None = None
    paused: StrictBool | None = None
    progress_deadline_seconds: Int | None = None


class DeploymentStatus(ApiModel):
    observed_generation: Int | None = None
    replicas: Int | None = None
    updated_replicas: Int | None = None
    ready_replicas: Int | None = None
    available_replicas: Int | None = None
    unavailable_replicas: Int | None = None
    conditions: list[WorkloadCondition] | None = None
    collision_count: Int | None = None


class Deployment(KubeObject):
    API_VERSION: ClassVar[str] = "apps/v1"
    KIND: ClassVar[str] = "Deployment"
    PLURAL: ClassVar[str] = "deployments"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("deploy",)

    spec: DeploymentSpec | None = None
    status: DeploymentStatus | None = None


# ---------------------------------------------------------------------------- StatefulSet


class RollingUpdateStatefulSetStrategy(ApiModel):
    partition: Int | None = None
    max_unavailable: IntOrString | None = None


class StatefulSetUpdateStrategy(ApiModel):
    #: ``RollingUpdate`` (default) or ``OnDelete``.
    type: str | None = None
    rolling_update: RollingUpdateStatefulSetStrategy | None = None


class StatefulSetOrdinals(ApiModel):
    start: Int | None = None


class StatefulSetSpec(ApiModel):
    replicas: Int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None
    service_name: str | None = None
    #: ``OrderedReady`` (default) or ``Parallel``.
    pod_management_policy: str | None = None
    update_strategy: StatefulSetUpdateStrategy | None = None
    revision_history_limit: Int | None = None
    min_ready_seconds: Int | None = None
    ordinals: StatefulSetOrdinals | None = None
    #: ``PersistentVolumeClaim`` templates, kept as plain mappings (no volumes are simulated).
    volume_claim_templates: list[dict[str, Any]] | None = None


class StatefulSetStatus(ApiModel):
    observed_generation: Int | None = None
    replicas: Int | None = None
    ready_replicas: Int | None = None
    current_replicas: Int | None = None
    updated_replicas: Int | None = None
    available_replicas: Int | None = None
    current_revision: str | None = None
    update_revision: str | None = None
    collision_count: Int | None = None
    conditions: list[WorkloadCondition] | None = None


class StatefulSet(KubeObject):
    API_VERSION: ClassVar[str] = "apps/v1"
    KIND: ClassVar[str] = "StatefulSet"
    PLURAL: ClassVar[str] = "statefulsets"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("sts",)

    spec: StatefulSetSpec | None = None
    status: StatefulSetStatus | None = None
