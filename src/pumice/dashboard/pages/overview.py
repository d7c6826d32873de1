"""The overview page: job counts by phase, running pods, completion rate, cluster and queue usage."""

from __future__ import annotations

from collections import Counter

from .jobs import DONE_JOB_PHASES, job_rows
from .nodes import node_rows, totals
from .objects import Obj, pod_phase, status_of
from .queues import queue_tree
from .snapshot import Snapshot, Source

__all__ = ["overview"]

_ACTIVE_JOB_PHASES = ("Pending", "Inqueue", "Running", "Restarting", "Completing", "Aborting", "Terminating",
                      "Unknown")


def overview(store: Source) -> Obj:
    """The landing page: job counts by phase, running pods, completion rate, cluster usage, queue usage."""
    snap = Snapshot.take(store)
    jobs = job_rows(snap)
    by_phase = Counter(r["phase"] for r in jobs)
    total = len(jobs)
    completed = by_phase.get("Completed", 0)
    finished = sum(by_phase.get(p, 0) for p in DONE_JOB_PHASES)
    active = sum(by_phase.get(p, 0) for p in _ACTIVE_JOB_PHASES)
    pod_phases = Counter(pod_phase(p) for p in snap.pods)
    node_list = node_rows(snap)
    cluster = totals(node_list)
    flat: list[Obj] = []

    def walk(nodes_: list[Obj]) -> None:
        for n in nodes_:
            flat.append({k: n[k] for k in ("name", "depth", "state", "weight", "allocated", "limit",
                                           "limitSource", "deserved", "capability", "leaf", "podGroups")})
            walk(n["children"])

    walk(queue_tree(snap, cluster["allocatable"]))
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
                      "byPhase": dict(sorted(Counter(status_of(g).get("phase") or "Pending"
                                                     for g in snap.podgroups).items()))},
        "nodes": {"total": len(node_list), "ready": sum(1 for r in node_list if r["ready"])},
        "hyperNodes": len(snap.hypernodes),
        "cluster": cluster,
        "queues": flat,
        "recentJobs": jobs[:8],
    }
