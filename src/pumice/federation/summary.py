"""A member's ``status.resourceSummary``: totals, node shapes, GPU models, HyperNode tiers and their largest
free block — what an operator (and ``kubectl get clusters -o yaml``) sees of a member's capacity."""

from __future__ import annotations

from typing import Any

import numpy as np

from pumice.api.quantity import format_quantity
from pumice.scheduler.resources import EPS, ResourceSpace

from .capacity import MemberCapacity

__all__ = ["quantities", "resource_summary"]

GPU = "nvidia.com/gpu"


def quantities(space: ResourceSpace, vec: np.ndarray) -> dict[str, str]:
    """A vector in Volcano's units as a ResourceList (zero entries left out)."""
    out: dict[str, str] = {}
    for name, value in zip(space.names, vec.tolist(), strict=True):
        if value > EPS:
            thousandths = value * 1000 if name == "memory" else value
            out[name] = format_quantity(round(thousandths), milli=True)
    return out


def _primary(space: ResourceSpace) -> int:
    return space.index.get(GPU, 0)


def resource_summary(cap: MemberCapacity) -> dict[str, Any]:
    """The summary of a member's capacity right now (wire form, camelCase)."""
    space = cap.space
    n = len(cap.names)
    usable = cap.usable
    used = cap.used
    free = np.maximum(cap.alloc - used, 0.0)
    free[~usable] = 0.0
    alloc_total = cap.alloc[usable].sum(axis=0) if n else space.zeros()
    used_total = used[usable].sum(axis=0) if n else space.zeros()
    out: dict[str, Any] = {
        "nodes": n,
        "readyNodes": int(usable.sum()),
        "allocatable": quantities(space, alloc_total),
        "allocated": quantities(space, used_total),
        "free": quantities(space, np.maximum(alloc_total - used_total, 0.0)),
    }
    primary = _primary(space)
    idle = (used <= EPS).all(axis=1) & usable if n else np.zeros(0, bool)
    shapes: dict[tuple[Any, ...], list[int]] = {}
    for j in range(n):
        shapes.setdefault((tuple(cap.alloc[j].tolist()), cap.models[j]), []).append(j)
    node_shapes = []
    for (vec, model), rows in sorted(shapes.items(), key=lambda kv: (-len(kv[1]), kv[0][1])):
        idx = np.array(rows)
        roomiest = idx[int(np.argmax(free[idx, primary]))]
        shape: dict[str, Any] = {"resources": quantities(space, np.array(vec)), "nodes": len(rows),
                                 "idleNodes": int(idle[idx].sum()), "free": quantities(space, free[idx].sum(axis=0)),
                                 "largestFree": quantities(space, free[roomiest])}
        if model:
            shape["gpuModel"] = model
        node_shapes.append(shape)
    out["nodeShapes"] = node_shapes
    gpu = space.index.get(GPU)
    if gpu is not None:
        models: dict[str, list[int]] = {}
        for j in range(n):
            if cap.alloc[j, gpu] > 0:
                models.setdefault(cap.models[j] or "unknown", []).append(j)
        out["gpuModels"] = [
            {"model": model, "nodes": len(rows), "allocatable": int(cap.alloc[rows, gpu].sum() // 1000),
             "free": int(free[rows, gpu].sum() // 1000)}
            for model, rows in sorted(models.items())
        ]
    tree = cap.tree
    if tree is not None and tree.ready:
        tiers = []
        hn_free = tree.membership.astype(float) @ free
        hn_idle = tree.membership.astype(float) @ idle.astype(float)
        for tier in tree.tiers:
            blocks = tree.by_tier.get(tier, [])
            best = max(blocks, key=lambda h: (float(hn_free[h.idx, primary]), h.name))
            names = [h.tier_name for h in blocks if h.tier_name]
            entry: dict[str, Any] = {"tier": tier, "hyperNodes": len(blocks),
                     "largestFreeBlock": {"hyperNode": best.name, "nodes": len(best.nodes),
                                          "idleNodes": int(hn_idle[best.idx]),
                                          "free": quantities(space, hn_free[best.idx])}}
            if names:
                entry["tierName"] = names[0]
            tiers.append(entry)
        out["hyperNodeTiers"] = tiers
    return out
