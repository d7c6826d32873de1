"""Splitting a job too large for any one member, by task, when the job allows it (``split: by-task``).

Tasks joined by ``dependsOn`` stay together; the groups, largest gang first, each go where cluster choice
ranks first for that group alone — a member already holding part of the job first, to keep the parts few —
with the earlier groups' placements held while the later ones are chosen. At most ``split.maxParts`` parts.
Each part is a Job of its own in its member (``<job>-<cluster>``), with its share of the gang as
``minAvailable``; the parts go out in the same cycle, but each member starts its part on its own: the gang is
per part, not across members. The job's network topology applies to each part within its member.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from .demand import JobDemand, TaskDemand
from .fit import Placement as Fitted
from .placement import Part
from .propagate import PropagationError
from .records import JobRecord
from .view import MemberView

if TYPE_CHECKING:
    from .federation import Federation

__all__ = ["split_job", "sub_demand", "task_groups"]

Obj = dict[str, Any]


def task_groups(job: Obj) -> list[list[str]]:
    """Task names grouped by ``dependsOn`` (connected components), in spec order."""
    tasks = [str(t.get("name")) for t in (job.get("spec") or {}).get("tasks") or []]
    parent = {t: t for t in tasks}

    def find(t: str) -> str:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for task in (job.get("spec") or {}).get("tasks") or []:
        for dep in (task.get("dependsOn") or {}).get("name") or []:
            if dep in parent:
                parent[find(str(dep))] = find(str(task.get("name")))
    groups: dict[str, list[str]] = {}
    for t in tasks:
        groups.setdefault(find(t), []).append(t)
    return list(groups.values())


def sub_demand(demand: JobDemand, tasks: list[TaskDemand]) -> JobDemand:
    total: dict[str, float] = {}
    gang: dict[str, float] = {}
    for t in tasks:
        for k, v in t.request.items():
            total[k] = total.get(k, 0.0) + v * t.replicas
            gang[k] = gang.get(k, 0.0) + v * t.gang
    return dataclasses.replace(demand, tasks=list(tasks), total=total, gang_total=gang,
                               min_available=sum(t.gang for t in tasks))


def _merge(placements: list[Fitted | None]) -> Fitted | None:
    found = [p for p in placements if p is not None]
    if not found:
        return None
    return Fitted(np.concatenate([p.nodes for p in found]), np.concatenate([p.amounts for p in found]),
                  np.concatenate([p.pods for p in found]))


def split_job(fed: Federation, record: JobRecord, demand: JobDemand, views: list[MemberView]) -> bool:
    """Place ``record``'s job in parts; True once dispatched."""
    by_name = {t.name: t for t in demand.tasks}
    groups = [[by_name[n] for n in g if n in by_name] for g in task_groups(record.obj)]
    groups.sort(key=lambda g: -sum(sum(t.request.values()) * t.gang for t in g))
    assigned: dict[str, list[TaskDemand]] = {}
    held: dict[str, list[Fitted | None]] = {}
    temporary: list[tuple[MemberView, str]] = []
    ok = True
    try:
        for i, group in enumerate(groups):
            sub = sub_demand(demand, group)
            choice = fed.chooser.choose(sub, views)
            if not choice.ranked:
                ok = False
                break
            best = next((v for v in choice.ranked if v.name in assigned), choice.ranked[0])
            fitted = choice.placement(best)
            if fitted is not None and len(fitted.nodes):
                key = f"{demand.key}#split{i}"
                best.capacity.reserve(key, fitted.nodes, fitted.amounts, fitted.pods)
                temporary.append((best, key))
            assigned.setdefault(best.name, []).extend(group)
            held.setdefault(best.name, []).append(fitted)
        ok = ok and 0 < len(assigned) <= fed.config.max_parts
    finally:
        for view, key in temporary:
            view.capacity.release(key)
    if not ok:
        return False
    if len(assigned) == 1:
        (cluster,) = assigned
        parts = [Part(cluster, demand.name)]
    else:
        parts = [Part(cluster, f"{demand.name}-{cluster}", [t.name for t in tasks])
                 for cluster, tasks in sorted(assigned.items())]
    plan = dataclasses.replace(record.placement, dispatch=record.placement.dispatch + 1, parts=parts, moving="",
                               kind="", at=fed.clock.now())
    gang = {t.name: t.gang for t in demand.tasks}
    where = ", ".join(f"{p.cluster} ({', '.join(p.tasks or [])})" for p in parts)
    message = f"split by task over {len(parts)} clusters: {where}" if len(parts) > 1 else f"sent to {parts[0].cluster}"
    decision = {"outcome": "dispatched", "cluster": plan.label(), "reason": message,
                "parts": [p.to_json() for p in parts]}
    try:
        fed.dispatch(record, plan, {c: _merge(p) for c, p in held.items()}, decision, message, gang=gang)
    except PropagationError:
        return False
    return True
