"""Defaults Volcano fills in when an object is created through the API server.

These are the CRD ``default:`` markers and the mutating admission webhooks
(``pkg/webhooks/admission/*/mutate``). ``apply_defaults`` is for the API path only:
``pumice schedule`` reads files literally (e.g. a Queue written with ``weight: 0`` stays 0).
Go zero values count as unset, as in the webhooks (``if job.Spec.MaxRetry == 0``).
"""

from __future__ import annotations

from functools import singledispatch

from pumice.api.batch import Job, JobSpec, TaskSpec
from pumice.api.core import Namespace
from pumice.api.meta import KubeObject
from pumice.api.scheduling import (
    NetworkTopologySpec,
    PodGroup,
    PodGroupSpec,
    PriorityClass,
    Queue,
    QueueSpec,
    QueueStatus,
)

__all__ = [
    "DEFAULT_MAX_RETRY",
    "DEFAULT_QUEUE",
    "DEFAULT_SCHEDULER_NAME",
    "QUEUE_NAME_ANNOTATION",
    "apply_defaults",
]

DEFAULT_QUEUE = "default"
DEFAULT_SCHEDULER_NAME = "volcano"
DEFAULT_MAX_RETRY = 3
#: Namespace annotation naming the queue for PodGroups created in it without one.
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
# Job plugins that need the `svc` plugin (volcano.md §2.1 `plugins`).
_NEEDS_SVC = ("tensorflow", "mpi", "pytorch", "ray")


def apply_defaults(obj: KubeObject, *, namespace: Namespace | None = None) -> KubeObject:
    """Fill in Volcano's defaults in place and return ``obj``.

    ``namespace`` is the object's Namespace, if known: its ``scheduling.volcano.sh/queue-name``
    annotation is the default queue of a PodGroup. Kinds without defaults are returned as is.
    """
    _apply(obj, namespace)
    return obj


@singledispatch
def _apply(obj: KubeObject, namespace: Namespace | None) -> None:
    """Kinds without Volcano defaults."""


def _default_network_topology(spec: NetworkTopologySpec | None) -> None:
    # CRD: NetworkTopologySpec.mode `+kubebuilder:default=hard` (volcano.md §2.1, §2.2).
    if spec is not None and not spec.mode:
        spec.mode = "hard"


@_apply.register
def _queue(obj: Queue, namespace: Namespace | None) -> None:
    if obj.spec is None:
        obj.spec = QueueSpec()
    spec = obj.spec
    # Webhook mutate_queue.go: `if queue.Spec.Weight == 0` -> 1 (also the CRD default); §2.3.
    if not spec.weight:
        spec.weight = 1
    # Webhook mutate_queue.go: `if queue.Spec.Reclaimable == nil` -> true; §2.3.
    if spec.reclaimable is None:
        spec.reclaimable = True
    # Webhook mutate_queue.go: a `volcano.sh/hierarchy` path (with weights) gets the `root/`
    # prefix and its weights the `1/` prefix when the path does not start with root; §2.3.
    annotations = obj.metadata.annotations or {}
    hierarchy = annotations.get(HIERARCHY_ANNOTATION, "")
    weights = annotations.get(HIERARCHY_WEIGHTS_ANNOTATION, "")
    if hierarchy and weights and not hierarchy.startswith("root"):
        obj.metadata.annotations = {
            **annotations,
            HIERARCHY_ANNOTATION: f"root/{hierarchy}",
            HIERARCHY_WEIGHTS_ANNOTATION: f"1/{weights}",
        }
    # Queue controller: a queue without a state is opened (queue state machine, §2.3).
    if obj.status is None:
        obj.status = QueueStatus(state="Open")
    elif not obj.status.state:
        obj.status.state = "Open"


@_apply.register
def _podgroup(obj: PodGroup, namespace: Namespace | None) -> None:
    if obj.spec is None:
        obj.spec = PodGroupSpec()
    spec = obj.spec
    # Webhook mutate_podgroup.go + CRD default: queue "default", or the namespace's
    # `scheduling.volcano.sh/queue-name` annotation; §2.2. (minMember has no default.)
    if not spec.queue:
        annotations = (namespace.metadata.annotations if namespace else None) or {}
        spec.queue = annotations.get(QUEUE_NAME_ANNOTATION, DEFAULT_QUEUE)
    _default_network_topology(spec.network_topology)
    for policy in spec.sub_group_policy or ():
        # CRD defaults of SubGroupPolicy: subGroupSize 1, minSubGroups 0; §2.2.
        if policy.sub_group_size is None:
            policy.sub_group_size = 1
        if policy.min_sub_groups is None:
            policy.min_sub_groups = 0
        _default_network_topology(policy.network_topology)


def _default_task(task: TaskSpec, index: int) -> None:
    # Webhook mutate_job.go mutateSpec: name "default<index>"; §2.1 TaskSpec.
    if not task.name:
        task.name = f"default{index}"
    # Webhook mutateSpec: hostNetwork without dnsPolicy -> ClusterFirstWithHostNet.
    pod_spec = task.template.spec if task.template is not None else None
    if pod_spec is not None and pod_spec.host_network and not pod_spec.dns_policy:
        pod_spec.dns_policy = "ClusterFirstWithHostNet"
    partition = task.partition_policy
    if partition is not None:
        # CRD default: partitionPolicy.minPartitions 0; §2.1 TaskSpec.
        if partition.min_partitions is None:
            partition.min_partitions = 0
        _default_network_topology(partition.network_topology)
    # Webhook mutateSpec: minAvailable = replicas, or minPartitions x partitionSize when a
    # partition policy asks for minPartitions > 0; §2.1 TaskSpec.
    if task.min_available is None:
        if partition is not None and partition.min_partitions and partition.partition_size:
            task.min_available = partition.min_partitions * partition.partition_size
        else:
            task.min_available = task.replicas or 0
    # Webhook mutateSpec: `if tasks[index].MaxRetry == 0` -> 3; §2.1 TaskSpec.
    if not task.max_retry:
        task.max_retry = DEFAULT_MAX_RETRY


@_apply.register
def _job(obj: Job, namespace: Namespace | None) -> None:
    if obj.spec is None:
        obj.spec = JobSpec()
    spec = obj.spec
    # Webhook patchDefaultQueue + CRD default: queue "default"; §2.1.
    if not spec.queue:
        spec.queue = DEFAULT_QUEUE
    # Webhook patchDefaultScheduler: first --scheduler-name, "volcano"; §2.1.
    if not spec.scheduler_name:
        spec.scheduler_name = DEFAULT_SCHEDULER_NAME
    # Webhook patchDefaultMaxRetry: `if job.Spec.MaxRetry == 0` -> 3; §2.1.
    if not spec.max_retry:
        spec.max_retry = DEFAULT_MAX_RETRY
    for index, task in enumerate(spec.tasks or ()):
        _default_task(task, index)
    # Webhook patchDefaultMinAvailable, run after the tasks were defaulted:
    # `if job.Spec.MinAvailable == 0` -> sum of the tasks' minAvailable; §2.1.
    if not spec.min_available:
        spec.min_available = sum(task.min_available or 0 for task in spec.tasks or ())
    # Webhook patchDefaultPlugins: frameworks that need `svc` get it, `mpi` also gets `ssh`; §2.1.
    if spec.plugins is not None:
        plugins = dict(spec.plugins)
        if any(name in plugins for name in _NEEDS_SVC):
            plugins.setdefault("svc", [])
        if "mpi" in plugins:
            plugins.setdefault("ssh", [])
        if plugins != spec.plugins:
            spec.plugins = plugins
    _default_network_topology(spec.network_topology)


@_apply.register
def _priority_class(obj: PriorityClass, namespace: Namespace | None) -> None:
    # Kubernetes API defaulting (SetDefaults_PriorityClass), not Volcano: preemptionPolicy
    # PreemptLowerPriority.
    if obj.preemption_policy is None:
        obj.preemption_policy = "PreemptLowerPriority"
