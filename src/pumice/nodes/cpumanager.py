"""The simulated kubelet's CPU manager: whole CPUs for Guaranteed pods on nodes that declare NUMA, and the
node's ``Numatopology`` published as Volcano's resource exporter publishes it.

A node declares NUMA with annotations (``pumice.api.numa``: ``pumice.io/numa-nodes``,
``pumice.io/cpu-manager-policy``, ``pumice.io/topology-manager-policy``). With the ``static`` CPU manager, a
Guaranteed pod's containers with integral CPU requests get CPUs of their own: those the scheduler sent with
the bind (``pumice.io/cpuset``) when they are free and meet the node's policy, else the kubelet's own choice
under its topology manager policy; a pod the policy cannot admit fails with ``TopologyAffinityError``, as a
real kubelet's does. The CPUs come back when the pod ends. After every change the node's Numatopology is
written: ``numares.cpu.allocatable`` the CPUs not held, ``podAllocations`` who holds which.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

from pumice.api.numa import (
    CPU_MANAGER_POLICY,
    CPUSET_ANNOTATION,
    TOPOLOGY_MANAGER_POLICY,
    CpuTopology,
    assign_containers,
    declared_numatopology,
    format_cpuset,
    parse_cpuset,
    pod_containers,
    qos_class,
)
from pumice.api.quantity import milli_value
from pumice.store import NotFound, Store, StoreError

__all__ = ["NUMATOPOLOGIES", "CpuManager"]

log = logging.getLogger(__name__)

NUMATOPOLOGIES = "numatopologies.nodeinfo.volcano.sh"
#: The kubelet's admission failure reasons (topology manager; CPU manager).
TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
ADMISSION_ERROR = "UnexpectedAdmissionError"


@dataclass
class _Held:
    uid: str
    namespace: str
    name: str
    containers: list[tuple[str, frozenset[int]]]

    @property
    def cpus(self) -> frozenset[int]:
        return frozenset().union(*(c for _, c in self.containers))


@dataclass
class _NodeCpus:
    spec: dict[str, Any]
    topo: CpuTopology
    reserved: frozenset[int]
    held: dict[str, _Held] = field(default_factory=dict)

    @property
    def static(self) -> bool:
        return bool(self.spec["policies"].get(CPU_MANAGER_POLICY) == "static")

    @property
    def policy(self) -> str:
        return str(self.spec["policies"].get(TOPOLOGY_MANAGER_POLICY) or "none")

    def free(self) -> frozenset[int]:
        out = self.topo.cpus
        for h in self.held.values():
            out = out - h.cpus
        return out


class CpuManager:
    """CPU assignment of the simulated nodes that declare NUMA (see the module), by node name."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._nodes: dict[str, _NodeCpus] = {}
        self._dirty: set[str] = set()
        self._published: set[str] = set()
        self._warned: set[tuple[str, str]] = set()

    def held(self, node: str) -> dict[str, frozenset[int]]:
        """Pod key -> CPUs it holds on ``node``."""
        state = self._nodes.get(node)
        return {} if state is None else {k: h.cpus for k, h in state.held.items()}

    # --- nodes ---------------------------------------------------------------------------------------------
    def node_changed(self, name: str, node: dict[str, Any] | None) -> None:
        """A node was seen (None: it is gone); its declaration is read again."""
        topo_obj = None
        if node is not None:
            try:
                topo_obj = declared_numatopology(node)
            except ValueError as err:
                self._warn(name, f"node {name}: {err}; it declares no NUMA")
        if topo_obj is None:
            if self._nodes.pop(name, None) is not None or name in self._published:
                self._published.discard(name)
                self._dirty.discard(name)
                with contextlib.suppress(StoreError):
                    self.store.delete(NUMATOPOLOGIES, None, name)
            return
        spec = topo_obj["spec"]
        old = self._nodes.get(name)
        if old is not None and old.spec == spec:
            return
        topo = CpuTopology.from_spec(spec["cpuDetail"])
        reserved = topo.reserved(milli_value((spec.get("resReserved") or {}).get("cpu", 0)))
        state = _NodeCpus(spec, topo, reserved)
        if old is not None:  # pods keep what they hold where the new layout still has it
            state.held = {k: h for k, h in old.held.items() if h.cpus <= topo.cpus}
        self._nodes[name] = state
        self._dirty.add(name)

    def forget_node(self, name: str) -> None:
        """Someone else's node now: drop its state, leave its Numatopology alone."""
        self._nodes.pop(name, None)
        self._dirty.discard(name)
        self._published.discard(name)

    # --- pods ----------------------------------------------------------------------------------------------
    def admit(self, node: str, key: str, pod: dict[str, Any], *, running: bool = False) -> tuple[str, str]:
        """Give the pod its CPUs on ``node``: ("", "") if admitted (with or without CPUs of its own), or
        (reason, message) of the kubelet's refusal. A pod already ``running`` is never refused."""
        self.release(node, key)
        state = self._nodes.get(node)
        if state is None or not state.static or qos_class(pod) != "Guaranteed":
            return "", ""
        containers = pod_containers(pod)
        wanted = sum(n for _, n in containers)
        if wanted == 0:
            return "", ""
        available = state.free() - state.reserved
        parts = self._as_sent(state, pod, containers, available)
        if parts is None:
            parts, refused = assign_containers(state.topo, state.policy, available, containers)
            if parts is None:
                if running:
                    return "", ""
                return TOPOLOGY_AFFINITY_ERROR, (f"Resources cannot be allocated with Topology locality: container "
                                                 f"{refused} on node {node} ({state.policy})")
            if sum(len(c) for _, c in parts) < wanted and not running:
                return ADMISSION_ERROR, (f"not enough cpus available to satisfy request: {wanted} whole CPUs on "
                                         f"node {node}, {len(available)} free")
        meta = pod.get("metadata") or {}
        state.held[key] = _Held(str(meta.get("uid") or ""), str(meta.get("namespace") or "default"),
                                str(meta.get("name") or ""), parts)
        self._dirty.add(node)
        return "", ""

    def _as_sent(self, state: _NodeCpus, pod: dict[str, Any], containers: list[tuple[str, int]],
                 available: frozenset[int]) -> list[tuple[str, frozenset[int]]] | None:
        """The scheduler's CPU set split over the containers, if it is free, the right size and meets the
        node's policy; else None."""
        text = ((pod.get("metadata") or {}).get("annotations") or {}).get(CPUSET_ANNOTATION)
        if not text:
            return None
        try:
            cpus = parse_cpuset(text)
        except ValueError:
            return None
        if not cpus <= available or len(cpus) != sum(n for _, n in containers):
            return None
        if state.policy == "single-numa-node" and state.topo.numa_count(cpus) > 1:
            return None
        ordered = sorted(cpus)
        parts: list[tuple[str, frozenset[int]]] = []
        for name, n in containers:
            parts.append((name, frozenset(ordered[:n])))
            ordered = ordered[n:]
        return parts

    def release(self, node: str, key: str) -> None:
        state = self._nodes.get(node)
        if state is not None and state.held.pop(key, None) is not None:
            self._dirty.add(node)

    # --- publishing ----------------------------------------------------------------------------------------
    def flush(self) -> bool:
        """Write the Numatopology of every node that changed; True if anything was written."""
        wrote = False
        for name in sorted(self._dirty):
            state = self._nodes.get(name)
            if state is None:
                continue
            wrote |= self._publish(name, state)
        self._dirty.clear()
        return wrote

    def _publish(self, name: str, state: _NodeCpus) -> bool:
        spec = dict(state.spec)
        spec["numares"] = {"cpu": {**state.spec["numares"]["cpu"], "allocatable": format_cpuset(state.free())}}
        spec["podAllocations"] = [
            {"uid": h.uid, "name": h.name, "namespace": h.namespace,
             "containerAllocations": [{"name": c, "allocations": {"cpu": format_cpuset(cpus)}}
                                      for c, cpus in h.containers if cpus]}
            for _, h in sorted(state.held.items())]
        obj = {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
               "metadata": {"name": name}, "spec": spec}
        try:
            try:
                self.store.update(NUMATOPOLOGIES, obj)
            except NotFound:
                self.store.create(NUMATOPOLOGIES, obj)
        except StoreError as err:
            self._warn(name, f"node {name}: cannot publish its Numatopology: {err}")
            return False
        self._published.add(name)
        return True

    def _warn(self, node: str, message: str) -> None:
        if (node, message) not in self._warned:
            self._warned.add((node, message))
            log.warning("%s", message)
