"""Per-HyperNode resource sums (allocatable, used, idle, future idle) and HyperNode binpacking.

Sums over each HyperNode's leaf nodes are computed once, as resources x HyperNode matrices; ``used``
follows allocate / deallocate events as Volcano's network-topology-aware plugin keeps it.
"""

from __future__ import annotations

import numpy as np

from pumice.scheduler.model import NodeTable, TaskInfo
from pumice.scheduler.topology.tree import HyperNodeTree


class HyperNodeResources:
    def __init__(self, tree: HyperNodeTree, nodes: NodeTable) -> None:
        self.tree = tree
        self.allocatable = tree.sums(nodes.allocatable)
        self.used = tree.sums(nodes.used)
        self.idle = tree.sums(nodes.idle)
        self.future_idle = tree.sums(nodes.future_idle())
        self._rows_of_node: dict[int, np.ndarray] = {}
        self._placed: dict[str, int] = {}

    def rows_of_node(self, node: int) -> np.ndarray:
        rows = self._rows_of_node.get(node)
        if rows is None:
            rows = self._rows_of_node[node] = np.flatnonzero(self.tree.membership[:, node])
        return rows

    def on_allocate(self, task: TaskInfo) -> None:
        if task.node < 0:
            return
        self._placed[task.uid] = task.node
        self.used[:, self.rows_of_node(task.node)] += task.resreq[:, None]

    def on_deallocate(self, task: TaskInfo) -> None:
        # A statement clears ``task.node`` before it reports an undone placement: remember it.
        node = self._placed.pop(task.uid, task.node)
        if node < 0:
            return
        self.used[:, self.rows_of_node(node)] -= task.resreq[:, None]


def binpack_scores(res: HyperNodeResources, rows: np.ndarray, request: np.ndarray,
                   weights: np.ndarray) -> np.ndarray:
    """Volcano's HyperNode binpacking: Σ_r w_r (used_r + req_r) / allocatable_r / Σ_r w_r per row,
    0 if any requested resource would overflow; only resources with a weight and a request count."""
    dims = np.flatnonzero((request > 0) & (weights >= 0) & ~np.isnan(weights))
    if len(dims) == 0:
        return np.zeros(len(rows))
    w = weights[dims][:, None]
    total = res.used[np.ix_(dims, rows)] + request[dims][:, None]
    alloc = res.allocatable[np.ix_(dims, rows)]
    over = (total > alloc).any(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(alloc > 0, total / np.where(alloc > 0, alloc, 1.0), 0.0)
    wsum = float(w.sum())
    if wsum <= 0:
        return np.zeros(len(rows))
    score = (w * ratio).sum(axis=0) / wsum
    score[over] = 0.0
    return score
