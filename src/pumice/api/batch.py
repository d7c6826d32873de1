"""``batch.volcano.sh/v1alpha1`` Job and CronJob, and ``bus.volcano.sh/v1alpha1`` Command."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from pumice.api.base import ApiModel, Int, StrictBool
from pumice.api.core import PodTemplateSpec
from pumice.api.meta import KubeObject, ObjectMeta, OwnerReference
from pumice.api.scheduling import NetworkTopologySpec

__all__ = [
    "Command",
    "CronJob",
    "CronJobSpec",
    "CronJobStatus",
    "DependsOn",
    "Job",
    "JobCondition",
    "JobSpec",
    "JobState",
    "JobStatus",
    "JobTemplateSpec",
    "LifecyclePolicy",
    "ObjectReference",
    "PartitionPolicy",
    "TaskSpec",
    "TaskState",
    "VolumeSpec",
]


class VolumeSpec(ApiModel):
    mount_path: str | None = None
    volume_claim_name: str | None = None
    #: A ``PersistentVolumeClaimSpec``, kept as a plain mapping.
    volume_claim: dict[str, Any] | None = None


class LifecyclePolicy(ApiModel):
    """Exactly one of ``event``/``events`` or ``exitCode``; ``timeout`` delays the action."""

    action: str | None = None
    event: str | None = None
    events: list[str] | None = None
    exit_code: Int | None = None
    #: A Go duration string such as ``"10m"``.
    timeout: str | None = None


class DependsOn(ApiModel):
    name: list[str] | None = None
    #: ``any`` or ``all``.
    iteration: str | None = None


class PartitionPolicy(ApiModel):
    total_partitions: Int | None = None
    partition_size: Int | None = None
    network_topology: NetworkTopologySpec | None = None
    min_partitions: Int | None = None


class TaskSpec(ApiModel):
    name: str | None = None
    replicas: Int | None = None
    min_available: Int | None = None
    template: PodTemplateSpec | None = None
    policies: list[LifecyclePolicy] | None = None
    topology_policy: str | None = None
    max_retry: Int | None = None
    depends_on: DependsOn | None = None
    partition_policy: PartitionPolicy | None = None


class JobSpec(ApiModel):
    scheduler_name: str | None = None
    min_available: Int | None = None
    volumes: list[VolumeSpec] | None = None
    tasks: list[TaskSpec] | None = None
    policies: list[LifecyclePolicy] | None = None
    #: Job controller plugins (``svc``, ``ssh``, ``env``, ``mpi``...) -> their arguments.
    plugins: dict[str, list[str] | None] | None = None
    queue: str | None = None
    max_retry: Int | None = None
    ttl_seconds_after_finished: Int | None = None
    priority_class_name: str | None = None
    min_success: Int | None = None
    network_topology: NetworkTopologySpec | None = None
    #: A Go duration string.
    running_estimate: str | None = None


class JobState(ApiModel):
    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class TaskState(ApiModel):
    #: Pod phase -> number of pods of the task in that phase.
    phase: dict[str, Int] | None = None


class JobCondition(ApiModel):
    #: A job phase.
    status: str | None = None
    last_transition_time: str | None = None


class JobStatus(ApiModel):
    state: JobState | None = None
    min_available: Int | None = None
    task_status_count: dict[str, TaskState] | None = None
    pending: Int | None = None
    running: Int | None = None
    succeeded: Int | None = None
    failed: Int | None = None
    terminating: Int | None = None
    unknown: Int | None = None
    version: Int | None = None
    retry_count: Int | None = None
    #: A Go duration string.
    running_duration: str | None = None
    conditions: list[JobCondition] | None = None
    controlled_resources: dict[str, str] | None = None


class Job(KubeObject):
    API_VERSION: ClassVar[str] = "batch.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Job"
    PLURAL: ClassVar[str] = "jobs"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("vcjob", "vj")

    spec: JobSpec | None = None
    status: JobStatus | None = None


class Command(KubeObject):
    """A request from a client (vcctl) to a controller: e.g. ``AbortJob`` on a Job.

    Fields sit at the top level; the target object is ``target`` on the wire.
    """

    API_VERSION: ClassVar[str] = "bus.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Command"
    PLURAL: ClassVar[str] = "commands"

    action: str | None = None
    target_object: OwnerReference | None = Field(None, alias="target")
    reason: str | None = None
    message: str | None = None


# ---------------------------------------------------------------------------- CronJob


class JobTemplateSpec(ApiModel):
    """The Volcano Job a CronJob creates: its metadata (labels, annotations) and spec."""

    metadata: ObjectMeta | None = None
    spec: JobSpec | None = None


class ObjectReference(ApiModel):
    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class CronJobSpec(ApiModel):
    schedule: str | None = None
    time_zone: str | None = None
    starting_deadline_seconds: Int | None = None
    #: ``Allow`` (default), ``Forbid`` or ``Replace``.
    concurrency_policy: str | None = None
    suspend: StrictBool | None = None
    job_template: JobTemplateSpec | None = None
    successful_jobs_history_limit: Int | None = None
    failed_jobs_history_limit: Int | None = None


class CronJobStatus(ApiModel):
    active: list[ObjectReference] | None = None
    last_schedule_time: str | None = None
    last_successful_time: str | None = None


class CronJob(KubeObject):
    """Volcano's CronJob (``batch.volcano.sh/v1alpha1``): Volcano Jobs on a cron schedule."""

    API_VERSION: ClassVar[str] = "batch.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "CronJob"
    PLURAL: ClassVar[str] = "cronjobs"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("cronvcjob", "cronvj")

    spec: CronJobSpec | None = None
    status: CronJobStatus | None = None
