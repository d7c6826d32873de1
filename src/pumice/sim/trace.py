"""Trace loaders: a recorded cluster and its workload as a scenario (nodes + a timeline of pods).

openb (Alibaba GPU cluster trace 2023, Weng et al., ATC'23): nodes from the node list CSV, pods
from a pod list CSV with their real creation times; a pod runs for ``deletion - scheduled`` (or
``- creation``) seconds and fails when the trace says it failed. GPU-sharing pods (``gpu_milli`` <
1000) request ``pumice.io/gpu-milli`` only; whole-GPU pods request ``nvidia.com/gpu`` and the
matching milli. Nodes offer both, so sharing is counted per node, not per device.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from .errors import ScenarioError
from .nodegen import GPU_MILLI, GPU_RESOURCE
from .scenario import Action, Scenario

__all__ = ["GPU_MODEL_LABEL", "TRACES", "load_openb", "load_trace"]

GPU_MODEL_LABEL = "pumice.io/gpu-model"
NODE_FILES = {"all": "openb_node_list_all_node.csv", "gpu": "openb_node_list_gpu_node.csv"}
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time")
TRACES = ("openb",)


def _rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    if not path.is_file():
        raise ScenarioError(str(path), "", "no such file (is --trace-dir the folder of the openb CSVs?)")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise ScenarioError(str(path), missing[0], "column missing (this pod list has no timing columns)"
                                if missing[0] in ("creation_time", "deletion_time") else "column missing")
        return list(reader)


def _int(row: dict[str, str], col: str, source: str, line: int, default: int | None = None) -> int:
    text = (row.get(col) or "").strip()
    if not text and default is not None:
        return default
    try:
        return int(float(text))
    except ValueError:
        raise ScenarioError(source, f"line {line}, {col}", f"not a number: {text!r}") from None


def openb_node(row: dict[str, str], source: str, line: int) -> dict[str, Any]:
    name = row["sn"]
    gpus = _int(row, "gpu", source, line, 0)
    res = {"cpu": f"{_int(row, 'cpu_milli', source, line)}m", "memory": f"{_int(row, 'memory_mib', source, line)}Mi",
           "pods": "256"}
    labels = {"kubernetes.io/hostname": name}
    if gpus:
        res[GPU_RESOURCE] = str(gpus)
        res[GPU_MILLI] = str(gpus * 1000)
        if row.get("model"):
            labels[GPU_MODEL_LABEL] = row["model"]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": dict(res), "allocatable": dict(res)}}


def _requests(row: dict[str, str], source: str, line: int) -> dict[str, str]:
    req = {"cpu": f"{_int(row, 'cpu_milli', source, line)}m", "memory": f"{_int(row, 'memory_mib', source, line)}Mi"}
    num = _int(row, "num_gpu", source, line, 0)
    milli = _int(row, "gpu_milli", source, line, 0)
    if num >= 1 and (milli >= 1000 or num > 1):
        req[GPU_RESOURCE] = str(num)
        req[GPU_MILLI] = str(num * 1000)
    elif num == 1 and milli > 0:
        req[GPU_MILLI] = str(milli)
    return req


def _resources(requests: dict[str, str]) -> dict[str, Any]:
    """A container's resources: GPUs (extended resources, never overcommitted) are limits too, as Kubernetes
    requires of a container that requests them."""
    limits = {name: value for name, value in requests.items() if name in (GPU_RESOURCE, GPU_MILLI)}
    return {"requests": requests, "limits": limits} if limits else {"requests": requests}


def openb_pod(row: dict[str, str], source: str, line: int, namespace: str, queue: str) -> tuple[float, Any]:
    """(creation time, pod spec pieces) of one trace row."""
    created = _int(row, "creation_time", source, line)
    deleted = _int(row, "deletion_time", source, line)
    scheduled = _int(row, "scheduled_time", source, line, created) if row.get("scheduled_time") else created
    duration = max(0, deleted - max(scheduled, created))
    ann = {"pumice.io/duration": str(duration)}
    if row.get("pod_phase") == "Failed":
        ann["pumice.io/fail"] = "true"
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "openb", "resources": _resources(_requests(row, source, line))}],
    }
    models = [m for m in (row.get("gpu_spec") or "").split("|") if m]
    if models:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": models}]}]}}}
    labels = {"pumice.io/trace": "openb"}
    if row.get("qos"):
        labels["pumice.io/qos"] = row["qos"]
    return float(created), {"name": row["name"], "namespace": namespace, "labels": labels, "annotations": ann,
                            "spec": spec, "queue": queue}


def _as_pod(p: dict[str, Any]) -> list[dict[str, Any]]:
    requests = p["spec"]["containers"][0]["resources"]["requests"]
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": p["name"], "namespace": p["namespace"], "labels": dict(p["labels"])},
             "spec": {"minMember": 1, "queue": p["queue"], "minResources": dict(requests)}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": p["name"], "namespace": p["namespace"], "labels": p["labels"],
                        "annotations": {**p["annotations"], "scheduling.k8s.io/group-name": p["name"]}},
           "spec": p["spec"]}
    return [group, pod]


def _as_job(p: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
             "metadata": {"name": p["name"], "namespace": p["namespace"], "labels": p["labels"]},
             "spec": {"schedulerName": "volcano", "queue": p["queue"], "minAvailable": 1, "maxRetry": 0,
                      "tasks": [{"name": "main", "replicas": 1, "template": {
                          "metadata": {"labels": p["labels"], "annotations": p["annotations"]},
                          "spec": p["spec"]}}]}}]


def load_openb(
    directory: Path,
    pods: str = "default",
    *,
    nodes: str = "all",
    as_jobs: bool = False,
    limit: int | None = None,
    compress: float = 1.0,
    namespace: str = "default",
    queue: str = "default",
) -> Scenario:
    """The openb trace as a scenario: ``pods`` names the pod list (default, gpuspec33, ...).

    ``compress`` > 1 divides the arrival times (not the run times): the same pods, closer together,
    a heavier load (the trace at its own pace never runs more than 56 pods at once).
    """
    if compress <= 0:
        raise ScenarioError("--compress", "", f"must be positive, got {compress:g}")
    if nodes not in NODE_FILES:
        raise ScenarioError(str(directory), "nodes", f"use one of {', '.join(NODE_FILES)}")
    node_path = directory / NODE_FILES[nodes]
    node_rows = _rows(node_path, NODE_COLUMNS)
    node_objs = [openb_node(r, str(node_path), i + 2) for i, r in enumerate(node_rows)]
    pod_path = directory / f"openb_pod_list_{pods}.csv"
    pod_rows = _rows(pod_path, POD_COLUMNS)
    entries = [openb_pod(r, str(pod_path), i + 2, namespace, queue) for i, r in enumerate(pod_rows)]
    entries.sort(key=lambda e: e[0])
    if limit is not None:
        entries = entries[:limit]
    timeline: list[Action] = []
    make = _as_job if as_jobs else _as_pod
    for at, p in entries:
        at = at / compress
        objs = make(p)
        if timeline and timeline[-1].at == at:
            timeline[-1].objects.extend(objs)
        else:
            timeline.append(Action(at, "apply", objs, label="trace"))
    return Scenario(name=f"openb-{pods}", source=str(pod_path), nodes=node_objs, timeline=timeline,
                    gc_finished=not as_jobs,
                    description=f"openb trace ({len(node_objs)} nodes, {len(entries)} pods from {pod_path.name}"
                                + (f", arrivals compressed {compress:g}x)" if compress != 1 else ")"))


def load_trace(name: str, directory: Path, pods: str = "default", **kwargs: Any) -> Scenario:
    if name != "openb":
        raise ScenarioError("--trace", "", f"unknown trace {name!r} (known: {', '.join(TRACES)})")
    return load_openb(directory, pods, **kwargs)
