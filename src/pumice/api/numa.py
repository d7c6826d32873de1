"""NUMA: a node's CPUs by NUMA node, socket and core, and how a kubelet with the static CPU manager and a
topology manager policy gives a Guaranteed pod's containers whole CPUs.

One model for both sides: the scheduler's ``numa-aware`` plugin predicts the assignment (as Volcano's plugin
does, from the node's ``Numatopology``), and the simulated kubelet makes it and publishes the node's
``Numatopology`` (as Volcano's resource exporter does from a real kubelet's CPU manager state).

A simulated node declares NUMA with annotations (see the README, "NUMA-aware placement"):
``pumice.io/numa-nodes`` (how many NUMA nodes its ``cpu`` capacity is split evenly over; one socket each),
``pumice.io/cpu-manager-policy`` (``none`` | ``static``, kubelet's default ``none``) and
``pumice.io/topology-manager-policy`` (``none`` | ``best-effort`` | ``restricted`` | ``single-numa-node``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from pumice.api.quantity import milli_value

__all__ = [
    "CPUSET_ANNOTATION", "CPU_MANAGER_ANNOTATION", "NUMA_NODES_ANNOTATION", "POLICY_ANNOTATION",
    "TOPOLOGY_MANAGER_ANNOTATION", "CpuTopology", "assign_containers", "assign_pod", "declared_numatopology",
    "format_cpuset", "guaranteed_cpus", "parse_cpuset", "qos_class",
]

#: A pod's topology policy (the Job controller copies a task's ``topologyPolicy`` here; Volcano's key).
POLICY_ANNOTATION = "volcano.sh/numa-topology-policy"
#: The CPUs the scheduler chose for a pod, sent with its bind (pumice; Volcano keeps them in its cache).
CPUSET_ANNOTATION = "pumice.io/cpuset"
NUMA_NODES_ANNOTATION = "pumice.io/numa-nodes"
CPU_MANAGER_ANNOTATION = "pumice.io/cpu-manager-policy"
TOPOLOGY_MANAGER_ANNOTATION = "pumice.io/topology-manager-policy"
#: Numatopology ``spec.policies`` keys (Volcano's ``PolicyName``).
CPU_MANAGER_POLICY = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY = "TopologyManagerPolicy"
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
CPU_MANAGER_POLICIES = ("none", "static")
_MEASURED = ("cpu", "memory")


# --- cpusets ("0-3,8") -------------------------------------------------------------------------------------

def parse_cpuset(text: str) -> frozenset[int]:
    """Linux cpuset list format; ValueError when it is not one."""
    out: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        a, b = int(lo), int(hi) if sep else int(lo)
        if a < 0 or b < a:
            raise ValueError(f"not a cpuset range: {part!r}")
        out.update(range(a, b + 1))
    return frozenset(out)


def format_cpuset(cpus: Iterable[int]) -> str:
    ids = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


# --- pods --------------------------------------------------------------------------------------------------

def qos_class(pod: Mapping[str, Any]) -> str:
    """Kubernetes' QoS class of a pod (``GetPodQOS``, over cpu and memory)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    requests_any = limits_any = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        for name in _MEASURED:
            r, limit = req.get(name), lim.get(name)
            requests_any |= r is not None
            limits_any |= limit is not None
            if limit is None or (r is not None and str(r) != str(limit)):
                guaranteed = False
    if not requests_any and not limits_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed and containers else "Burstable"


def guaranteed_cpus(container: Mapping[str, Any]) -> int:
    """Whole CPUs the static CPU manager gives the container: its cpu request if integral, else 0."""
    res = container.get("resources") or {}
    value = (res.get("requests") or {}).get("cpu", (res.get("limits") or {}).get("cpu"))
    if value is None:
        return 0
    try:
        milli = milli_value(value)
    except ValueError:
        return 0
    return milli // 1000 if milli % 1000 == 0 else 0


def pod_containers(pod: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(name, whole CPUs) of each app container (init containers get none, as in Volcano's plugin)."""
    return [(str(c.get("name") or ""), guaranteed_cpus(c)) for c in (pod.get("spec") or {}).get("containers") or []]


# --- topology ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CpuTopology:
    """cpu id -> (NUMA node, socket, core), as a Numatopology's ``spec.cpuDetail``."""

    detail: Mapping[int, tuple[int, int, int]]
    cpus: frozenset[int] = field(init=False)
    numa_nodes: tuple[int, ...] = field(init=False)
    _by_numa: dict[int, frozenset[int]] = field(init=False)
    _by_socket: dict[int, frozenset[int]] = field(init=False)
    _by_core: dict[tuple[int, int], frozenset[int]] = field(init=False)
    #: socket -> its cores' keys in order
    _cores_of: dict[int, tuple[tuple[int, int], ...]] = field(init=False)

    def __post_init__(self) -> None:
        by_numa: dict[int, set[int]] = {}
        by_socket: dict[int, set[int]] = {}
        by_core: dict[tuple[int, int], set[int]] = {}
        for cpu, (numa, socket, core) in self.detail.items():
            by_numa.setdefault(numa, set()).add(cpu)
            by_socket.setdefault(socket, set()).add(cpu)
            by_core.setdefault((socket, core), set()).add(cpu)
        object.__setattr__(self, "cpus", frozenset(self.detail))
        object.__setattr__(self, "numa_nodes", tuple(sorted(by_numa)))
        object.__setattr__(self, "_by_numa", {k: frozenset(v) for k, v in by_numa.items()})
        object.__setattr__(self, "_by_socket", {k: frozenset(v) for k, v in by_socket.items()})
        object.__setattr__(self, "_by_core", {k: frozenset(v) for k, v in by_core.items()})
        cores_of: dict[int, list[tuple[int, int]]] = {}
        for k in sorted(by_core):
            cores_of.setdefault(k[0], []).append(k)
        object.__setattr__(self, "_cores_of", {k: tuple(v) for k, v in cores_of.items()})

    @classmethod
    def from_spec(cls, cpu_detail: Mapping[str, Mapping[str, Any]]) -> CpuTopology:
        """From ``spec.cpuDetail``; ValueError on a cpu id that is not a number."""
        return cls({int(cpu): (int(d.get("numa") or 0), int(d.get("socket") or 0), int(d.get("core") or 0))
                    for cpu, d in cpu_detail.items()})

    def in_numa(self, nodes: Iterable[int]) -> frozenset[int]:
        out: frozenset[int] = frozenset()
        for n in nodes:
            out = out | self._by_numa.get(n, frozenset())
        return out

    def numa_count(self, cpus: Iterable[int]) -> int:
        """How many NUMA nodes ``cpus`` span."""
        return len({self.detail[c][0] for c in cpus if c in self.detail})

    def take(self, available: frozenset[int], n: int) -> frozenset[int] | None:
        """``n`` CPUs of ``available`` packed by topology (the kubelet's ``takeByTopology``): whole free
        sockets while ``n`` needs one, then whole free cores, then single CPUs next to those taken; None if
        ``available`` has fewer than ``n``."""
        if n <= 0:
            return frozenset()
        if n > len(available):
            return None
        free = set(available)
        result: set[int] = set()
        per_socket = len(self.cpus) // max(1, len(self._by_socket))
        per_core = max(1, len(self.cpus) // max(1, len(self._by_core)))

        def grab(cpus: frozenset[int]) -> None:
            result.update(cpus)
            free.difference_update(cpus)

        if n - len(result) >= per_socket:
            for s in sorted(self._by_socket):
                if self._by_socket[s] <= free and n - len(result) >= len(self._by_socket[s]):
                    grab(self._by_socket[s])
                    if n - len(result) < per_socket:
                        break
        if n - len(result) >= per_core:
            # sockets with fewer free cores first (pack), then by id
            def free_cores(s: int) -> list[tuple[int, int]]:
                return [k for k in self._cores_of.get(s, ()) if self._by_core[k] <= free]
            order = sorted(self._by_socket, key=lambda s: (len(free_cores(s)), s))
            for s in order:
                for k in free_cores(s):
                    if n - len(result) < len(self._by_core[k]):
                        break
                    grab(self._by_core[k])
                if n - len(result) < per_core:
                    break
        if len(result) < n:
            def rank(c: int) -> tuple[int, int, int, int, int, int]:
                _, socket, core = self.detail[c]
                near = len(self._by_socket[socket] & result)
                return (-near, len(self._by_socket[socket] & free), len(self._by_core[(socket, core)] & free),
                        socket, core, c)
            for c in sorted(free, key=rank)[: n - len(result)]:
                result.add(c)
        return frozenset(result)

    # --- the topology manager (one hint provider: the CPU manager) ------------------------------------------

    def hints(self, available: frozenset[int], request: int) -> list[tuple[tuple[int, ...], bool]]:
        """(NUMA nodes, preferred) of every set of NUMA nodes whose available CPUs can hold ``request``;
        preferred: as few NUMA nodes as could ever hold it (on the empty node)."""
        nodes = self.numa_nodes
        narrowest = len(nodes)
        found: list[tuple[int, ...]] = []
        for k in range(1, len(nodes) + 1):
            for combo in combinations(nodes, k):
                cpus = self.in_numa(combo)
                if len(cpus) >= request and k < narrowest:
                    narrowest = k
                if len(cpus & available) >= request:
                    found.append(combo)
        return [(combo, len(combo) == narrowest) for combo in found]

    def best_hint(self, policy: str, hints: list[tuple[tuple[int, ...], bool]] | None
                  ) -> tuple[tuple[int, ...] | None, bool]:
        """(NUMA nodes to align to, admitted) under the node's topology manager ``policy``; ``hints`` None:
        the container has no preference (no whole CPUs)."""
        if policy not in ("best-effort", "restricted", "single-numa-node"):
            return None, True
        options: list[tuple[tuple[int, ...] | None, bool]]
        options = [(None, True)] if hints is None else (list(hints) if hints else [(None, False)])
        if policy == "single-numa-node":
            options = [(h, p) for h, p in options if p and (h is None or len(h) == 1)]
        every = self.numa_nodes
        best: tuple[tuple[int, ...], bool] = (every, False)
        for nodes, preferred in options:
            merged = every if nodes is None else nodes
            if preferred and not best[1]:
                best = (merged, True)
            elif preferred == best[1] and _narrower(merged, best[0]):
                best = (merged, preferred)
        admitted = policy == "best-effort" or best[1]
        return best[0], admitted

    def allocate(self, available: frozenset[int], request: int, nodes: tuple[int, ...] | None) -> frozenset[int]:
        """The CPUs given: first from the aligned NUMA nodes, the rest anywhere; empty if it cannot be done."""
        result: frozenset[int] = frozenset()
        if nodes is not None:
            aligned = available & self.in_numa(nodes)
            taken = self.take(aligned, min(request, len(aligned)))
            if taken is None:
                return frozenset()
            result = taken
        rest = self.take(available - result, request - len(result))
        return frozenset() if rest is None else result | rest

    def reserved(self, milli: int) -> frozenset[int]:
        """The CPUs the kubelet keeps for the system (``resReserved.cpu``, rounded up to whole CPUs)."""
        return self.take(self.cpus, math.ceil(milli / 1000)) or frozenset()


def _narrower(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Fewer NUMA nodes, or as many with a lower bitmask (the topology manager's ``IsNarrowerThan``)."""
    if len(a) != len(b):
        return len(a) < len(b)
    return sum(1 << n for n in a) < sum(1 << n for n in b)


def assign_containers(topo: CpuTopology, policy: str, available: frozenset[int], containers: list[tuple[str, int]]
                      ) -> tuple[list[tuple[str, frozenset[int]]] | None, str]:
    """([(container, the CPUs it gets)], "") under topology manager ``policy``, or (None, the container that
    cannot be aligned). ``available``: free CPUs less reserved ones."""
    out: list[tuple[str, frozenset[int]]] = []
    left = available
    for name, request in containers:
        hints = topo.hints(left, request) if request > 0 else None
        nodes, admitted = topo.best_hint(policy, hints)
        if not admitted:
            return None, name
        got = topo.allocate(left, request, nodes) if request > 0 else frozenset()
        out.append((name, got))
        left = left - got
    return out, ""


def assign_pod(topo: CpuTopology, policy: str, available: frozenset[int],
               containers: list[tuple[str, int]]) -> tuple[frozenset[int] | None, str]:
    """:func:`assign_containers`, the pod's CPUs together."""
    parts, refused = assign_containers(topo, policy, available, containers)
    if parts is None:
        return None, refused
    return frozenset().union(*(cpus for _, cpus in parts)), ""


# --- a simulated node's declaration -> its Numatopology ----------------------------------------------------

def declared_numatopology(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Numatopology a simulated node declares (its annotations; see the module), with every CPU free;
    None if it declares no NUMA. ValueError naming the annotation when a value is wrong."""
    meta = node.get("metadata") or {}
    ann = meta.get("annotations") or {}
    if NUMA_NODES_ANNOTATION not in ann:
        return None
    try:
        count = int(str(ann[NUMA_NODES_ANNOTATION]))
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{NUMA_NODES_ANNOTATION}: {ann[NUMA_NODES_ANNOTATION]!r} is not a positive integer")
    cpu_policy = str(ann.get(CPU_MANAGER_ANNOTATION, "none"))
    if cpu_policy not in CPU_MANAGER_POLICIES:
        raise ValueError(f"{CPU_MANAGER_ANNOTATION}: {cpu_policy!r} is not one of {', '.join(CPU_MANAGER_POLICIES)}")
    tm_policy = str(ann.get(TOPOLOGY_MANAGER_ANNOTATION, "none"))
    if tm_policy not in TOPOLOGY_POLICIES:
        raise ValueError(f"{TOPOLOGY_MANAGER_ANNOTATION}: {tm_policy!r} is not one of {', '.join(TOPOLOGY_POLICIES)}")
    status = node.get("status") or {}
    capacity = status.get("capacity") or status.get("allocatable") or {}
    cap_milli = milli_value(capacity.get("cpu", 0))
    if cap_milli % 1000 or cap_milli // 1000 % count:
        raise ValueError(f"{NUMA_NODES_ANNOTATION}: the node's cpu capacity {capacity.get('cpu')!r} is not "
                         f"a whole number of CPUs divisible by {count} NUMA nodes")
    cpus = cap_milli // 1000
    per = cpus // count
    alloc_milli = milli_value((status.get("allocatable") or capacity).get("cpu", capacity.get("cpu", 0)))
    spec: dict[str, Any] = {
        "policies": {CPU_MANAGER_POLICY: cpu_policy, TOPOLOGY_MANAGER_POLICY: tm_policy},
        "numares": {"cpu": {"allocatable": format_cpuset(range(cpus)), "capacity": cpus}},
        "cpuDetail": {str(c): {"numa": c // per, "socket": c // per, "core": c} for c in range(cpus)},
    }
    if cap_milli > alloc_milli:
        spec["resReserved"] = {"cpu": f"{cap_milli - alloc_milli}m"}
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
            "metadata": {"name": meta.get("name")}, "spec": spec}
