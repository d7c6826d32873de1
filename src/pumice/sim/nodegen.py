"""Node manifests from a short description: ``{count: 3, cpu: 8, memory: 16Gi, gpu: 4}``.

A cluster of a thousand identical nodes is one line in a scenario, not a thousand manifests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice.api import is_valid_quantity
from pumice.api.numa import (
    CPU_MANAGER_ANNOTATION,
    NUMA_NODES_ANNOTATION,
    TOPOLOGY_MANAGER_ANNOTATION,
    declared_numatopology,
)

from .errors import ScenarioError

__all__ = ["GENERATOR_KEYS", "GPU_MILLI", "GPU_RESOURCE", "generate_nodes"]

GPU_RESOURCE = "nvidia.com/gpu"
#: GPU capacity in thousandths of a device, for GPU-sharing pods (see docs/sim.md, traces).
GPU_MILLI = "pumice.io/gpu-milli"
GENERATOR_KEYS = {"count", "name", "cpu", "memory", "gpu", "gpu-milli", "pods", "labels", "taints", "resources",
                  "start", "numa"}
#: ``numa:`` keys of a node generator -> the node annotation each sets (``pumice.api.numa``).
NUMA_KEYS = {"nodes": NUMA_NODES_ANNOTATION, "cpuManagerPolicy": CPU_MANAGER_ANNOTATION,
             "topologyManagerPolicy": TOPOLOGY_MANAGER_ANNOTATION}


def generate_nodes(spec: Mapping[str, Any], source: str, field: str, used: set[str]) -> list[dict[str, Any]]:
    """Node objects for one generator entry; ``used`` holds names taken so far (names stay unique)."""
    unknown = sorted(set(spec) - GENERATOR_KEYS)
    if unknown:
        raise ScenarioError(source, f"{field}.{unknown[0]}",
                            f"unknown key (a node generator takes {', '.join(sorted(GENERATOR_KEYS))})")
    count = spec.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ScenarioError(source, f"{field}.count", f"must be a non-negative integer, got {count!r}")
    prefix = str(spec.get("name", "node"))
    resources: dict[str, Any] = {"cpu": spec.get("cpu", 8), "memory": spec.get("memory", "16Gi"),
                                 "pods": spec.get("pods", 110)}
    gpu = spec.get("gpu", 0)
    if gpu:
        resources[GPU_RESOURCE] = gpu
        resources[GPU_MILLI] = spec.get("gpu-milli", int(gpu) * 1000 if isinstance(gpu, int) else gpu)
    extra = spec.get("resources") or {}
    if not isinstance(extra, Mapping):
        raise ScenarioError(source, f"{field}.resources", "must be a mapping of resource name to quantity")
    resources.update(extra)
    for name, value in resources.items():
        if not is_valid_quantity(value):
            key = name if name in spec else f"resources.{name}"
            raise ScenarioError(source, f"{field}.{key}", f"not a quantity: {value!r}")
    quantities = {k: str(v) for k, v in resources.items()}
    labels = spec.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise ScenarioError(source, f"{field}.labels", "must be a mapping")
    taints = spec.get("taints") or []
    if not isinstance(taints, list):
        raise ScenarioError(source, f"{field}.taints", "must be a list of taints")
    annotations = _numa_annotations(spec.get("numa"), source, field)
    start = spec.get("start", len([n for n in used if n.startswith(prefix + "-")]))
    nodes: list[dict[str, Any]] = []
    i = int(start)
    while len(nodes) < count:
        name = f"{prefix}-{i}"
        i += 1
        if name in used:
            continue
        used.add(name)
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **{k: str(v) for k, v in
                                                                                     labels.items()}}},
            "spec": {"taints": list(taints)} if taints else {},
            "status": {"capacity": dict(quantities), "allocatable": dict(quantities)},
        }
        if annotations:
            node["metadata"]["annotations"] = dict(annotations)
            if not nodes:
                try:
                    declared_numatopology(node)
                except ValueError as err:
                    raise ScenarioError(source, f"{field}.numa", str(err)) from None
        nodes.append(node)
    return nodes


def _numa_annotations(numa: Any, source: str, field: str) -> dict[str, str]:
    """``numa: {nodes: 2, cpuManagerPolicy: static, topologyManagerPolicy: single-numa-node}`` as the node
    annotations the simulated kubelet reads."""
    if numa is None:
        return {}
    if not isinstance(numa, Mapping):
        raise ScenarioError(source, f"{field}.numa",
                            "must be a mapping (nodes, cpuManagerPolicy, topologyManagerPolicy)")
    unknown = sorted(set(numa) - set(NUMA_KEYS))
    if unknown:
        raise ScenarioError(source, f"{field}.numa.{unknown[0]}", f"unknown key (numa takes {', '.join(NUMA_KEYS)})")
    if "nodes" not in numa:
        raise ScenarioError(source, f"{field}.numa.nodes", "required: how many NUMA nodes the CPUs are split over")
    return {NUMA_KEYS[k]: str(v) for k, v in numa.items()}
