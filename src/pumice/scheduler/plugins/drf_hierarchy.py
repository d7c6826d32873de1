"""Hierarchical DRF (Volcano's ``drf`` with ``enableHierarchy``, design ``hdrf.md``): queues annotated
``volcano.sh/hierarchy: root/eng/prod`` and ``volcano.sh/hierarchy-weights: 1/2/8`` form a tree whose
leaves are jobs. An inner node's allocation is the sum of its children's, each non-saturated child
rescaled to the smallest dominant share among them; a leaf is saturated when it holds all it asks
for on some resource, or asks for a resource nobody can get any more; an inner node when all its
children are. Queues compare level by level: non-saturated first, then lower share / weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pumice.scheduler.model import JobInfo, QueueInfo
from pumice.scheduler.resources import EPS, share

HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"


def queue_path(queue: QueueInfo) -> tuple[list[str], list[str]]:
    """The queue's hierarchy path and weights (annotations; empty: directly under the root)."""
    ann = (queue.queue.get("metadata") or {}).get("annotations") or {}
    return str(ann.get(HIERARCHY, "")).split("/"), str(ann.get(HIERARCHY_WEIGHTS, "")).split("/")


@dataclass(eq=False)
class HNode:
    name: str
    weight: float
    #: None for a leaf (a job)
    children: dict[str, HNode] | None
    allocated: np.ndarray
    request: np.ndarray | None = None
    share: float = 0.0
    saturated: bool = False
    job: JobInfo | None = field(default=None, repr=False)


class HierarchyTree:
    """The tree over the session's jobs; shares are recomputed (lazily) after any change."""

    def __init__(self, total: np.ndarray) -> None:
        self.total = total
        self.dims = total >= EPS
        self.root = HNode("root", 1.0, {}, np.zeros_like(total))
        self.total_allocated = np.zeros_like(total)
        #: job uid -> its leaf
        self.leaves: dict[str, HNode] = {}
        self.dirty = True

    def add_job(self, job: JobInfo, allocated: np.ndarray, queue: QueueInfo) -> None:
        """Hang ``job`` (holding ``allocated``, kept by reference) under its queue's path."""
        paths, weights = queue_path(queue)
        node = self.root
        for i in range(1, len(paths)):
            assert node.children is not None
            child = node.children.get(paths[i])
            if child is None:
                try:
                    w = float(weights[i]) if i < len(weights) else 1.0
                except ValueError:
                    w = 0.0
                child = node.children[paths[i]] = HNode(paths[i], max(w, 1.0), {}, np.zeros_like(self.total))
            if child.children is None:  # a job leaf with a queue's name: leave it
                return
            node = child
        assert node.children is not None
        leaf = HNode(job.uid, 1.0, None, allocated, job.total_request.copy(), job=job)
        node.children[job.uid] = leaf
        self.leaves[job.uid] = leaf
        self.total_allocated += allocated
        self.dirty = True

    def changed(self, delta: np.ndarray) -> None:
        """A leaf's allocation moved by ``delta`` (the caller changed the leaf's array)."""
        self.total_allocated += delta
        self.dirty = True

    def refresh(self) -> None:
        if not self.dirty:
            return
        demanding = self.dims & (self.total_allocated < self.total)
        self._update(self.root, demanding)
        self.dirty = False

    def _update(self, node: HNode, demanding: np.ndarray) -> None:
        if node.children is None:
            node.share = share(node.allocated, self.total)
            alloc, req = node.allocated, node.request
            assert req is not None
            names = alloc >= EPS
            node.saturated = bool((names & (alloc != 0) & (req != 0) & (alloc >= req)).any()
                                  or (names & ~demanding & (req != 0)).any())
            return
        mdr = 1.0
        for child in node.children.values():
            self._update(child, demanding)
            if child.share != 0 and not child.saturated and child.share < mdr:
                mdr = child.share
        allocated = np.zeros_like(self.total)
        saturated = True
        for child in node.children.values():
            if not child.saturated:
                saturated = False
            if child.share != 0:
                allocated += child.allocated if child.saturated else child.allocated * (mdr / child.share)
        node.allocated = allocated
        node.share = share(allocated, self.total)
        node.saturated = saturated

    def compare(self, left: QueueInfo, right: QueueInfo) -> float:
        """Negative: ``left`` first (Volcano ``compareQueues``)."""
        self.refresh()
        lpaths, _ = queue_path(left)
        rpaths, _ = queue_path(right)
        lnode: HNode | None = self.root
        rnode: HNode | None = self.root
        depth = min(len(lpaths), len(rpaths))
        for i in range(depth):
            if lnode is None or rnode is None:
                return 0.0
            if not lnode.saturated and rnode.saturated:
                return -1.0
            if lnode.saturated and not rnode.saturated:
                return 1.0
            lv, rv = lnode.share / lnode.weight, rnode.share / rnode.weight
            if lv != rv:
                return lv - rv
            if i < depth - 1:
                lnode = (lnode.children or {}).get(lpaths[i + 1])
                rnode = (rnode.children or {}).get(rpaths[i + 1])
        return 0.0
