"""The queues page: the queue tree with weights, states, limits (capability, deserved or the cluster) and what
each queue holds (allocated as the scheduler writes it, else computed from the running pods)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from pumice.api.resources import JOBS, PODGROUPS, QUEUES

from .nodes import node_rows, totals
from .objects import Obj, created_of, group_of, key_of, name_of, namespace_of, occupies, spec_of, status_of
from .resources import DIMENSIONS, add, full, parse_resources, pod_requests
from .snapshot import NODES, PODS, Snapshot, Source

__all__ = ["queue_tree", "queues"]


def queue_tree(snap: Snapshot, cluster: Mapping[str, float]) -> list[Obj]:
    """The queue forest (``root`` first), each queue with its children, depth, limits and what it holds."""
    queue_of_pg = {key_of(pg): spec_of(pg).get("queue") or "default" for pg in snap.podgroups}
    pg_phases: dict[str, Counter[str]] = {}
    for pg in snap.podgroups:
        pg_phases.setdefault(queue_of_pg[key_of(pg)], Counter())[status_of(pg).get("phase") or "Pending"] += 1
    job_counts = Counter(spec_of(j).get("queue") or "default" for j in snap.jobs)
    used: dict[str, dict[str, float]] = {}
    for pod in snap.pods:
        group = group_of(pod)
        if group and occupies(pod):
            q = queue_of_pg.get(f"{namespace_of(pod)}/{group}")
            if q:
                add(used.setdefault(q, {}), pod_requests(pod))
    names = {name_of(q) for q in snap.queues}
    nodes_: dict[str, Obj] = {}
    for q in snap.queues:
        name, spec, st = name_of(q), spec_of(q), status_of(q)
        parent = spec.get("parent") or ("root" if name != "root" else None)
        if parent not in names or parent == name:
            parent = None
        has_alloc = "allocated" in st
        nodes_[name] = {
            "name": name,
            "parent": parent,
            "state": st.get("state") or "Open",
            "weight": spec.get("weight", 1),
            "priority": spec.get("priority", 0),
            "reclaimable": spec.get("reclaimable", True),
            "capability": full(parse_resources(spec.get("capability"))) if spec.get("capability") else None,
            "deserved": full(parse_resources(spec.get("deserved"))) if spec.get("deserved") else None,
            "guarantee": full(parse_resources((spec.get("guarantee") or {}).get("resource")))
            if (spec.get("guarantee") or {}).get("resource") else None,
            "allocated": full(parse_resources(st.get("allocated"))) if has_alloc else None,
            "_computed": used.get(name, {}),
            "podGroups": dict(pg_phases.get(name, {})),
            "jobs": job_counts.get(name, 0),
            "created": created_of(q),
            "children": [],
        }
    roots: list[Obj] = []
    for node in sorted(nodes_.values(), key=lambda n: (n["name"] != "root", n["name"])):
        (nodes_[node["parent"]]["children"] if node["parent"] else roots).append(node)

    def finish(node: Obj, depth: int, seen: set[str]) -> dict[str, float]:
        seen.add(node["name"])
        node["depth"] = depth
        child_sum: dict[str, float] = {}
        node["children"] = [c for c in node["children"] if c["name"] not in seen]
        for child in node["children"]:
            add(child_sum, finish(child, depth + 1, seen))
        computed = node.pop("_computed")
        add(computed, child_sum)
        if node["allocated"] is None or (node["children"] and not any(node["allocated"].values())):
            node["allocated"] = full(computed)
        limit: dict[str, float] = {}
        source: dict[str, str] = {}
        for d in DIMENSIONS:
            for kind in ("capability", "deserved"):
                value = (node[kind] or {}).get(d, 0)
                if value > 0:
                    limit[d], source[d] = value, kind
                    break
            else:
                limit[d], source[d] = cluster.get(d, 0.0), "cluster"
        node["limit"] = full(limit)
        node["limitSource"] = source
        node["leaf"] = not node["children"]
        return dict(node["allocated"])

    seen: set[str] = set()
    for root in roots:
        finish(root, 0, seen)
    return roots


def queues(store: Source) -> Obj:
    snap = Snapshot.take(store, resources=(NODES, PODS, JOBS, PODGROUPS, QUEUES))
    cluster = totals(node_rows(snap))["allocatable"]
    return {"resourceVersion": snap.resource_version, "items": queue_tree(snap, cluster), "cluster": cluster}
