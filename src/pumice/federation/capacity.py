"""The nodes of one member as columns: allocatable, used, reserved, and what each node can still take.

Kept current from the member's node, pod and HyperNode events (no re-read per cycle). Pods count when bound
and not finished, as the scheduler counts them. *Reserved* is what the federation has sent to the member and
the member's scheduler has not placed yet: the gang's assumed placement, as kube-scheduler assumes a pod
before its binding lands, so that one dispatch cycle does not send ten jobs to the same free nodes.

Arrays are nodes x resources in the member's own resource space (cpu, memory, then the extended resources its
nodes offer), in Volcano's units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pumice.api.labels import node_selector_term
from pumice.api.quantity import int_value
from pumice.scheduler.plugins.matching import untolerated
from pumice.scheduler.resources import ResourceSpace
from pumice.scheduler.topology.tree import HyperNodeTree

from .demand import TaskDemand, pod_request

__all__ = ["MemberCapacity", "NodeIndex"]

Obj = dict[str, Any]
_FINISHED = ("Succeeded", "Failed")
_BLOCKING = ("NoSchedule", "NoExecute")


def _ready(node: Mapping[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return True  # no Ready condition reported (a simulated node): taken as ready


def _static(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the federation reads of a node: labels, taints, schedulability, readiness, allocatable."""
    spec = node.get("spec") or {}
    return ((node.get("metadata") or {}).get("labels"), spec.get("taints"), bool(spec.get("unschedulable")),
            _ready(node), (node.get("status") or {}).get("allocatable"))


@dataclass
class NodeIndex:
    """What ``HyperNodeTree.build`` reads of a node table: names, their index and labels."""

    names: list[str]
    index: dict[str, int]
    labels: list[dict[str, str]]

    def __len__(self) -> int:
        return len(self.names)


class MemberCapacity:
    """A member's nodes and their use; ``version`` moves with every change, ``freed`` when room grows."""

    def __init__(self, gpu_model_label: str) -> None:
        self.gpu_model_label = gpu_model_label
        self.space = ResourceSpace()
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.labels: list[dict[str, str]] = []
        self.taints: list[list[Obj]] = []
        self.models: list[str] = []
        self.usable = np.zeros(0, dtype=bool)
        self.alloc = np.zeros((0, 2))
        self.max_pods = np.zeros(0)
        self.used = np.zeros((0, 2))
        self.pods = np.zeros(0)
        self.reserved = np.zeros((0, 2))
        self.reserved_pods = np.zeros(0)
        self.tree: HyperNodeTree | None = None
        self._nodes: dict[str, Obj] = {}
        self._hypernodes: dict[str, Obj] = {}
        #: pod key -> (node name, request) of every bound, unfinished pod
        self._bound: dict[tuple[str, str], tuple[str, dict[str, float]]] = {}
        #: job key -> (node names, amounts by resource name per node, pods per node): kept by name so that they
        #: survive a rebuild of the columns
        self._reservations: dict[str, tuple[list[str], list[dict[str, float]], list[float]]] = {}
        self._eligible: dict[str, np.ndarray] = {}
        self._dirty_nodes = False
        self._dirty_tree = False
        self.version = 0
        self.freed = 0
        #: Moves when nodes (their labels, taints, shapes) or HyperNodes change: cached eligibility is stale.
        self.static_version = 0

    # --- events -----------------------------------------------------------------------------------------
    def on_node(self, old: Obj | None, new: Obj | None) -> None:
        """A node changed. Only what the federation reads counts (a status heartbeat does not); a change of one
        known node is applied to its row, anything else rebuilds the columns."""
        name = str(((new or old or {}).get("metadata") or {}).get("name") or "")
        before = self._nodes.get(name)
        if new is None:
            self._nodes.pop(name, None)
            self._dirty_nodes = True
            return
        self._nodes[name] = new
        if before is not None and _static(before) == _static(new):
            return
        j = self.index.get(name)
        alloc = (new.get("status") or {}).get("allocatable") or {}
        if self._dirty_nodes or before is None or j is None or any(str(k) not in self.space.index and k != "pods"
                                                                   for k in alloc):
            self._dirty_nodes = True
            return
        grew = bool((self.space.vector(alloc) > self.alloc[j]).any()) or (_ready(new) and not self.usable[j])
        self._set_row(j, new)
        self._eligible.clear()
        if (before.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
            self._dirty_tree = True  # HyperNode members may be chosen by label
        self.static_version += 1
        self.version += 1
        if grew:
            self.freed += 1

    def _set_row(self, j: int, node: Obj) -> None:
        labels = dict((node.get("metadata") or {}).get("labels") or {})
        alloc = (node.get("status") or {}).get("allocatable") or {}
        self.labels[j] = labels
        self.taints[j] = list((node.get("spec") or {}).get("taints") or [])
        self.models[j] = labels.get(self.gpu_model_label, "")
        self.usable[j] = _ready(node) and not (node.get("spec") or {}).get("unschedulable")
        self.alloc[j] = self.space.vector(alloc)
        self.max_pods[j] = self.space_pods(alloc)

    def on_hypernode(self, old: Obj | None, new: Obj | None) -> None:
        name = str(((new or old or {}).get("metadata") or {}).get("name") or "")
        if new is None:
            self._hypernodes.pop(name, None)
        else:
            self._hypernodes[name] = new
        self._dirty_tree = True

    def on_pod(self, old: Obj | None, new: Obj | None) -> None:
        obj = new or old or {}
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        before = self._bound.pop(key, None)
        after = None
        if new is not None:
            node = (new.get("spec") or {}).get("nodeName")
            if node and (new.get("status") or {}).get("phase") not in _FINISHED:
                after = (str(node), pod_request(new.get("spec") or {}))
                self._bound[key] = after
        if before == after:
            return
        if not self._dirty_nodes:
            if before is not None:
                self._add(before, -1.0)
            if after is not None:
                self._add(after, 1.0)
        if before is not None:
            self.freed += 1
        self.version += 1

    def _add(self, contribution: tuple[str, Mapping[str, float]], sign: float) -> None:
        j = self.index.get(contribution[0])
        if j is None:
            return
        for name, value in contribution[1].items():
            d = self.space.index.get(name)
            if d is not None:
                self.used[j, d] += sign * value
        self.pods[j] += sign

    # --- rebuilding --------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Rebuild the columns after node or HyperNode changes (pod changes apply at once)."""
        if self._dirty_nodes:
            self._rebuild_nodes()
        if self._dirty_tree:
            self._rebuild_tree()

    def _rebuild_nodes(self) -> None:
        self._dirty_nodes = False
        nodes = [self._nodes[k] for k in sorted(self._nodes)]
        scalars = {str(k) for nd in nodes for k in ((nd.get("status") or {}).get("allocatable") or {})}
        self.space = ResourceSpace(scalars)
        r = self.space.size
        self.names = [str(nd["metadata"]["name"]) for nd in nodes]
        self.index = {name: j for j, name in enumerate(self.names)}
        n = len(nodes)
        self.labels = [{} for _ in range(n)]
        self.taints = [[] for _ in range(n)]
        self.models = [""] * n
        self.usable = np.zeros(n, dtype=bool)
        self.alloc = np.zeros((n, r))
        self.max_pods = np.zeros(n)
        for j, nd in enumerate(nodes):
            self._set_row(j, nd)
        self.used = np.zeros((n, r))
        self.pods = np.zeros(n)
        for contribution in self._bound.values():
            self._add(contribution, 1.0)
        self.reserved = np.zeros((n, r))
        self.reserved_pods = np.zeros(n)
        for held in self._reservations.values():
            self._hold(held, 1.0)
        self._eligible.clear()
        self._dirty_tree = True
        self.static_version += 1
        self.version += 1
        self.freed += 1

    @staticmethod
    def space_pods(alloc: Mapping[str, Any]) -> float:
        pods = alloc.get("pods")
        return float(int_value(pods)) if pods is not None else 110.0

    def _rebuild_tree(self) -> None:
        self._dirty_tree = False
        hypernodes = [self._hypernodes[k] for k in sorted(self._hypernodes)]
        index = NodeIndex(self.names, self.index, self.labels)
        self.tree = HyperNodeTree.build(hypernodes, index) if hypernodes else None  # type: ignore[arg-type]
        self.static_version += 1
        self.version += 1
        self.freed += 1

    # --- reading -----------------------------------------------------------------------------------------
    def free(self) -> tuple[np.ndarray, np.ndarray]:
        """(room per node x resource, room for pods per node), usable nodes only (others: zero)."""
        room = self.alloc - self.used - self.reserved
        pods = self.max_pods - self.pods - self.reserved_pods
        room[~self.usable] = 0.0
        pods = np.where(self.usable, pods, 0.0)
        return room, pods

    def vector(self, request: Mapping[str, float]) -> np.ndarray | None:
        """A request in this member's resource space; None if it asks for a resource no node offers."""
        vec = np.zeros(self.space.size)
        for name, value in request.items():
            d = self.space.index.get(name)
            if d is None:
                if value > 0:
                    return None
                continue
            vec[d] = value
        return vec

    def missing(self, request: Mapping[str, float]) -> list[str]:
        return sorted(n for n, v in request.items() if v > 0 and n not in self.space.index)

    def eligible(self, task: TaskDemand) -> np.ndarray:
        """Nodes the task's pods may use by their constraints alone: node selector, required node affinity,
        tolerated NoSchedule/NoExecute taints, ready and schedulable (cached per task shape)."""
        found = self._eligible.get(task.shape)
        if found is not None:
            return found
        mask = self.usable.copy()
        for j in range(len(self.names)):
            if not mask[j]:
                continue
            labels = self.labels[j]
            selected = all(labels.get(k) == v for k, v in task.node_selector.items())
            affine = task.affinity_terms is None or any(
                node_selector_term(t).matches(labels, self.names[j]) for t in task.affinity_terms)
            tolerated = not self.taints[j] or not untolerated(self.taints[j], list(task.tolerations), _BLOCKING)
            mask[j] = selected and affine and tolerated
        self._eligible[task.shape] = mask
        return mask

    # --- reservations ------------------------------------------------------------------------------------
    def reserve(self, job: str, nodes: np.ndarray, amounts: np.ndarray, pods: np.ndarray) -> None:
        """Hold ``amounts`` (k x r) and ``pods`` (k) on ``nodes`` (k indices) for ``job`` until released."""
        self.release(job)
        names = self.space.names
        held = ([self.names[int(j)] for j in nodes],
                [{names[d]: float(v) for d, v in enumerate(row) if v} for row in amounts.tolist()],
                [float(p) for p in pods.tolist()])
        self._reservations[job] = held
        self._hold(held, 1.0)
        self.version += 1

    def _hold(self, held: tuple[list[str], list[dict[str, float]], list[float]], sign: float) -> None:
        for node, amounts, pods in zip(*held, strict=True):
            j = self.index.get(node)
            if j is None:
                continue
            for name, value in amounts.items():
                d = self.space.index.get(name)
                if d is not None:
                    self.reserved[j, d] += sign * value
            self.reserved_pods[j] += sign * pods

    def release(self, job: str) -> bool:
        held = self._reservations.pop(job, None)
        if held is None:
            return False
        self._hold(held, -1.0)
        self.version += 1
        self.freed += 1
        return True

    def reserved_jobs(self) -> Iterable[str]:
        return list(self._reservations)

    # --- totals ------------------------------------------------------------------------------------------
    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """(Σ allocatable, Σ used) over ready, schedulable nodes."""
        usable = self.usable
        return self.alloc[usable].sum(axis=0), self.used[usable].sum(axis=0)
