"""What the dashboard shows, aggregated from a store's wire-format objects.

Every function takes a ``Store`` (or a ``StoreMirror`` of one) and returns plain JSON-ready data;
nothing here knows about HTTP. Resources are reported as numbers: ``cpu`` in cores, ``memory`` in
bytes, ``gpu`` (every extended resource named ``*/gpu``, e.g. ``nvidia.com/gpu``) and ``pods`` as counts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from pumice.api.quantity import QuantityError, milli_value
from pumice.api.resources import HYPERNODES, JOBFLOWS, JOBS, PODGROUPS, QUEUES
from pumice.store import StoreError

__all__ = [
    "DIMENSIONS",
    "RESOURCES",
    "Snapshot",
    "Source",
    "job_detail",
    "jobs",
    "nodes",
    "overview",
    "parse_resources",
    "pod_requests",
    "podgroups",
    "pods",
    "queues",
    "topology",
]

Obj = dict[str, Any]


class Source(Protocol):
    """What the aggregations read: a ``pumice.store.Store`` or a ``StoreMirror`` of one."""

    @property
    def resource_version(self) -> str: ...

    def list(self, resource: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], str]: ...

PODS = "pods"
NODES = "nodes"
EVENTS = "events"

GROUP_NAME_KEYS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
TASK_SPEC = "volcano.sh/task-spec"
JOB_NAME = "volcano.sh/job-name"

#: Every resource the dashboard reads.
RESOURCES = (NODES, PODS, JOBS, PODGROUPS, QUEUES, HYPERNODES, EVENTS, JOBFLOWS)
#: The resource dimensions the dashboard reports, in display order.
DIMENSIONS = ("cpu", "memory", "gpu", "pods")
_TERMINAL = ("Succeeded", "Failed")
_ACTIVE_JOB_PHASES = ("Pending", "Inqueue", "Running", "Restarting", "Completing", "Aborting", "Terminating",
                      "Unknown")
_DONE_JOB_PHASES = ("Completed", "Failed", "Aborted", "Terminated")


# --- small accessors -------------------------------------------------------------------------------------------


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name") or "")


def _ns(obj: Obj) -> str:
    return str(_meta(obj).get("namespace") or "")


def _key(obj: Obj) -> str:
    return f"{_ns(obj)}/{_name(obj)}"


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def _created(obj: Obj) -> str | None:
    return _meta(obj).get("creationTimestamp")


def _dimension(name: str) -> str | None:
    if name in ("cpu", "memory", "pods"):
        return name
    if name == "gpu" or name.endswith("/gpu"):
        return "gpu"
    return None


def parse_resources(resources: Mapping[str, Any] | None) -> dict[str, float]:
    """A ``ResourceList`` as numbers per dashboard dimension (unparseable quantities are skipped)."""
    out: dict[str, float] = {}
    for name, value in (resources or {}).items():
        dim = _dimension(str(name))
        if dim is None:
            continue
        try:
            number = milli_value(value) / 1000
        except (QuantityError, TypeError, ValueError):
            continue
        out[dim] = out.get(dim, 0.0) + number
    return out


def _add(into: dict[str, float], more: Mapping[str, float]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0.0) + v


def _full(res: Mapping[str, float]) -> dict[str, float]:
    return {d: _clean(res.get(d, 0.0)) for d in DIMENSIONS}


def _clean(x: float) -> float:
    r = round(x, 3)
    return int(r) if r == int(r) else r


_REQUESTS: dict[tuple[str, str], dict[str, float]] = {}
_REQUESTS_MAX = 200_000


def pod_requests(pod: Obj) -> dict[str, float]:
    """Effective requests of a pod: max(sum of containers, each init container) + overhead, plus 1 pod.

    Memoised by (uid, resourceVersion): stored objects change only with a new resourceVersion. Read-only.
    """
    meta = _meta(pod)
    uid, rv = meta.get("uid"), meta.get("resourceVersion")
    if uid and rv:
        key = (str(uid), str(rv))
        hit = _REQUESTS.get(key)
        if hit is None:
            if len(_REQUESTS) >= _REQUESTS_MAX:
                _REQUESTS.clear()
            hit = _REQUESTS[key] = _pod_requests(pod)
        return hit
    return _pod_requests(pod)


def _pod_requests(pod: Obj) -> dict[str, float]:
    spec = _spec(pod)
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        _add(total, parse_resources((c.get("resources") or {}).get("requests")))
    for c in spec.get("initContainers") or []:
        for k, v in parse_resources((c.get("resources") or {}).get("requests")).items():
            total[k] = max(total.get(k, 0.0), v)
    _add(total, parse_resources(spec.get("overhead")))
    total["pods"] = 1.0
    return total


def _occupies(pod: Obj) -> bool:
    return bool(_spec(pod).get("nodeName")) and _status(pod).get("phase") not in _TERMINAL


def _group_of(pod: Obj) -> str | None:
    ann = _meta(pod).get("annotations") or {}
    for key in GROUP_NAME_KEYS:
        if ann.get(key):
            return str(ann[key])
    return None


def _task_of(pod: Obj) -> str:
    m = _meta(pod)
    return str((m.get("labels") or {}).get(TASK_SPEC) or (m.get("annotations") or {}).get(TASK_SPEC) or "")


def _owner(obj: Obj, kind: str) -> Obj | None:
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("kind") == kind:
            return ref
    return None


def _condition(obj: Obj, type_: str) -> Obj | None:
    for cond in _status(obj).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def _pending_reason(pg: Obj | None) -> str | None:
    if pg is None:
        return None
    cond = _condition(pg, "Unschedulable")
    if cond is None or str(cond.get("status")) != "True":
        return None
    return str(cond.get("message") or cond.get("reason") or "Unschedulable")


def _pod_message(pod: Obj) -> str:
    st = _status(pod)
    cond = _condition(pod, "PodScheduled")
    if cond is not None and str(cond.get("status")) == "False":
        return str(cond.get("message") or cond.get("reason") or "")
    for cs in st.get("containerStatuses") or []:
        for state in (cs.get("state") or {}).values():
            if isinstance(state, dict) and (state.get("reason") or state.get("message")):
                return str(state.get("message") or state.get("reason"))
    return str(st.get("message") or st.get("reason") or "")


# --- snapshot --------------------------------------------------------------------------------------------------


def _list(store: Source, resource: str) -> list[Obj]:
    try:
        items, _ = store.list(resource)
    except StoreError:  # a store without that resource type
        return []
    return items


@dataclass
class Snapshot:
    """One consistent-enough read of everything the dashboard aggregates, with the indexes it needs."""

    store: Source
    resource_version: str = "0"
    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    jobs: list[Obj] = field(default_factory=list)
    podgroups: list[Obj] = field(default_factory=list)
    queues: list[Obj] = field(default_factory=list)
    hypernodes: list[Obj] = field(default_factory=list)

    @classmethod
    def take(cls, store: Source, *, resources: Iterable[str] | None = None) -> Snapshot:
        wanted = set(resources) if resources is not None else {NODES, PODS, JOBS, PODGROUPS, QUEUES, HYPERNODES}
        snap = cls(store=store, resource_version=store.resource_version)
        for attr, resource in (("nodes", NODES), ("pods", PODS), ("jobs", JOBS), ("podgroups", PODGROUPS),
                               ("queues", QUEUES), ("hypernodes", HYPERNODES)):
            if resource in wanted:
                setattr(snap, attr, _list(store, resource))
        return snap

    # indexes, built on first use
    def pods_by_group(self) -> dict[str, list[Obj]]:
        out: dict[str, list[Obj]] = {}
        for pod in self.pods:
            group = _group_of(pod)
            if group:
                out.setdefault(f"{_ns(pod)}/{group}", []).append(pod)
        return out

    def podgroup_of_job(self) -> dict[str, Obj]:
        """VolcanoJob key -> its PodGroup (owner reference, else the ``<job>-<uid>`` name)."""
        by_uid = {_meta(j).get("uid"): _key(j) for j in self.jobs}
        names = {f"{_ns(j)}/{_name(j)}-{_meta(j).get('uid')}": _key(j) for j in self.jobs}
        out: dict[str, Obj] = {}
        for pg in self.podgroups:
            ref = _owner(pg, "Job")
            job = by_uid.get(ref.get("uid")) if ref else None
            job = job or names.get(_key(pg))
            if job:
                out[job] = pg
        return out

    def used_by_node(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for pod in self.pods:
            if _occupies(pod):
                _add(out.setdefault(str(_spec(pod)["nodeName"]), {}), pod_requests(pod))
        return out


# --- jobs ------------------------------------------------------------------------------------------------------


def _job_row(job: Obj, pg: Obj | None, pods: list[Obj]) -> Obj:
    spec, st = _spec(job), _status(job)
    phase = (st.get("state") or {}).get("phase") or "Pending"
    replicas = sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or [])
    counts = Counter(_status(p).get("phase") or "Pending" for p in pods)
    return {
        "kind": "Job",
        "namespace": _ns(job),
        "name": _name(job),
        "queue": spec.get("queue") or "default",
        "phase": phase,
        "minAvailable": st.get("minAvailable", spec.get("minAvailable")),
        "replicas": replicas,
        "pending": st.get("pending", counts.get("Pending", 0)),
        "running": st.get("running", counts.get("Running", 0)),
        "succeeded": st.get("succeeded", counts.get("Succeeded", 0)),
        "failed": st.get("failed", counts.get("Failed", 0)),
        "retryCount": st.get("retryCount", 0),
        "created": _created(job),
        "podGroup": _name(pg) if pg else None,
        "podGroupPhase": _status(pg).get("phase") if pg else None,
        "pendingReason": _pending_reason(pg),
        "flow": (_owner(job, "JobFlow") or {}).get("name"),
    }


def _pg_row_as_job(pg: Obj, pods: list[Obj]) -> Obj:
    st = _status(pg)
    counts = Counter(_status(p).get("phase") or "Pending" for p in pods)
    return {
        "kind": "PodGroup",
        "namespace": _ns(pg),
        "name": _name(pg),
        "queue": _spec(pg).get("queue") or "default",
        "phase": st.get("phase") or "Pending",
        "minAvailable": _spec(pg).get("minMember", 1),
        "replicas": len(pods),
        "pending": counts.get("Pending", 0),
        "running": counts.get("Running", 0),
        "succeeded": counts.get("Succeeded", 0),
        "failed": counts.get("Failed", 0),
        "retryCount": 0,
        "created": _created(pg),
        "podGroup": _name(pg),
        "podGroupPhase": st.get("phase") or "Pending",
        "pendingReason": _pending_reason(pg),
    }


def _job_rows(snap: Snapshot) -> list[Obj]:
    by_group = snap.pods_by_group()
    pg_of = snap.podgroup_of_job()
    owned = {_key(pg) for pg in pg_of.values()}
    rows = []
    for job in snap.jobs:
        pg = pg_of.get(_key(job))
        pods = by_group.get(_key(pg), []) if pg else []
        if not pods:
            pods = [p for p in snap.pods if _ns(p) == _ns(job)
                    and (_meta(p).get("labels") or {}).get(JOB_NAME) == _name(job)]
        rows.append(_job_row(job, pg, pods))
    for pg in snap.podgroups:  # plain workloads: a PodGroup the scheduler sees as a job of its own
        if _key(pg) not in owned and _owner(pg, "Job") is None:
            rows.append(_pg_row_as_job(pg, by_group.get(_key(pg), [])))
    rows.sort(key=lambda r: (r["created"] or "", r["namespace"], r["name"]), reverse=True)
    return rows


def jobs(store: Source) -> Obj:
    """Every VolcanoJob, and every PodGroup no VolcanoJob owns (plain pods grouped for gang scheduling); the
    JobFlows with the Job of each of their flows."""
    snap = Snapshot.take(store, resources=(PODS, JOBS, PODGROUPS))
    return {"resourceVersion": snap.resource_version, "items": _job_rows(snap), "flows": _flow_rows(store, snap)}


def _flow_rows(store: Source, snap: Snapshot) -> list[Obj]:
    """Each JobFlow: its phase and, per flow in order, the template, its targets and its Job's phase."""
    jobs_by_key = {_key(j): j for j in snap.jobs}
    rows = []
    for flow in _list(store, JOBFLOWS):
        steps = []
        for step in _spec(flow).get("flows") or []:
            job = jobs_by_key.get(f"{_ns(flow)}/{_name(flow)}-{step.get('name')}")
            steps.append({
                "template": step.get("name"),
                "dependsOn": list((step.get("dependsOn") or {}).get("targets") or []),
                "job": _name(job) if job else None,
                "phase": ((_status(job).get("state") or {}).get("phase") or "Pending") if job else "Waiting",
            })
        rows.append({"namespace": _ns(flow), "name": _name(flow),
                     "phase": (_status(flow).get("state") or {}).get("phase") or "Pending",
                     "retainPolicy": _spec(flow).get("jobRetainPolicy") or "retain", "steps": steps,
                     "created": _created(flow)})
    rows.sort(key=lambda r: (r["created"] or "", r["namespace"], r["name"]), reverse=True)
    return rows


def _pod_row(pod: Obj) -> Obj:
    st = _status(pod)
    req = pod_requests(pod)
    return {
        "namespace": _ns(pod),
        "name": _name(pod),
        "phase": ("Terminating" if _meta(pod).get("deletionTimestamp") else None) or st.get("phase") or "Pending",
        "node": _spec(pod).get("nodeName"),
        "podGroup": _group_of(pod),
        "job": (_meta(pod).get("labels") or {}).get(JOB_NAME),
        "task": _task_of(pod) or None,
        "requests": {d: _clean(req.get(d, 0.0)) for d in ("cpu", "memory", "gpu")},
        "created": _created(pod),
        "startTime": st.get("startTime"),
        "message": _pod_message(pod),
    }


def _event_rows(store: Source, namespace: str, names: set[str]) -> list[Obj]:
    try:
        items, _ = store.list(EVENTS, namespace)
    except StoreError:
        return []
    rows = []
    for ev in items:
        inv = ev.get("involvedObject") or {}
        if inv.get("name") not in names:
            continue
        rows.append({
            "type": ev.get("type") or "Normal",
            "reason": ev.get("reason") or "",
            "object": f"{inv.get('kind') or ''}/{inv.get('name')}",
            "message": ev.get("message") or "",
            "count": ev.get("count") or 1,
            "time": ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp") or _created(ev),
        })
    rows.sort(key=lambda r: r["time"] or "")
    return rows[-200:]


def _conditions(obj: Obj | None) -> list[Obj]:
    if obj is None:
        return []
    return [{k: c.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime")}
            for c in _status(obj).get("conditions") or []]


def job_detail(store: Source, namespace: str, name: str, kind: str = "Job") -> Obj | None:
    """One job (a VolcanoJob, or a PodGroup with ``kind="PodGroup"``): tasks, pods, PodGroup, events, YAML.

    ``None`` when it does not exist. A ``kind="Job"`` lookup falls back to a PodGroup of that name.
    """
    snap = Snapshot.take(store, resources=(PODS, JOBS, PODGROUPS))
    job = next((j for j in snap.jobs if _ns(j) == namespace and _name(j) == name), None) if kind == "Job" else None
    by_group = snap.pods_by_group()
    if job is not None:
        pg = snap.podgroup_of_job().get(_key(job))
        pods = by_group.get(_key(pg), []) if pg else []
        if not pods:
            pods = [p for p in snap.pods if _ns(p) == namespace
                    and (_meta(p).get("labels") or {}).get(JOB_NAME) == name]
        row = _job_row(job, pg, pods)
        obj = job
    else:
        pg = next((g for g in snap.podgroups if _ns(g) == namespace and _name(g) == name), None)
        if pg is None:
            return None
        pods = by_group.get(_key(pg), [])
        row = _pg_row_as_job(pg, pods)
        obj = pg
    # tasks: the spec's tasks (VolcanoJob) or the task-spec labels of the pods
    pod_tasks: dict[str, list[Obj]] = {}
    for p in pods:
        pod_tasks.setdefault(_task_of(p), []).append(p)
    tasks = []
    if job is not None:
        counts = _status(job).get("taskStatusCount") or {}
        for t in _spec(job).get("tasks") or []:
            tname = str(t.get("name") or "")
            phases = dict(Counter(_status(p).get("phase") or "Pending" for p in pod_tasks.get(tname, [])))
            if not phases and tname in counts:
                phases = dict((counts[tname] or {}).get("phase") or {})
            tasks.append({"name": tname, "replicas": t.get("replicas", 1),
                          "minAvailable": t.get("minAvailable", t.get("replicas", 1)), "phases": phases})
    else:
        min_task = _spec(pg).get("minTaskMember") or {} if pg else {}
        for tname in sorted(set(pod_tasks) | set(min_task)):
            members = pod_tasks.get(tname, [])
            tasks.append({"name": tname or "(none)", "replicas": len(members),
                          "minAvailable": min_task.get(tname), "phases":
                          dict(Counter(_status(p).get("phase") or "Pending" for p in members))})
    names = {name, *(_name(p) for p in pods)}
    if pg is not None:
        names.add(_name(pg))
    pod_rows = sorted((_pod_row(p) for p in pods), key=lambda r: r["name"])
    pending = row["pendingReason"] or next(
        (r["message"] for r in pod_rows if r["phase"] == "Pending" and r["message"]), None)
    return {
        "resourceVersion": snap.resource_version,
        "job": row,
        "pendingReason": pending if row["phase"] not in _DONE_JOB_PHASES else None,
        "tasks": tasks,
        "pods": pod_rows,
        "podGroup": None if pg is None else {
            "name": _name(pg), "phase": _status(pg).get("phase") or "Pending",
            "minMember": _spec(pg).get("minMember", 1), "queue": _spec(pg).get("queue") or "default",
            "minResources": _spec(pg).get("minResources"), "conditions": _conditions(pg),
        },
        "conditions": _conditions(job) if job is not None else [],
        "events": _event_rows(store, namespace, names),
        "yaml": yaml.safe_dump(obj, sort_keys=False, default_flow_style=False),
    }


# --- pods, podgroups -------------------------------------------------------------------------------------------


def pods(store: Source) -> Obj:
    snap = Snapshot.take(store, resources=(PODS,))
    rows = sorted((_pod_row(p) for p in snap.pods), key=lambda r: (r["namespace"], r["name"]))
    return {"resourceVersion": snap.resource_version, "items": rows}


def podgroups(store: Source) -> Obj:
    snap = Snapshot.take(store, resources=(PODS, PODGROUPS))
    by_group = snap.pods_by_group()
    rows = []
    for pg in snap.podgroups:
        st, spec = _status(pg), _spec(pg)
        owner = _owner(pg, "Job")
        rows.append({
            "namespace": _ns(pg), "name": _name(pg), "queue": spec.get("queue") or "default",
            "minMember": spec.get("minMember", 1), "phase": st.get("phase") or "Pending",
            "running": st.get("running", 0), "succeeded": st.get("succeeded", 0), "failed": st.get("failed", 0),
            "pods": len(by_group.get(_key(pg), [])), "owner": owner.get("name") if owner else None,
            "created": _created(pg), "pendingReason": _pending_reason(pg),
        })
    rows.sort(key=lambda r: (r["namespace"], r["name"]))
    return {"resourceVersion": snap.resource_version, "items": rows}


# --- nodes, cluster --------------------------------------------------------------------------------------------


def _node_ready(node: Obj) -> bool:
    cond = _condition(node, "Ready")
    return cond is None or str(cond.get("status")) == "True"


def _node_rows(snap: Snapshot, leaf_of: Mapping[str, str] | None = None) -> list[Obj]:
    used = snap.used_by_node()
    count = Counter(str(_spec(p).get("nodeName")) for p in snap.pods if _occupies(p))
    rows = []
    for node in snap.nodes:
        name = _name(node)
        st = _status(node)
        rows.append({
            "name": name,
            "ready": _node_ready(node),
            "unschedulable": bool(_spec(node).get("unschedulable")),
            "taints": [f"{t.get('key')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}"
                       for t in _spec(node).get("taints") or []],
            "labels": _meta(node).get("labels") or {},
            "allocatable": _full(parse_resources(st.get("allocatable") or st.get("capacity"))),
            "used": _full(used.get(name, {})),
            "podCount": count.get(name, 0),
            "hyperNode": (leaf_of or {}).get(name),
            "created": _created(node),
        })
    rows.sort(key=lambda r: r["name"])
    return rows


def _totals(rows: Iterable[Obj]) -> Obj:
    alloc: dict[str, float] = {}
    used: dict[str, float] = {}
    for r in rows:
        if r["ready"]:
            _add(alloc, r["allocatable"])
        _add(used, r["used"])
    return {"allocatable": _full(alloc), "used": _full(used)}


def nodes(store: Source) -> Obj:
    snap = Snapshot.take(store, resources=(NODES, PODS, HYPERNODES))
    tree = _HyperNodeTree(snap)
    rows = _node_rows(snap, tree.lowest_of_node())
    return {"resourceVersion": snap.resource_version, "items": rows, "totals": _totals(rows)}


# --- queues ----------------------------------------------------------------------------------------------------


def _queue_tree(snap: Snapshot, cluster: Mapping[str, float]) -> list[Obj]:
    queue_of_pg = {_key(pg): _spec(pg).get("queue") or "default" for pg in snap.podgroups}
    pg_phases: dict[str, Counter[str]] = {}
    for pg in snap.podgroups:
        pg_phases.setdefault(queue_of_pg[_key(pg)], Counter())[_status(pg).get("phase") or "Pending"] += 1
    job_counts = Counter(_spec(j).get("queue") or "default" for j in snap.jobs)
    used: dict[str, dict[str, float]] = {}
    for pod in snap.pods:
        group = _group_of(pod)
        if group and _occupies(pod):
            q = queue_of_pg.get(f"{_ns(pod)}/{group}")
            if q:
                _add(used.setdefault(q, {}), pod_requests(pod))
    names = {_name(q) for q in snap.queues}
    nodes_: dict[str, Obj] = {}
    for q in snap.queues:
        name, spec, st = _name(q), _spec(q), _status(q)
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
            "capability": _full(parse_resources(spec.get("capability"))) if spec.get("capability") else None,
            "deserved": _full(parse_resources(spec.get("deserved"))) if spec.get("deserved") else None,
            "guarantee": _full(parse_resources((spec.get("guarantee") or {}).get("resource")))
            if (spec.get("guarantee") or {}).get("resource") else None,
            "allocated": _full(parse_resources(st.get("allocated"))) if has_alloc else None,
            "_computed": used.get(name, {}),
            "podGroups": dict(pg_phases.get(name, {})),
            "jobs": job_counts.get(name, 0),
            "created": _created(q),
            "children": [],
        }
    roots = []
    for node in sorted(nodes_.values(), key=lambda n: (n["name"] != "root", n["name"])):
        (nodes_[node["parent"]]["children"] if node["parent"] else roots).append(node)

    def finish(node: Obj, depth: int, seen: set[str]) -> dict[str, float]:
        seen.add(node["name"])
        node["depth"] = depth
        child_sum: dict[str, float] = {}
        node["children"] = [c for c in node["children"] if c["name"] not in seen]
        for child in node["children"]:
            _add(child_sum, finish(child, depth + 1, seen))
        computed = node.pop("_computed")
        _add(computed, child_sum)
        if node["allocated"] is None or (node["children"] and not any(node["allocated"].values())):
            node["allocated"] = _full(computed)
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
        node["limit"] = _full(limit)
        node["limitSource"] = source
        node["leaf"] = not node["children"]
        return dict(node["allocated"])

    seen: set[str] = set()
    for root in roots:
        finish(root, 0, seen)
    return roots


def queues(store: Source) -> Obj:
    snap = Snapshot.take(store, resources=(NODES, PODS, JOBS, PODGROUPS, QUEUES))
    cluster = _totals(_node_rows(snap))["allocatable"]
    return {"resourceVersion": snap.resource_version, "items": _queue_tree(snap, cluster), "cluster": cluster}


# --- topology --------------------------------------------------------------------------------------------------


def _selector_matches(selector: Obj, name: str, labels: Mapping[str, str]) -> bool:
    if "exactMatch" in selector:
        return (selector.get("exactMatch") or {}).get("name") == name
    if "regexMatch" in selector:
        pattern = (selector.get("regexMatch") or {}).get("pattern") or ""
        try:
            return re.search(pattern, name) is not None
        except re.error:
            return False
    if "labelMatch" in selector:
        return _labels_match(selector.get("labelMatch") or {}, labels)
    return False


def _labels_match(sel: Obj, labels: Mapping[str, str]) -> bool:
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in sel.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


class _HyperNodeTree:
    """HyperNodes as a tree: direct member nodes, child HyperNodes (one parent each), leaf node sets."""

    def __init__(self, snap: Snapshot) -> None:
        self.hypernodes = {_name(h): h for h in snap.hypernodes}
        node_labels = {_name(n): (_meta(n).get("labels") or {}) for n in snap.nodes}
        self.direct: dict[str, list[str]] = {}
        self.children: dict[str, list[str]] = {}
        self.parent: dict[str, str] = {}
        for hname in sorted(self.hypernodes):
            members = _spec(self.hypernodes[hname]).get("members") or []
            direct: list[str] = []
            kids: list[str] = []
            for m in members:
                sel = m.get("selector") or {}
                if (m.get("type") or "Node") == "HyperNode":
                    for other in sorted(self.hypernodes):
                        if other != hname and other not in self.parent and _selector_matches(sel, other, {}):
                            self.parent[other] = hname
                            kids.append(other)
                else:
                    exact = (sel.get("exactMatch") or {}).get("name")
                    if exact and exact not in node_labels:  # a member that is not (yet) a node: show it anyway
                        direct.append(exact)
                        continue
                    direct.extend(n for n, labels in node_labels.items() if _selector_matches(sel, n, labels))
            self.direct[hname] = sorted(set(direct))
            self.children[hname] = kids
        self.leaves: dict[str, set[str]] = {}
        for hname in self.hypernodes:
            self._leaves(hname, set())

    def _leaves(self, hname: str, visiting: set[str]) -> set[str]:
        if hname in self.leaves:
            return self.leaves[hname]
        if hname in visiting:
            return set()
        visiting.add(hname)
        out = set(self.direct.get(hname, []))
        for kid in self.children.get(hname, []):
            out |= self._leaves(kid, visiting)
        self.leaves[hname] = out
        return out

    def tier(self, hname: str) -> int:
        try:
            return int(_spec(self.hypernodes[hname]).get("tier") or 0)
        except (TypeError, ValueError):
            return 0

    def lowest_of_node(self) -> dict[str, str]:
        """Node -> the lowest-tier HyperNode that contains it."""
        out: dict[str, tuple[int, str]] = {}
        for hname, leaves in self.leaves.items():
            for n in leaves:
                cand = (self.tier(hname), hname)
                if n not in out or cand < out[n]:
                    out[n] = cand
        return {n: h for n, (_, h) in out.items()}

    def roots(self) -> list[str]:
        return sorted((h for h in self.hypernodes if h not in self.parent), key=lambda h: (-self.tier(h), h))


def topology(store: Source) -> Obj:
    """The HyperNode tree with, for every HyperNode, its nodes and their free/used GPUs (and CPU)."""
    snap = Snapshot.take(store, resources=(NODES, PODS, HYPERNODES))
    tree = _HyperNodeTree(snap)
    rows = {r["name"]: r for r in _node_rows(snap, tree.lowest_of_node())}

    def sums(names: Iterable[str]) -> Obj:
        alloc: dict[str, float] = {}
        used: dict[str, float] = {}
        for n in names:
            r = rows.get(n)
            if r is None:
                continue
            if r["ready"]:
                _add(alloc, r["allocatable"])
            _add(used, r["used"])
        a, u = _full(alloc), _full(used)
        return {"allocatable": a, "used": u,
                "free": {d: _clean(max(0.0, a[d] - u[d])) for d in DIMENSIONS}}

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
        leaves = sorted(tree.leaves.get(hname, set()))
        return {
            "name": hname,
            "tier": tree.tier(hname),
            "tierName": _spec(h).get("tierName"),
            "nodeCount": len(leaves),
            "nodes": [node_entry(n) for n in tree.direct.get(hname, [])],
            "children": kids,
            "created": _created(h),
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
    }


# --- overview --------------------------------------------------------------------------------------------------


def overview(store: Source) -> Obj:
    """The landing page: job counts by phase, running pods, completion rate, cluster usage, queue usage."""
    snap = Snapshot.take(store)
    job_rows = _job_rows(snap)
    by_phase = Counter(r["phase"] for r in job_rows)
    total = len(job_rows)
    completed = by_phase.get("Completed", 0)
    finished = sum(by_phase.get(p, 0) for p in _DONE_JOB_PHASES)
    active = sum(by_phase.get(p, 0) for p in _ACTIVE_JOB_PHASES)
    pod_phases = Counter(("Terminating" if _meta(p).get("deletionTimestamp") else None)
                         or _status(p).get("phase") or "Pending" for p in snap.pods)
    node_rows = _node_rows(snap)
    totals = _totals(node_rows)
    flat: list[Obj] = []

    def walk(nodes_: list[Obj]) -> None:
        for n in nodes_:
            flat.append({k: n[k] for k in ("name", "depth", "state", "weight", "allocated", "limit",
                                           "limitSource", "deserved", "capability", "leaf", "podGroups")})
            walk(n["children"])

    walk(_queue_tree(snap, totals["allocatable"]))
    if total == 0:
        alert = "No Jobs Found"
    elif by_phase.get("Running", 0):
        alert = "Jobs Running"
    elif active == 0:
        alert = "All Jobs Complete"
    else:
        alert = "Jobs Pending"
    return {
        "resourceVersion": snap.resource_version,
        "alert": alert,
        "jobs": {"total": total, "active": active, "finished": finished, "completed": completed,
                 "byPhase": dict(sorted(by_phase.items()))},
        "completionRate": round(completed / total, 4) if total else None,
        "pods": {"total": len(snap.pods), "running": pod_phases.get("Running", 0),
                 "byPhase": dict(sorted(pod_phases.items()))},
        "podGroups": {"total": len(snap.podgroups),
                      "byPhase": dict(sorted(Counter(_status(g).get("phase") or "Pending"
                                                     for g in snap.podgroups).items()))},
        "nodes": {"total": len(node_rows), "ready": sum(1 for r in node_rows if r["ready"])},
        "hyperNodes": len(snap.hypernodes),
        "cluster": totals,
        "queues": flat,
        "recentJobs": job_rows[:8],
    }
