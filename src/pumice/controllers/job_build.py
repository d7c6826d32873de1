"""What the job controller creates for a Job: its PodGroup and its pods, as wire dicts.

Names, annotations and labels follow ``pkg/controllers/job/job_controller_actions.go`` and
``job_controller_util.go`` (``createJobPod``), so that the scheduler and tools see Volcano's objects.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from pumice.api.quantity import format_quantity, milli_value

from .job_plugins import owner_reference, plugins_of
from .names import (
    GROUP_NAME,
    JOB_NAME,
    JOB_NAMESPACE,
    JOB_RETRY_COUNT,
    JOB_VERSION,
    PARTITION_ID,
    QUEUE_NAME,
    TASK_INDEX,
    TASK_SPEC,
    TEMPLATE_UID,
    annotations_of,
    labels,
    name_of,
    namespace_of,
    uid_of,
)

__all__ = [
    "INHERITED_ANNOTATIONS",
    "build_pod",
    "build_podgroup",
    "min_resources",
    "pod_name",
    "pod_requests",
    "podgroup_name",
    "podgroup_spec",
    "tasks_of",
]

Obj = dict[str, Any]

#: Job annotations/labels Volcano copies onto each pod.
INHERITED_ANNOTATIONS = (
    "volcano.sh/preemptable",
    "volcano.sh/cooldown-time",
    "volcano.sh/revocable-zone",
    "volcano.sh/jdb-min-available",
    "volcano.sh/jdb-max-unavailable",
)


def podgroup_name(job: Obj) -> str:
    """Volcano names a job's PodGroup ``<job.name>-<job.uid>``."""
    return f"{name_of(job)}-{uid_of(job)}"


def pod_name(job_name: str, task: str, index: int) -> str:
    return f"{job_name}-{task}-{index}"


def _spec(job: Obj) -> Obj:
    return job.get("spec") or {}


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """A pod's requests in thousandths: max(sum of containers, each init container) plus overhead."""
    total: dict[str, int] = {}
    for container in pod_spec.get("containers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0) + milli_value(value)
    for container in pod_spec.get("initContainers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total.get(name, 0), milli_value(value))
    for name, value in (pod_spec.get("overhead") or {}).items():
        total[name] = total.get(name, 0) + milli_value(value)
    return total


def _add(total: dict[str, int], request: Mapping[str, int], times: int) -> None:
    for name, value in request.items():
        total[name] = total.get(name, 0) + value * times


def min_resources(job: Obj, priorities: Mapping[str, int]) -> dict[str, str]:
    """``calcPGMinResources``: the requests of the first ``minAvailable`` pods, tasks by priority.

    First every task's own ``minAvailable``, then the remaining replicas, each pass in priority order.
    """
    spec = _spec(job)
    wanted = int(spec.get("minAvailable") or 0)
    tasks = sorted(
        spec.get("tasks") or [],
        key=lambda t: -priorities.get(((t.get("template") or {}).get("spec") or {}).get("priorityClassName") or "", 0),
    )
    total: dict[str, int] = {}
    count = 0
    for task in tasks:
        if task.get("minAvailable") is None or count >= wanted:
            continue
        n = min(int(task["minAvailable"]), wanted - count)
        _add(total, pod_requests((task.get("template") or {}).get("spec") or {}), n)
        count += n
    for task in tasks:
        if count >= wanted:
            break
        rest = int(task.get("replicas") or 0) - int(task.get("minAvailable") or 0)
        n = min(max(rest, 0), wanted - count)
        _add(total, pod_requests((task.get("template") or {}).get("spec") or {}), n)
        count += n
    return {name: format_quantity(value, milli=True) for name, value in sorted(total.items()) if value}


def podgroup_spec(job: Obj, priorities: Mapping[str, int]) -> Obj:
    spec = _spec(job)
    tasks: list[Obj] = spec.get("tasks") or []
    pg: Obj = {
        "minMember": int(spec.get("minAvailable") or 0),
        "minTaskMember": {str(t.get("name")): int(t.get("minAvailable") or 0) for t in tasks},
        "queue": spec.get("queue") or "default",
    }
    if spec.get("priorityClassName"):
        pg["priorityClassName"] = spec["priorityClassName"]
    resources = min_resources(job, priorities)
    if resources:
        pg["minResources"] = resources
    if spec.get("networkTopology"):
        pg["networkTopology"] = copy.deepcopy(spec["networkTopology"])
    policies = [_sub_group_policy(t) for t in tasks if t.get("partitionPolicy")]
    if policies:
        pg["subGroupPolicy"] = policies
    return pg


def _sub_group_policy(task: Obj) -> Obj:
    partition = task["partitionPolicy"]
    policy: Obj = {
        "name": task.get("name"),
        "subGroupSize": int(partition.get("partitionSize") or 1),
        "minSubGroups": int(partition.get("minPartitions") or 0),
        "labelSelector": {"matchLabels": {TASK_SPEC: task.get("name")}},
        "matchLabelKeys": [PARTITION_ID],
    }
    if partition.get("networkTopology"):
        policy["networkTopology"] = copy.deepcopy(partition["networkTopology"])
    return policy


def build_podgroup(job: Obj, priorities: Mapping[str, int]) -> Obj:
    meta: Obj = {
        "name": podgroup_name(job),
        "namespace": namespace_of(job),
        "ownerReferences": [owner_reference(job)],
    }
    if labels(job):
        meta["labels"] = dict(labels(job))
    if annotations_of(job):
        meta["annotations"] = dict(annotations_of(job))
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": podgroup_spec(job, priorities),
        "status": {"phase": "Pending"},
    }


def build_pod(job: Obj, task: Obj, index: int, *, version: int, retry_count: int) -> Obj:
    """Pod ``<job>-<task>-<index>`` from the task template, with Volcano's annotations and labels."""
    spec = _spec(job)
    job_name, ns, task_name = name_of(job), namespace_of(job), str(task.get("name"))
    template = copy.deepcopy(task.get("template") or {})
    tmeta = template.get("metadata") or {}
    pod_spec: Obj = template.get("spec") or {}
    if not pod_spec.get("schedulerName"):
        pod_spec["schedulerName"] = spec.get("schedulerName") or "volcano"
    if not pod_spec.get("priorityClassName") and spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec["priorityClassName"]
    queue = spec.get("queue") or "default"
    pod_annotations: dict[str, str] = dict(tmeta.get("annotations") or {})
    pod_labels: dict[str, str] = dict(tmeta.get("labels") or {})
    pod_annotations.update({
        TASK_SPEC: task_name,
        TASK_INDEX: str(index),
        GROUP_NAME: podgroup_name(job),
        JOB_NAME: job_name,
        QUEUE_NAME: queue,
        JOB_VERSION: str(version),
        TEMPLATE_UID: f"{job_name}-{task_name}",
        JOB_RETRY_COUNT: str(retry_count),
    })
    if task.get("topologyPolicy"):
        pod_annotations["volcano.sh/numa-topology-policy"] = str(task["topologyPolicy"])
    for key in INHERITED_ANNOTATIONS:
        if key in annotations_of(job):
            pod_annotations[key] = annotations_of(job)[key]
        if key in labels(job):
            pod_labels[key] = labels(job)[key]
    pod_labels.update({
        TASK_INDEX: str(index),
        JOB_NAME: job_name,
        TASK_SPEC: task_name,
        JOB_NAMESPACE: ns,
        QUEUE_NAME: queue,
    })
    partition = task.get("partitionPolicy") or {}
    if partition.get("partitionSize"):
        pod_labels[PARTITION_ID] = str(index // int(partition["partitionSize"]))
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(job_name, task_name, index),
            "namespace": ns,
            "labels": pod_labels,
            "annotations": pod_annotations,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": pod_spec,
        "status": {"phase": "Pending"},
    }
    for plugin in plugins_of(job):
        plugin.on_pod_create(pod, job)  # may raise PluginError: then no pod at all (Volcano's syncJob)
    return pod


def tasks_of(job: Obj) -> Iterable[Obj]:
    return _spec(job).get("tasks") or []
