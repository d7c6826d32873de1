"""``flow.volcano.sh/v1alpha1`` JobFlow and JobTemplate (``staging/.../apis/flow/v1alpha1``).

A JobTemplate is a Volcano Job's spec that no controller runs; a JobFlow names templates in ``flows`` and
the flow controller creates a Job ``<flow>-<template>`` from each once the flows it ``dependsOn`` have
completed. Field constraints are those of Volcano's CRDs (kubebuilder markers).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from pumice.api.base import ApiModel, Int
from pumice.api.batch import JobSpec, TaskState
from pumice.api.meta import KubeObject, PrinterColumn

__all__ = [
    "FLOW_PHASES",
    "Flow",
    "FlowCondition",
    "FlowDependsOn",
    "FlowJobStatus",
    "FlowPatch",
    "FlowState",
    "HTTPHeader",
    "HttpGet",
    "JobFlow",
    "JobFlowSpec",
    "JobFlowStatus",
    "JobRunningHistory",
    "JobTemplate",
    "JobTemplateStatus",
    "Probe",
    "TaskStatus",
    "TcpSocket",
]

#: ``+kubebuilder:validation:Enum=Succeed;Terminating;Failed;Running;Pending``
FLOW_PHASES = ("Succeed", "Terminating", "Failed", "Running", "Pending")

Port = Annotated[Int, Field(ge=0, le=65535)]
TaskName = Annotated[str, Field(max_length=253)]


class HTTPHeader(ApiModel):
    name: str | None = None
    value: str | None = None


class HttpGet(ApiModel):
    task_name: TaskName | None = None
    path: str | None = None
    port: Port | None = None
    http_header: HTTPHeader | None = None


class TcpSocket(ApiModel):
    task_name: TaskName | None = None
    port: Port


class TaskStatus(ApiModel):
    task_name: TaskName | None = None
    phase: Annotated[str, Field(max_length=63)] | None = None


class Probe(ApiModel):
    http_get_list: list[HttpGet] | None = None
    tcp_socket_list: list[TcpSocket] | None = None
    task_status_list: list[TaskStatus] | None = None


class FlowDependsOn(ApiModel):
    #: Names of the flows (templates) that must complete first.
    targets: list[str] | None = None
    probe: Probe | None = None


class FlowPatch(ApiModel):
    job_spec: JobSpec | None = None


class Flow(ApiModel):
    #: The JobTemplate's name (in the JobFlow's namespace).
    name: Annotated[str, Field(min_length=1)]
    depends_on: FlowDependsOn | None = None
    patch: FlowPatch | None = None


class JobFlowSpec(ApiModel):
    flows: list[Flow] | None = None
    #: ``retain`` (keep the Jobs once the flow succeeded) or ``delete``.
    job_retain_policy: Literal["retain", "delete"] | None = None


class JobRunningHistory(ApiModel):
    start_timestamp: str | None = None
    end_timestamp: str | None = None
    state: str | None = None


class FlowJobStatus(ApiModel):
    name: str | None = None
    state: str | None = None
    start_timestamp: str | None = None
    end_timestamp: str | None = None
    restart_count: Annotated[Int, Field(ge=0)] | None = None
    running_histories: list[JobRunningHistory] | None = None


class FlowCondition(ApiModel):
    phase: str | None = None
    create_timestamp: str | None = Field(None, alias="createTime")
    #: A Go duration string.
    running_duration: str | None = None
    task_status_count: dict[str, TaskState] | None = None


class FlowState(ApiModel):
    phase: Literal["Succeed", "Terminating", "Failed", "Running", "Pending"] | None = None


class JobFlowStatus(ApiModel):
    pending_jobs: list[str] | None = None
    running_jobs: list[str] | None = None
    failed_jobs: list[str] | None = None
    completed_jobs: list[str] | None = None
    terminated_jobs: list[str] | None = None
    un_know_jobs: list[str] | None = None
    job_status_list: list[FlowJobStatus] | None = None
    conditions: dict[str, FlowCondition] | None = None
    state: FlowState | None = None


class JobFlow(KubeObject):
    API_VERSION: ClassVar[str] = "flow.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "JobFlow"
    PLURAL: ClassVar[str] = "jobflows"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("jf",)
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Status", "string", ".status.state.phase"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    )

    spec: JobFlowSpec | None = None
    status: JobFlowStatus | None = None


class JobTemplateStatus(ApiModel):
    #: The Jobs created from this template.
    job_depends_on_list: list[str] | None = None


class JobTemplate(KubeObject):
    """A Volcano Job's spec, run only when a JobFlow names it (``spec`` is a ``batch.volcano.sh`` JobSpec)."""

    API_VERSION: ClassVar[str] = "flow.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "JobTemplate"
    PLURAL: ClassVar[str] = "jobtemplates"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("jt",)

    spec: JobSpec | None = None
    status: JobTemplateStatus | None = None
