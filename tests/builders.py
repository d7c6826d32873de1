"""Wire-format objects for tests, as a store or ``kubectl apply`` hands them over: one builder per
kind, every field optional but the name. A field left out is absent from the object (the
scheduler, the admission hook or the store fill in their own defaults), so a test says exactly what
it relies on.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

GROUP_NAME = "scheduling.k8s.io/group-name"
GPU = "nvidia.com/gpu"


def _metadata(name: str, namespace: str | None, labels: dict[str, str] | None,
              annotations: dict[str, str] | None) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return meta


def resources(cpu: str | None = None, memory: str | None = None, gpus: int | None = None) -> dict[str, str]:
    """A resource list: ``cpu``, ``memory`` and ``nvidia.com/gpu`` as given."""
    out: dict[str, str] = {}
    if cpu is not None:
        out["cpu"] = cpu
    if memory is not None:
        out["memory"] = memory
    if gpus is not None:
        out[GPU] = str(gpus)
    return out


def node(name: str, *, cpu: str = "8", memory: str = "16Gi", pods: str = "110", gpus: int | None = None,
         labels: dict[str, str] | None = None, taints: list[Obj] | None = None, capacity: bool = False) -> Obj:
    """A ready Node with these allocatable resources (and the same capacity with ``capacity``)."""
    alloc: dict[str, str] = {**resources(cpu, memory, gpus), "pods": pods}
    status: Obj = {"allocatable": alloc}
    if capacity:
        status["capacity"] = dict(alloc)
    obj: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": _metadata(name, None, labels, None), "status": status}
    if taints is not None:
        obj["spec"] = {"taints": taints}
    return obj


def pod(name: str, *, namespace: str | None = None, group: str | None = None, cpu: str | None = None,
        memory: str | None = None, gpus: int | None = None, node: str | None = None, phase: str | None = None,
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        priority: int | None = None, scheduler: str | None = "volcano", image: str | None = "busybox",
        command: list[str] | None = None, containers: list[Obj] | None = None, uid: bool = False,
        **extra: Any) -> Obj:
    """A Pod of one container ``main`` (image ``busybox``) requesting ``cpu``/``memory``/``gpus`` (or ``containers``),
    in PodGroup ``group`` (the group-name annotation), bound to ``node``, in ``phase``; ``uid``:
    give it the uid ``<namespace>-<name>``; ``extra``: more top-level fields."""
    if group is not None:
        annotations = {**(annotations or {}), GROUP_NAME: group}
    meta = _metadata(name, namespace, labels, annotations)
    if uid:
        meta["uid"] = f"{namespace or 'default'}-{name}"
    if containers is None:
        main: Obj = {"name": "main"}
        if image is not None:
            main["image"] = image
        if command is not None:
            main["command"] = command
        requests = resources(cpu, memory, gpus)
        if requests:
            main["resources"] = {"requests": requests}
        containers = [main]
    spec: Obj = {"containers": containers}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    if node is not None:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    obj.update(extra)
    return obj


def podgroup(name: str, *, namespace: str | None = None, min_member: int = 1, queue: str | None = None,
             phase: str | None = None, priority_class: str | None = None, topology: Obj | None = None,
             sub_groups: list[Obj] | None = None, min_resources: dict[str, str] | None = None) -> Obj:
    """A PodGroup (``topology``: its networkTopology; ``sub_groups``: its subGroupPolicy)."""
    spec: Obj = {"minMember": min_member}
    if queue is not None:
        spec["queue"] = queue
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if topology is not None:
        spec["networkTopology"] = topology
    if sub_groups is not None:
        spec["subGroupPolicy"] = sub_groups
    if min_resources is not None:
        spec["minResources"] = min_resources
    obj: Obj = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": _metadata(name, namespace, None, None), "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def queue(name: str, *, weight: int | None = None, parent: str | None = None, state: str | None = None,
          **spec: Any) -> Obj:
    """A Queue; ``spec``: more spec fields (``capability``, ``deserved``, ``guarantee``, ...)."""
    body: Obj = dict(spec)
    if weight is not None:
        body["weight"] = weight
    if parent is not None:
        body["parent"] = parent
    obj: Obj = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                "spec": body}
    if state is not None:
        obj["status"] = {"state": state}
    return obj


def hypernode(name: str, tier: int, members: list[Obj], tier_name: str = "") -> Obj:
    spec: Obj = {"tier": tier, "members": members}
    if tier_name:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": spec}


def node_member(name: str) -> Obj:
    """A HyperNode member: one node by name."""
    return {"type": "Node", "selector": {"exactMatch": {"name": name}}}


def hypernode_member(name: str) -> Obj:
    """A HyperNode member: a child HyperNode."""
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def priority_class(name: str, value: int, global_default: bool = False) -> Obj:
    obj: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value}
    if global_default:
        obj["globalDefault"] = True
    return obj


def vcjob(name: str, *, namespace: str | None = "default", replicas: int = 1, cpu: str = "1",
          min_available: int | None = None, queue: str | None = None, **spec: Any) -> Obj:
    """A Volcano Job of one task ``main`` (``replicas`` pods of one busybox container)."""
    body: Obj = {"schedulerName": "volcano", "tasks": [{
        "name": "main", "replicas": replicas,
        "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}], **spec}
    if min_available is not None:
        body["minAvailable"] = min_available
    if queue is not None:
        body["queue"] = queue
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": _metadata(name, namespace, None, None), "spec": body}


def pdb(name: str, *, namespace: str | None = None, match: dict[str, str] | None = None,
        min_available: int | str | None = None, max_unavailable: int | str | None = None,
        api_version: str = "policy/v1", allowed: int | None = None) -> Obj:
    """A PodDisruptionBudget over the pods labelled ``match`` (``allowed``: its status' disruptionsAllowed)."""
    spec: Obj = {"selector": {"matchLabels": dict(match or {})}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    obj: Obj = {"apiVersion": api_version, "kind": "PodDisruptionBudget",
                "metadata": _metadata(name, namespace or "default", None, None), "spec": spec}
    if allowed is not None:
        obj["status"] = {"disruptionsAllowed": allowed}
    return obj
