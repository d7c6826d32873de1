"""From a run's record to numbers: per-job timings, per-queue waits and shares, cluster utilization.

Time averages are weighted by how long each allocation level lasted, over the whole run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .engine import SimResult
from .measured import used_seconds
from .recorder import DIMS, JobRecord, Recorder

__all__ = ["job_rows", "queue_share_series", "summarize", "utilization_series"]


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)


def _job_phase(job: JobRecord, rec: Recorder) -> str:
    if job.kind == "Job":
        return job.phase
    phases = [rec.pods[p].phase for p in job.pods]
    if not phases:
        return "Pending"
    if all(p == "Succeeded" for p in phases):
        return "Completed"
    if any(p == "Failed" for p in phases) and all(p in ("Succeeded", "Failed") for p in phases):
        return "Failed"
    if any(p == "Running" for p in phases):
        return "Running"
    return "Pending"


def _job_times(job: JobRecord, rec: Recorder) -> tuple[float | None, float | None]:
    pods = [rec.pods[p] for p in job.pods]
    starts = [p.start for p in pods if p.start is not None]
    started = min(starts) if starts else None
    if job.kind == "Job":
        return started, job.finished
    ends = [p.end for p in pods]
    done = pods and all(e is not None for e in ends) and all(p.phase in ("Succeeded", "Failed") for p in pods)
    return started, (max(e for e in ends if e is not None) if done else None)


def job_rows(result: SimResult) -> list[dict[str, Any]]:
    """One entry per job: identity, queue, final phase, submitted/started/finished, its pods."""
    rec = result.recorder
    rows: list[dict[str, Any]] = []
    for job in rec.jobs.values():
        if job.kind == "PodGroup" and not job.pods:
            continue  # a Volcano Job's PodGroup before its owner was known, or an empty group
        started, finished = _job_times(job, rec)
        pods = [rec.pods[p] for p in job.pods]
        rows.append({
            "namespace": job.namespace,
            "name": job.name,
            "kind": job.kind,
            "queue": job.queue,
            "phase": _job_phase(job, rec),
            "submitted": _r(job.submitted),
            "started": _r(started),
            "finished": _r(finished),
            "wait": _r(None if started is None or job.submitted is None else started - job.submitted),
            "jct": _r(None if finished is None or job.submitted is None else finished - job.submitted),
            "pods": [{"name": p.name, "node": p.node or None, "phase": p.phase, "start": _r(p.start),
                      "end": _r(p.end)} for p in pods],
        })
    rows.sort(key=lambda r: (r["submitted"] if r["submitted"] is not None else 0.0, r["namespace"], r["name"]))
    return rows


def utilization_series(rec: Recorder) -> tuple[np.ndarray, np.ndarray]:
    """(times, used/capacity per dimension) at every allocation change."""
    cap = rec.capacity.sum(axis=0) if rec.capacity.size else np.zeros(len(DIMS))
    times = np.array([t for t, _, _ in rec.series])
    used = np.array([u for _, u, _ in rec.series]).reshape(-1, len(DIMS))
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(cap > 0, used / np.where(cap > 0, cap, 1), 0.0)
    return times, util


def queue_share_series(rec: Recorder) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(times, {queue: dominant share of the cluster}) at every allocation change."""
    cap = rec.capacity.sum(axis=0) if rec.capacity.size else np.zeros(len(DIMS))
    times = np.array([t for t, _, _ in rec.series])
    queues = sorted({q for _, _, per in rec.series for q in per})
    out: dict[str, np.ndarray] = {}
    safe = np.where(cap > 0, cap, 1)
    for q in queues:
        vals = np.array([per.get(q, np.zeros(len(DIMS))) for _, _, per in rec.series]).reshape(-1, len(DIMS))
        out[q] = np.where(cap > 0, vals / safe, 0.0).max(axis=1) if len(vals) else np.zeros(0)
    return times, out


def _time_mean(times: np.ndarray, values: np.ndarray, end: float) -> float:
    if len(times) == 0 or end <= 0:
        return 0.0
    dur = np.clip(np.diff(np.append(times, end)), 0, None)
    return float((dur * values).sum() / end) if dur.sum() > 0 else float(values[-1])


def _p95(values: list[float]) -> float | None:
    return float(np.percentile(values, 95)) if values else None


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def summarize(result: SimResult, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per-queue and cluster-wide numbers of a run (the ``queues`` and ``cluster`` of ``-o json``)."""
    rec = result.recorder
    rows = job_rows(result) if rows is None else rows
    end = result.end
    times, shares = queue_share_series(rec)
    queues: dict[str, dict[str, Any]] = {}
    for q in sorted({r["queue"] for r in rows} | set(shares)):
        mine = [r for r in rows if r["queue"] == q]
        waits = [r["wait"] for r in mine if r["wait"] is not None]
        jcts = [r["jct"] for r in mine if r["jct"] is not None]
        share = shares.get(q, np.zeros(len(times)))
        queues[q] = {
            "jobs": len(mine),
            "started": len(waits),
            "finished": len(jcts),
            "mean_wait": _r(_mean(waits)),
            "p95_wait": _r(_p95(waits)),
            "mean_jct": _r(_mean(jcts)),
            "p95_jct": _r(_p95(jcts)),
            "mean_share": _r(_time_mean(times, share, end)),
            "peak_share": _r(float(share.max()) if len(share) else 0.0),
        }
    t_util, util = utilization_series(rec)
    cap = rec.capacity.sum(axis=0) if rec.capacity.size else np.zeros(len(DIMS))
    frag = [f for _, f in result.fragmentation]
    phases: dict[str, int] = {}
    for r in rows:
        phases[r["phase"]] = phases.get(r["phase"], 0) + 1
    cluster: dict[str, Any] = {
        "nodes": len(rec.node_index),
        "capacity": {"cpu": float(cap[0]) / 1000, "memory_gib": float(cap[1]) / 2**30, "gpu": float(cap[2]) / 1000},
        "pods": len(rec.pods),
        "pods_never_bound": sum(1 for p in rec.pods.values() if not p.node),
        "jobs": len(rows),
        "job_phases": dict(sorted(phases.items())),
        "scheduling_cycles": result.cycles,
        "end": _r(end),
        "wall_seconds": _r(result.wall_seconds),
        "primary_resource": "gpu" if cap[2] > 0 else "cpu",
        "fragmentation_mean": _r(float(np.mean(frag)) if frag else 0.0),
        "fragmentation_end": _r(frag[-1] if frag else 0.0),
    }
    for i, dim in enumerate(DIMS):
        col = util[:, i] if len(util) else np.zeros(0)
        cluster[f"{dim}_util_mean"] = _r(_time_mean(t_util, col, end))
        cluster[f"{dim}_util_peak"] = _r(float(col.max()) if len(col) else 0.0)
    used_cpu, used_memory = used_seconds(rec.pods.values(), end)  # measured (usage profiles), not requested
    cluster["cpu_used_mean"] = _r(used_cpu / (cap[0] * end) if cap[0] > 0 and end > 0 else 0.0)
    cluster["memory_used_mean"] = _r(used_memory / (cap[1] * end) if cap[1] > 0 and end > 0 else 0.0)
    if result.errors:
        cluster["errors"] = result.errors
    return {"queues": queues, "cluster": cluster}
