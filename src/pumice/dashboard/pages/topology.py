"""The topology page: the HyperNode tree with, for every HyperNode, its nodes and their free and used resources."""

from __future__ import annotations

from collections.abc import Iterable

from pumice.api.resources import HYPERNODES

from .hypernodes import HyperNodeTree
from .nodes import node_rows
from .objects import Obj, created_of, spec_of
from .resources import DIMENSIONS, add, clean, full
from .snapshot import NODES, PODS, Snapshot, Source

__all__ = ["topology"]


def topology(store: Source) -> Obj:
    """The HyperNode tree with, for every HyperNode, its nodes and their free/used GPUs (and CPU).

    ``nodeCount`` counts the existing nodes a HyperNode holds (as the scheduler does); a member naming no node is
    listed among its ``nodes`` as missing. ``error`` is set when the scheduler would refuse the tree.
    """
    snap = Snapshot.take(store, resources=(NODES, PODS, HYPERNODES))
    tree = HyperNodeTree(snap)
    rows = {r["name"]: r for r in node_rows(snap, tree.lowest_of_node())}

    def sums(names: Iterable[str]) -> Obj:
        alloc: dict[str, float] = {}
        used: dict[str, float] = {}
        for n in names:
            r = rows.get(n)
            if r is None:
                continue
            if r["ready"]:
                add(alloc, r["allocatable"])
            add(used, r["used"])
        a, u = full(alloc), full(used)
        return {"allocatable": a, "used": u,
                "free": {d: clean(max(0.0, a[d] - u[d])) for d in DIMENSIONS}}

    def node_entry(n: str) -> Obj:
        r = rows.get(n)
        if r is None:
            return {"name": n, "missing": True}
        return {"name": n, "ready": r["ready"], "allocatable": r["allocatable"], "used": r["used"],
                "podCount": r["podCount"]}

    def build(hname: str, seen: set[str]) -> Obj:
        seen.add(hname)
        h = tree.hypernodes[hname]
        kids = [build(k, seen) for k in tree.children.get(hname, []) if k not in seen]
        leaves = sorted(n for n in tree.leaves.get(hname, set()) if n in rows)
        return {
            "name": hname,
            "tier": tree.tier(hname),
            "tierName": spec_of(h).get("tierName"),
            "nodeCount": len(leaves),
            "nodes": [node_entry(n) for n in tree.direct.get(hname, [])],
            "children": kids,
            "created": created_of(h),
            **sums(leaves),
        }

    seen: set[str] = set()
    roots = [build(h, seen) for h in tree.roots()]
    covered = set().union(*tree.leaves.values()) if tree.leaves else set()
    unassigned = sorted(n for n in rows if n not in covered)
    tiers = sorted({tree.tier(h) for h in tree.hypernodes})
    return {
        "resourceVersion": snap.resource_version,
        "items": roots,
        "unassigned": [node_entry(n) for n in unassigned],
        "tiers": tiers,
        "cluster": sums(rows),
        "error": tree.error,
    }
