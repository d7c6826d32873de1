"""``batch.volcano.sh/v1alpha1`` Job and CronJob, and ``bus.volcano.sh/v1alpha1`` Command."""

from __future__ import annotations

from typing import Any, ClassVar

from pumice.api.base import ApiModel, Int, StrictBool, openapi
from pumice.api.core import PodTemplateSpec
from pumice.api.meta import KubeObject, ObjectMeta, OwnerReference, PrinterColumn
from pumice.api.scheduling import DNS1123_SUBDOMAIN, NetworkTopologySpec

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


#: Lifecycle events a policy may name (the CRD's enum; the job webhook accepts fewer of them).
POLICY_EVENT_ENUM = (
    "*", "PodPending", "PodRunning", "PodFailed", "PodEvicted", "Unknown", "TaskCompleted", "OutOfSync",
    "CommandIssued", "JobUpdated", "TaskFailed",
)
JOB_PHASES = (
    "Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing", "Completed", "Terminating",
    "Terminated", "Failed",
)
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class VolumeSpec(ApiModel):
    mount_path: str | None = openapi(required=True, minLength=1, pattern="^[^:]+$")
    volume_claim_name: str | None = openapi(maxLength=253)
    #: A ``PersistentVolumeClaimSpec``, kept as a plain mapping.
    volume_claim: dict[str, Any] | None = None


class LifecyclePolicy(ApiModel):
    """Exactly one of ``event``/``events`` or ``exitCode``; ``timeout`` delays the action."""

    action: str | None = None
    event: str | None = openapi(enum=list(POLICY_EVENT_ENUM))
    events: list[str] | None = openapi(items={"enum": list(POLICY_EVENT_ENUM)})
    exit_code: Int | None = None
    #: A Go duration string such as ``"10m"``.
    timeout: str | None = None


class DependsOn(ApiModel):
    name: list[str] | None = None
    #: ``any`` or ``all``.
    iteration: str | None = None


class PartitionPolicy(ApiModel):
    total_partitions: Int | None = openapi(required=True, minimum=1)
    partition_size: Int | None = openapi(required=True, minimum=1)
    network_topology: NetworkTopologySpec | None = None
    min_partitions: Int | None = openapi(default=0, minimum=0)


class TaskSpec(ApiModel):
    name: str | None = openapi(maxLength=63, pattern=DNS1123_LABEL)
    replicas: Int | None = openapi(minimum=0)
    min_available: Int | None = openapi(minimum=0)
    template: PodTemplateSpec | None = None
    policies: list[LifecyclePolicy] | None = None
    topology_policy: str | None = openapi(enum=["none", "best-effort", "restricted", "single-numa-node"])
    max_retry: Int | None = openapi(minimum=0)
    depends_on: DependsOn | None = None
    partition_policy: PartitionPolicy | None = None


class JobSpec(ApiModel):
    scheduler_name: str | None = openapi(maxLength=63)
    min_available: Int | None = openapi(minimum=0)
    volumes: list[VolumeSpec] | None = None
    tasks: list[TaskSpec] | None = openapi(minItems=1)
    policies: list[LifecyclePolicy] | None = None
    #: Job controller plugins (``svc``, ``ssh``, ``env``, ``mpi``...) -> their arguments.
    plugins: dict[str, list[str] | None] | None = None
    queue: str | None = openapi(default="default", maxLength=253, pattern=DNS1123_SUBDOMAIN)
    max_retry: Int | None = openapi(default=3, minimum=0)
    ttl_seconds_after_finished: Int | None = openapi(minimum=0)
    priority_class_name: str | None = openapi(maxLength=253, pattern=DNS1123_SUBDOMAIN)
    min_success: Int | None = openapi(minimum=1)
    network_topology: NetworkTopologySpec | None = None
    #: A Go duration string.
    running_estimate: str | None = None


class JobState(ApiModel):
    phase: str | None = openapi(enum=list(JOB_PHASES))
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = openapi(format="date-time")


class TaskState(ApiModel):
    #: Pod phase -> number of pods of the task in that phase.
    phase: dict[str, Int] | None = None


class JobCondition(ApiModel):
    #: A job phase.
    status: str | None = openapi(required=True)
    last_transition_time: str | None = openapi(format="date-time")


class JobStatus(ApiModel):
    state: JobState | None = None
    min_available: Int | None = openapi(minimum=0)
    task_status_count: dict[str, TaskState] | None = None
    pending: Int | None = openapi(minimum=0)
    running: Int | None = openapi(minimum=0)
    succeeded: Int | None = openapi(minimum=0)
    failed: Int | None = openapi(minimum=0)
    terminating: Int | None = openapi(minimum=0)
    unknown: Int | None = openapi(minimum=0)
    version: Int | None = openapi(minimum=0)
    retry_count: Int | None = openapi(minimum=0)
    #: A Go duration string.
    running_duration: str | None = None
    conditions: list[JobCondition] | None = None
    controlled_resources: dict[str, str] | None = None


class Job(KubeObject):
    API_VERSION: ClassVar[str] = "batch.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Job"
    PLURAL: ClassVar[str] = "jobs"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("vcjob", "vj")
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("STATUS", "string", ".status.state.phase"),
        PrinterColumn("minAvailable", "integer", ".status.minAvailable"),
        PrinterColumn("RUNNINGS", "integer", ".status.running"),
        PrinterColumn("AGE", "date", ".metadata.creationTimestamp"),
        PrinterColumn("QUEUE", "string", ".spec.queue", priority=1),
    )

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
    target_object: OwnerReference | None = openapi(alias="target")
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
