"""``batch/v1`` Job: Kubernetes' run-to-completion workload (not Volcano's ``batch.volcano.sh`` Job)."""

from __future__ import annotations

from typing import ClassVar

from pumice.api.base import ApiModel, Int, StrictBool
from pumice.api.core import PodTemplateSpec
from pumice.api.meta import KubeObject, LabelSelector

__all__ = ["CONTROLLER_UID_LABELS", "JOB_NAME_LABELS", "BatchJob", "BatchJobCondition", "BatchJobSpec",
           "BatchJobStatus"]

#: Labels a Job's pods are selected by (the ``batch.kubernetes.io/`` ones since Kubernetes 1.27).
CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")


class BatchJobSpec(ApiModel):
    parallelism: Int | None = None
    completions: Int | None = None
    backoff_limit: Int | None = None
    active_deadline_seconds: Int | None = None
    ttl_seconds_after_finished: Int | None = None
    #: ``NonIndexed`` (default) or ``Indexed``.
    completion_mode: str | None = None
    suspend: StrictBool | None = None
    manual_selector: StrictBool | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None


class BatchJobCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_probe_time: str | None = None
    last_transition_time: str | None = None


class BatchJobStatus(ApiModel):
    conditions: list[BatchJobCondition] | None = None
    start_time: str | None = None
    completion_time: str | None = None
    active: Int | None = None
    succeeded: Int | None = None
    failed: Int | None = None
    ready: Int | None = None
    completed_indexes: str | None = None


class BatchJob(KubeObject):
    API_VERSION: ClassVar[str] = "batch/v1"
    KIND: ClassVar[str] = "Job"
    PLURAL: ClassVar[str] = "jobs"

    spec: BatchJobSpec | None = None
    status: BatchJobStatus | None = None
