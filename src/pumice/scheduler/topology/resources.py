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

    def on_allocate(self, task: TaskInfo) -> int:
        """Returns the node whose HyperNodes changed (-1: none)."""
        if task.node < 0:
            return -1
        self._placed[task.uid] = task.node
        self.used[:, self.rows_of_node(task.node)] += task.resreq[:, None]  # rows are distinct: one write
        return task.node

    def on_deallocate(self, task: TaskInfo) -> int:
        # A statement clears ``task.node`` before it reports an undone placement: remember it.
        node = self._placed.pop(task.uid, task.node)
        if node < 0:
            return -1
        self.used[:, self.rows_of_node(node)] -= task.resreq[:, None]
        return node



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
    # Σ_r in dimension order, explicitly: a HyperNode's score must not depend on which other
    # HyperNodes are scored with it (numpy's reductions may group terms differently by shape).
    weighted = w * ratio
    total_w = weighted[0].copy()
    for d in range(1, len(dims)):
        total_w += weighted[d]
    score = total_w / wsum
    score[over] = 0.0
    return score


_SPECS: dict[tuple[bytes, bytes], tuple[list[int], list[float], float, list[float]]] = {}


def binpack_score_rows(res: HyperNodeResources, rows: list[int], request: np.ndarray,
                       weights: np.ndarray) -> list[float]:
    """``binpack_scores`` for a few rows in plain floats: the same operations in the same order
    (so the same values, bit for bit), without numpy's per-call overhead."""
    key = (request.tobytes(), weights.tobytes())
    spec = _SPECS.get(key)
    if spec is None:
        dims = np.flatnonzero((request > 0) & (weights >= 0) & ~np.isnan(weights)).tolist()
        w = [float(weights[d]) for d in dims]
        spec = _SPECS[key] = (dims, w, float(np.asarray(w).sum()) if w else 0.0, [float(request[d]) for d in dims])
        if len(_SPECS) > 4096:
            _SPECS.clear()
    dims, w, wsum, req = spec
    if not dims or wsum <= 0:
        return [0.0] * len(rows)
    used, alloc = res.used, res.allocatable
    out = []
    for row in rows:
        over = False
        total_w = 0.0
        for i, d in enumerate(dims):
            total = float(used[d, row]) + req[i]
            a = float(alloc[d, row])
            if total > a:
                over = True
            weighted = w[i] * (total / a if a > 0 else 0.0)
            total_w = weighted if i == 0 else total_w + weighted
        out.append(0.0 if over else total_w / wsum)
    return out
