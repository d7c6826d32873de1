"""Per-HyperNode resource sums (allocatable, used, idle, future idle) and HyperNode binpacking.

Sums over each HyperNode's leaf nodes are computed once, as resources x HyperNode matrices; ``used``
follows allocate / deallocate events as Volcano's network-topology-aware plugin keeps it. Events
update a plain-float copy of each HyperNode's usage (a few float additions per event, the same ones
numpy would do); the ``used`` matrix is brought up to date from it when read.
"""

from __future__ import annotations

import numpy as np

from pumice.scheduler.model import NodeTable, TaskInfo
from pumice.scheduler.topology.tree import HyperNodeTree

#: (resources that count, their weights, the weights' sum, the requested amounts).
BinpackTerms = tuple[list[int], list[float], float, list[float]]


class HyperNodeResources:
    def __init__(self, tree: HyperNodeTree, nodes: NodeTable) -> None:
        self.tree = tree
        self.allocatable = tree.sums(nodes.allocatable)
        self._used = tree.sums(nodes.used)
        self.idle = tree.sums(nodes.idle)
        self.future_idle = tree.sums(nodes.future_idle())
        #: Per HyperNode row: its used / allocatable resources as plain floats (``used_rows`` is the
        #: current usage; ``_used`` lags behind it by the rows in ``_stale``).
        self.used_rows: list[list[float]] = self._used.T.tolist()
        self.alloc_rows: list[list[float]] = self.allocatable.T.tolist()
        self._stale: set[int] = set()
        self._rows_of_node: dict[int, list[int]] = {}
        #: Per node: the ``used_rows`` entries of its HyperNodes.
        self._node_usage: dict[int, list[list[float]]] = {}
        self._placed: dict[str, int] = {}
        #: Per request (bytes of the vector): its non-zero (dimension, amount) pairs.
        self._deltas: dict[bytes, list[tuple[int, float]]] = {}
        #: Per (request, weights) bytes: the binpacking terms (see ``terms``).
        self._terms: dict[tuple[bytes, bytes], BinpackTerms] = {}

    @property
    def used(self) -> np.ndarray:
        """Used resources per HyperNode row (resources x rows), current."""
        if self._stale:
            rows = list(self._stale)
            self._stale.clear()
            used_rows = self.used_rows
            self._used[:, rows] = np.array([used_rows[r] for r in rows]).T
        return self._used

    def rows_of_node(self, node: int) -> list[int]:
        """The rows of the HyperNodes holding ``node`` (the cluster top included), ascending."""
        rows = self._rows_of_node.get(node)
        if rows is None:
            rows = self._rows_of_node[node] = np.flatnonzero(self.tree.membership[:, node]).tolist()
            self._node_usage[node] = [self.used_rows[r] for r in rows]
        return rows

    def _deltas_of(self, resreq: np.ndarray) -> list[tuple[int, float]]:
        # Adding (or taking) 0.0 leaves a usage unchanged (usages are never -0.0): zeros are skipped.
        key = resreq.tobytes()
        found = self._deltas.get(key)
        if found is None:
            found = self._deltas[key] = [(d, v) for d, v in enumerate(resreq.tolist()) if v]
        return found

    def terms(self, request: np.ndarray, weights: np.ndarray) -> BinpackTerms:
        """The binpacking terms of a request: (the resources that count: requested, with a
        weight; their weights; the weights' sum; the requested amounts)."""
        key = (request.tobytes(), weights.tobytes())
        found = self._terms.get(key)
        if found is None:
            dims = np.flatnonzero((request > 0) & (weights >= 0) & ~np.isnan(weights))
            wsum = float(weights[dims][:, None].sum()) if len(dims) else 0.0
            found = self._terms[key] = (dims.tolist(), weights[dims].tolist(), wsum, request[dims].tolist())
        return found

    def on_allocate(self, task: TaskInfo) -> int:
        """Returns the node whose HyperNodes changed (-1: none)."""
        node = task.node
        if node < 0:
            return -1
        self._placed[task.uid] = node
        rows = self._rows_of_node.get(node) or self.rows_of_node(node)
        deltas = self._deltas.get(task.resreq.tobytes()) or self._deltas_of(task.resreq)
        for u in self._node_usage[node]:
            for d, v in deltas:
                u[d] += v
        self._stale.update(rows)
        return node

    def on_deallocate(self, task: TaskInfo) -> int:
        # A statement clears ``task.node`` before it reports an undone placement: remember it.
        node = self._placed.pop(task.uid, task.node)
        if node < 0:
            return -1
        rows = self._rows_of_node.get(node) or self.rows_of_node(node)
        deltas = self._deltas.get(task.resreq.tobytes()) or self._deltas_of(task.resreq)
        for u in self._node_usage[node]:
            for d, v in deltas:
                u[d] -= v
        self._stale.update(rows)
        return node




def binpack_scores(res: HyperNodeResources, rows: np.ndarray, request: np.ndarray,
                   weights: np.ndarray) -> np.ndarray:
    """Volcano's HyperNode binpacking: Σ_r w_r (used_r + req_r) / allocatable_r / Σ_r w_r per row,
    0 if any requested resource would overflow; only resources with a weight and a request count.

    Σ_r runs in dimension order, one resource at a time: a HyperNode's score must not depend on
    which other HyperNodes are scored with it (numpy's reductions may group terms by shape), and
    ``RowScorer`` must reach the same value, bit for bit."""
    dims, w, wsum, req = res.terms(request, weights)
    if not dims or wsum <= 0:
        return np.zeros(len(rows))
    used = res.used.take(rows, axis=1)
    alloc = res.allocatable.take(rows, axis=1)
    over: np.ndarray | None = None
    total_w: np.ndarray | None = None
    for i, d in enumerate(dims):
        total = used[d] + req[i]
        ad = alloc[d]
        overflow = total > ad
        over = overflow if over is None else over | overflow
        positive = ad > 0
        weighted = w[i] * np.where(positive, total / np.where(positive, ad, 1.0), 0.0)
        total_w = weighted if total_w is None else total_w + weighted
    assert total_w is not None and over is not None  # dims is not empty
    score: np.ndarray = total_w / wsum
    score[over] = 0.0
    return score


class RowScorer:
    """``binpack_scores`` of one request for a few rows at a time, in plain floats: the same
    operations in the same order (so the same values, bit for bit), without numpy's per-call cost."""

    __slots__ = ("alloc_rows", "dims", "req", "steps", "used_rows", "w", "wsum")

    def __init__(self, res: HyperNodeResources, request: np.ndarray, weights: np.ndarray) -> None:
        self.dims, self.w, self.wsum, self.req = res.terms(request, weights)
        self.steps = list(enumerate(self.dims))
        self.used_rows = res.used_rows
        self.alloc_rows = res.alloc_rows

    def rescore(self, rows: list[tuple[int, int]], values: list[float], array: np.ndarray) -> None:
        """The score of each ``(row, _)`` into ``values[row]`` and ``array[row]``."""
        w, req, wsum, steps = self.w, self.req, self.wsum, self.steps
        if not steps or wsum <= 0:
            for r, _ in rows:
                values[r] = array[r] = 0.0
            return
        used_rows, alloc_rows = self.used_rows, self.alloc_rows
        for r, _ in rows:
            u, a = used_rows[r], alloc_rows[r]
            over = False
            total_w = 0.0
            for i, d in steps:
                total = u[d] + req[i]
                ad = a[d]
                if total > ad:
                    over = True
                weighted = w[i] * (total / ad if ad > 0 else 0.0)
                total_w = weighted if i == 0 else total_w + weighted
            values[r] = array[r] = 0.0 if over else total_w / wsum
