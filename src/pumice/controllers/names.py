"""Resource names, annotation/label keys and small object accessors shared by the controllers."""

from __future__ import annotations

from typing import Any

from pumice.api.group_name import GROUP_NAME
from pumice.api.resources import COMMANDS, JOBFLOWS, JOBS, JOBTEMPLATES, PODGROUPS, QUEUES

__all__ = [
    "COMMANDS",
    "CONFIGMAPS",
    "GROUP_MIN_MEMBER",
    "GROUP_NAME",
    "JOBFLOWS",
    "JOBS",
    "JOBTEMPLATES",
    "JOB_NAME",
    "JOB_NAMESPACE",
    "JOB_RETRY_COUNT",
    "JOB_VERSION",
    "NETWORKPOLICIES",
    "PARTITION_ID",
    "PODGROUPS",
    "PODS",
    "QUEUES",
    "QUEUE_NAME",
    "QUEUE_NAME_POD",
    "SECRETS",
    "SERVICES",
    "TASK_INDEX",
    "TASK_SPEC",
    "TEMPLATE_UID",
    "annotations_of",
    "labels",
    "meta",
    "name_of",
    "namespace_of",
    "uid_of",
]

PODS = "pods"
SERVICES = "services"
CONFIGMAPS = "configmaps"
SECRETS = "secrets"
NETWORKPOLICIES = "networkpolicies.networking.k8s.io"

TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
JOB_VERSION = "volcano.sh/job-version"
JOB_RETRY_COUNT = "volcano.sh/job-retry-count"
TEMPLATE_UID = "volcano.sh/template-uid"
PARTITION_ID = "volcano.sh/partition-id"
QUEUE_NAME_POD = "scheduling.volcano.sh/queue-name"
GROUP_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"

Obj = dict[str, Any]


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def name_of(obj: Obj) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Obj) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: Obj) -> str:
    return str(meta(obj).get("uid") or "")


def annotations_of(obj: Obj) -> dict[str, str]:
    return meta(obj).get("annotations") or {}


def labels(obj: Obj) -> dict[str, str]:
    return meta(obj).get("labels") or {}
