"""Builders for federation tests: nodes, HyperNodes, Volcano Jobs, and a world of members."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pumice.federation import names
from pumice.federation.config import FederationConfig, parse_config
from pumice.sim.nodegen import generate_nodes
from pumice.sim.world import FederatedWorld, MemberSpec

Obj = dict[str, Any]
JOBS = "jobs.batch.volcano.sh"

#: Short timings so that tests of failures run in little virtual time.
FAST = """\
dispatchPeriod: 1s
probePeriod: 2s
leaseDuration: 20s
gracePeriod: 30s
"""


def config(extra: str = "") -> FederationConfig:
    return parse_config(FAST + extra, source="test")


def nodes(prefix: str, count: int, *, gpu: int = 8, model: str = "A100", cpu: int = 64, memory: str = "512Gi",
          labels: Mapping[str, str] | None = None) -> list[Obj]:
    spec: Obj = {"name": prefix, "count": count, "cpu": cpu, "memory": memory,
                 "labels": {names.GPU_MODEL_LABEL: model, **(labels or {})}}
    if gpu:
        spec["gpu"] = gpu
    return generate_nodes(spec, "test", "nodes", set())


def hypernodes(prefix: str, node_names: list[str], leaf: int) -> list[Obj]:
    """Tier-1 HyperNodes of ``leaf`` nodes each, under one tier-2 spine."""
    out: list[Obj] = []
    leaves = []
    for i in range(0, len(node_names), leaf):
        name = f"{prefix}-leaf{i // leaf}"
        leaves.append(name)
        out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                    "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}}
                                                    for n in node_names[i:i + leaf]]}})
    out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                "metadata": {"name": f"{prefix}-spine"},
                "spec": {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": n}}}
                                                for n in leaves]}})
    return out


def _resources(requests: Obj) -> Obj:
    """Requests, and the limits Kubernetes requires of an extended resource (equal to its request)."""
    limits = {k: v for k, v in requests.items() if k == "nvidia.com/gpu"}
    return {"requests": requests, "limits": limits} if limits else {"requests": requests}


def vcjob(name: str, replicas: int = 1, *, gpu: int = 8, cpu: int = 4, duration: float | None = 600,
          queue: str = "default", annotations: Mapping[str, str] | None = None, min_available: int | None = None,
          topology: Mapping[str, Any] | None = None, node_selector: Mapping[str, str] | None = None,
          tasks: list[Obj] | None = None, namespace: str = "default", priority_class: str | None = None) -> Obj:
    def template() -> Obj:
        requests: Obj = {"cpu": str(cpu), "memory": "8Gi"}
        if gpu:
            requests["nvidia.com/gpu"] = str(gpu)
        pod: Obj = {"containers": [{"name": "main", "image": "busybox", "resources": _resources(requests)}]}
        if node_selector:
            pod["nodeSelector"] = dict(node_selector)
        meta: Obj = {}
        if duration is not None:
            meta["annotations"] = {"pumice.io/duration": str(duration)}
        return {"metadata": meta, "spec": pod}

    spec: Obj = {"schedulerName": "volcano", "queue": queue,
                 "tasks": tasks if tasks is not None else [{"name": "worker", "replicas": replicas,
                                                              "template": template()}]}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if topology is not None:
        spec["networkTopology"] = dict(topology)
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta: Obj = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": spec}


def task(name: str, replicas: int, *, gpu: int = 8, cpu: int = 4, duration: float = 600,
         depends_on: list[str] | None = None) -> Obj:
    requests: Obj = {"cpu": str(cpu), "memory": "8Gi"}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    out: Obj = {"name": name, "replicas": replicas,
                "template": {"metadata": {"annotations": {"pumice.io/duration": str(duration)}},
                             "spec": {"containers": [{"name": "main", "image": "busybox",
                                                      "resources": _resources(requests)}]}}}
    if depends_on:
        out["dependsOn"] = {"name": list(depends_on)}
    return out


def queue(name: str, weight: int = 1, **spec: Any) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight, "reclaimable": True, **spec}}


def world(members: Iterable[MemberSpec], conf: FederationConfig | None = None) -> FederatedWorld:
    return FederatedWorld(members, conf or config())


def host_job(w: FederatedWorld, name: str, namespace: str = "default") -> Obj:
    return w.host.get(JOBS, namespace, name)


def cluster_of(w: FederatedWorld, name: str, namespace: str = "default") -> str | None:
    return (host_job(w, name, namespace)["metadata"].get("labels") or {}).get(names.CLUSTER_LABEL)


def phase(w: FederatedWorld, name: str, namespace: str = "default") -> str:
    return str(((host_job(w, name, namespace).get("status") or {}).get("state") or {}).get("phase") or "")


def member_jobs(w: FederatedWorld, member: str) -> list[str]:
    items, _ = w.clusters[member].store.list(JOBS, label_selector=f"{names.MANAGED_LABEL}=true")
    return sorted(i["metadata"]["name"] for i in items)
