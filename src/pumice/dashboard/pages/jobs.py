"""The jobs page and a job's page: VolcanoJobs, and the PodGroups no VolcanoJob owns (plain pods grouped for gang
scheduling), with their tasks, pods, PodGroup, events and YAML."""

from __future__ import annotations

from collections import Counter

import yaml

from pumice.api.resources import JOBFLOWS, JOBS, PODGROUPS

from .objects import (
    JOB_NAME,
    Obj,
    conditions,
    created_of,
    key_of,
    meta_of,
    name_of,
    namespace_of,
    owner,
    pending_reason,
    spec_of,
    status_of,
    task_of,
)
from .pods import pod_row
from .snapshot import EVENTS, PODS, Snapshot, Source, list_or_nothing

__all__ = ["DONE_JOB_PHASES", "flow_rows", "job_detail", "job_rows", "jobs"]

DONE_JOB_PHASES = ("Completed", "Failed", "Aborted", "Terminated")


def _job_row(job: Obj, pg: Obj | None, pods: list[Obj]) -> Obj:
    spec, st = spec_of(job), status_of(job)
    phase = (st.get("state") or {}).get("phase") or "Pending"
    replicas = sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or [])
    counts = Counter(status_of(p).get("phase") or "Pending" for p in pods)
    return {
        "kind": "Job",
        "namespace": namespace_of(job),
        "name": name_of(job),
        "queue": spec.get("queue") or "default",
        "phase": phase,
        "minAvailable": st.get("minAvailable", spec.get("minAvailable")),
        "replicas": replicas,
        "pending": st.get("pending", counts.get("Pending", 0)),
        "running": st.get("running", counts.get("Running", 0)),
        "succeeded": st.get("succeeded", counts.get("Succeeded", 0)),
        "failed": st.get("failed", counts.get("Failed", 0)),
        "retryCount": st.get("retryCount", 0),
        "created": created_of(job),
        "podGroup": name_of(pg) if pg else None,
        "podGroupPhase": status_of(pg).get("phase") if pg else None,
        "pendingReason": pending_reason(pg),
        "flow": (owner(job, "JobFlow") or {}).get("name"),
    }


def _pg_row_as_job(pg: Obj, pods: list[Obj]) -> Obj:
    st = status_of(pg)
    counts = Counter(status_of(p).get("phase") or "Pending" for p in pods)
    return {
        "kind": "PodGroup",
        "namespace": namespace_of(pg),
        "name": name_of(pg),
        "queue": spec_of(pg).get("queue") or "default",
        "phase": st.get("phase") or "Pending",
        "minAvailable": spec_of(pg).get("minMember", 1),
        "replicas": len(pods),
        "pending": counts.get("Pending", 0),
        "running": counts.get("Running", 0),
        "succeeded": counts.get("Succeeded", 0),
        "failed": counts.get("Failed", 0),
        "retryCount": 0,
        "created": created_of(pg),
        "podGroup": name_of(pg),
        "podGroupPhase": st.get("phase") or "Pending",
        "pendingReason": pending_reason(pg),
    }


def job_rows(snap: Snapshot) -> list[Obj]:
    by_group = snap.pods_by_group()
    pg_of = snap.podgroup_of_job()
    owned = {key_of(pg) for pg in pg_of.values()}
    rows = []
    for job in snap.jobs:
        pg = pg_of.get(key_of(job))
        pods = by_group.get(key_of(pg), []) if pg else []
        if not pods:
            pods = [p for p in snap.pods if namespace_of(p) == namespace_of(job)
                    and (meta_of(p).get("labels") or {}).get(JOB_NAME) == name_of(job)]
        rows.append(_job_row(job, pg, pods))
    for pg in snap.podgroups:  # plain workloads: a PodGroup the scheduler sees as a job of its own
        if key_of(pg) not in owned and owner(pg, "Job") is None:
            rows.append(_pg_row_as_job(pg, by_group.get(key_of(pg), [])))
    rows.sort(key=lambda r: (r["created"] or "", r["namespace"], r["name"]), reverse=True)
    return rows


def jobs(store: Source) -> Obj:
    """Every VolcanoJob, and every PodGroup no VolcanoJob owns (plain pods grouped for gang scheduling); the
    JobFlows with the Job of each of their flows."""
    snap = Snapshot.take(store, resources=(PODS, JOBS, PODGROUPS))
    return {"resourceVersion": snap.resource_version, "items": job_rows(snap), "flows": flow_rows(store, snap)}


def flow_rows(store: Source, snap: Snapshot) -> list[Obj]:
    """Each JobFlow: its phase and, per flow in order, the template, its targets and its Job's phase."""
    jobs_by_key = {key_of(j): j for j in snap.jobs}
    rows = []
    for flow in list_or_nothing(store, JOBFLOWS):
        steps = []
        for step in spec_of(flow).get("flows") or []:
            job = jobs_by_key.get(f"{namespace_of(flow)}/{name_of(flow)}-{step.get('name')}")
            steps.append({
                "template": step.get("name"),
                "dependsOn": list((step.get("dependsOn") or {}).get("targets") or []),
                "job": name_of(job) if job else None,
                "phase": ((status_of(job).get("state") or {}).get("phase") or "Pending") if job else "Waiting",
            })
        rows.append({"namespace": namespace_of(flow), "name": name_of(flow),
                     "phase": (status_of(flow).get("state") or {}).get("phase") or "Pending",
                     "retainPolicy": spec_of(flow).get("jobRetainPolicy") or "retain", "steps": steps,
                     "created": created_of(flow)})
    rows.sort(key=lambda r: (r["created"] or "", r["namespace"], r["name"]), reverse=True)
    return rows


def _event_rows(store: Source, namespace: str, names: set[str]) -> list[Obj]:
    rows = []
    for ev in list_or_nothing(store, EVENTS, namespace):
        inv = ev.get("involvedObject") or {}
        if inv.get("name") not in names:
            continue
        rows.append({
            "type": ev.get("type") or "Normal",
            "reason": ev.get("reason") or "",
            "object": f"{inv.get('kind') or ''}/{inv.get('name')}",
            "message": ev.get("message") or "",
            "count": ev.get("count") or 1,
            "time": ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp") or created_of(ev),
        })
    rows.sort(key=lambda r: r["time"] or "")
    return rows[-200:]


def job_detail(store: Source, namespace: str, name: str, kind: str = "Job") -> Obj | None:
    """One job (a VolcanoJob, or a PodGroup with ``kind="PodGroup"``): tasks, pods, PodGroup, events, YAML.

    ``None`` when it does not exist. A ``kind="Job"`` lookup falls back to a PodGroup of that name.
    """
    snap = Snapshot.take(store, resources=(PODS, JOBS, PODGROUPS))
    job = None
    if kind == "Job":
        job = next((j for j in snap.jobs if namespace_of(j) == namespace and name_of(j) == name), None)
    by_group = snap.pods_by_group()
    if job is not None:
        pg = snap.podgroup_of_job().get(key_of(job))
        pods = by_group.get(key_of(pg), []) if pg else []
        if not pods:
            pods = [p for p in snap.pods if namespace_of(p) == namespace
                    and (meta_of(p).get("labels") or {}).get(JOB_NAME) == name]
        row = _job_row(job, pg, pods)
        obj = job
    else:
        pg = next((g for g in snap.podgroups if namespace_of(g) == namespace and name_of(g) == name), None)
        if pg is None:
            return None
        pods = by_group.get(key_of(pg), [])
        row = _pg_row_as_job(pg, pods)
        obj = pg
    # tasks: the spec's tasks (VolcanoJob) or the task-spec labels of the pods
    pod_tasks: dict[str, list[Obj]] = {}
    for p in pods:
        pod_tasks.setdefault(task_of(p), []).append(p)
    tasks = []
    if job is not None:
        counts = status_of(job).get("taskStatusCount") or {}
        for t in spec_of(job).get("tasks") or []:
            tname = str(t.get("name") or "")
            phases = dict(Counter(status_of(p).get("phase") or "Pending" for p in pod_tasks.get(tname, [])))
            if not phases and tname in counts:
                phases = dict((counts[tname] or {}).get("phase") or {})
            tasks.append({"name": tname, "replicas": t.get("replicas", 1),
                          "minAvailable": t.get("minAvailable", t.get("replicas", 1)), "phases": phases})
    else:
        min_task = spec_of(pg).get("minTaskMember") or {} if pg else {}
        for tname in sorted(set(pod_tasks) | set(min_task)):
            members = pod_tasks.get(tname, [])
            tasks.append({"name": tname or "(none)", "replicas": len(members),
                          "minAvailable": min_task.get(tname), "phases":
                          dict(Counter(status_of(p).get("phase") or "Pending" for p in members))})
    names = {name, *(name_of(p) for p in pods)}
    if pg is not None:
        names.add(name_of(pg))
    pod_rows = sorted((pod_row(p) for p in pods), key=lambda r: r["name"])
    pending = row["pendingReason"] or next(
        (r["message"] for r in pod_rows if r["phase"] == "Pending" and r["message"]), None)
    return {
        "resourceVersion": snap.resource_version,
        "job": row,
        "pendingReason": pending if row["phase"] not in DONE_JOB_PHASES else None,
        "tasks": tasks,
        "pods": pod_rows,
        "podGroup": None if pg is None else {
            "name": name_of(pg), "phase": status_of(pg).get("phase") or "Pending",
            "minMember": spec_of(pg).get("minMember", 1), "queue": spec_of(pg).get("queue") or "default",
            "minResources": spec_of(pg).get("minResources"), "conditions": conditions(pg),
        },
        "conditions": conditions(job) if job is not None else [],
        "events": _event_rows(store, namespace, names),
        "yaml": yaml.safe_dump(obj, sort_keys=False, default_flow_style=False),
    }
