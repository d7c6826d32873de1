"""The nodes page: every node with its readiness, taints, allocatable and used resources, pods and HyperNode."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from pumice.api.resources import HYPERNODES

from .hypernodes import HyperNodeTree
from .objects import Obj, condition, created_of, meta_of, name_of, occupies, spec_of, status_of
from .resources import add, full, parse_resources
from .snapshot import NODES, PODS, Snapshot, Source

__all__ = ["node_rows", "nodes", "totals"]


def _ready(node: Obj) -> bool:
    cond = condition(node, "Ready")
    return cond is None or str(cond.get("status")) == "True"


def node_rows(snap: Snapshot, leaf_of: Mapping[str, str] | None = None) -> list[Obj]:
    """A row per node, sorted by name (``leaf_of``: node -> the HyperNode to show it in)."""
    used = snap.used_by_node()
    count = Counter(str(spec_of(p).get("nodeName")) for p in snap.pods if occupies(p))
    rows: list[Obj] = []
    for node in snap.nodes:
        name = name_of(node)
        st = status_of(node)
        rows.append({
            "name": name,
            "ready": _ready(node),
            "unschedulable": bool(spec_of(node).get("unschedulable")),
            "taints": [f"{t.get('key')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}"
                       for t in spec_of(node).get("taints") or []],
            "labels": meta_of(node).get("labels") or {},
            "allocatable": full(parse_resources(st.get("allocatable") or st.get("capacity"))),
            "used": full(used.get(name, {})),
            "podCount": count.get(name, 0),
            "hyperNode": (leaf_of or {}).get(name),
            "created": created_of(node),
        })
    rows.sort(key=lambda r: r["name"])
    return rows


def totals(rows: Iterable[Obj]) -> Obj:
    """Allocatable (of ready nodes) and used resources over node rows."""
    alloc: dict[str, float] = {}
    used: dict[str, float] = {}
    for r in rows:
        if r["ready"]:
            add(alloc, r["allocatable"])
        add(used, r["used"])
    return {"allocatable": full(alloc), "used": full(used)}


def nodes(store: Source) -> Obj:
    snap = Snapshot.take(store, resources=(NODES, PODS, HYPERNODES))
    rows = node_rows(snap, HyperNodeTree(snap).lowest_of_node())
    return {"resourceVersion": snap.resource_version, "items": rows, "totals": totals(rows)}
