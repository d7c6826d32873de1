"""Why a topology job fits no HyperNode, for people: "no tier-1 HyperNode has 16 free GPUs; best has 12 (leaf-3)"."""

from __future__ import annotations

from functools import cmp_to_key
from typing import TYPE_CHECKING

import numpy as np

from pumice.scheduler.model import TaskInfo, TaskStatus
from pumice.scheduler.resources import CPU, EPS, MEMORY, format_amount
from pumice.scheduler.topology.subjobs import JobTopology

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session
    from pumice.scheduler.topology.context import TopologyContext


def _label(name: str) -> str:
    if name == CPU:
        return "CPU"
    if name.endswith("gpu"):
        return "GPUs"
    return name


def _gang_demand(ssn: Session, jt: JobTopology) -> tuple[np.ndarray, int]:
    """Σ InitResreq of the pending tasks the gang still needs, taken in task order."""
    job = jt.job
    pending = [t for t in job.tasks.values() if t.status == TaskStatus.PENDING and not t.best_effort]

    def cmp(a: TaskInfo, b: TaskInfo) -> int:
        return -1 if ssn.task_order_less(a, b) else (1 if ssn.task_order_less(b, a) else 0)

    pending.sort(key=cmp_to_key(cmp))
    count = max(job.min_available - job.ready_task_num(), 1)
    chosen = pending[:count]
    need = job.resources.zeros()
    for t in chosen:
        need += t.init_resreq
    return need, len(chosen)


def _limit(jt: JobTopology) -> int | None:
    if jt.hard and jt.topology is not None:
        return jt.topology.highest_tier
    tiers = [sj.topology.highest_tier for sj in jt.subjobs.values() if sj.hard and sj.topology is not None]
    return max((t for t in tiers if t is not None), default=None)


def no_fit_reason(ssn: Session, ctx: TopologyContext, jt: JobTopology) -> str:
    """The tightest resource over the HyperNodes the job may use; "" when it has no tier bound."""
    limit = _limit(jt)
    if limit is None:
        return ""
    tree = ctx.tree
    candidates = sorted((h for h in tree.rows if h.tier <= limit), key=lambda h: h.name)
    if jt.allocated_hypernode:  # part of the job runs: only its domain counts
        domain = tree.highest_allowed(jt.allocated_hypernode, limit)
        candidates = [h for h in candidates if domain in h.ancestors]
    if not candidates:
        return f"no HyperNode of tier <= {limit} exists"
    tiers = {h.tier for h in candidates}
    scope = f"tier-{limit}" if tiers == {limit} else f"tier-<={limit}"
    need, n_pods = _gang_demand(ssn, jt)
    free = tree.sums(ssn.nodes.future_idle(), candidates)  # resources x candidates
    names = ssn.space.names
    worst: tuple[float, int, int, int] | None = None
    for d in np.flatnonzero(need > 0).tolist():
        best = int(np.argmax(free[d]))
        gap = (need[d] - free[d, best]) / need[d]
        if free[d, best] + EPS < need[d]:
            key = (gap, 0 if names[d] in (CPU, MEMORY) else 1, int(d), best)
            if worst is None or key[:2] > worst[:2]:
                worst = key
    if worst is not None:
        _, _, d, best = worst
        name = names[d]
        return (f"no {scope} HyperNode has {format_amount(name, float(need[d]))} free {_label(name)}; "
                f"best has {format_amount(name, float(free[d, best]))} ({candidates[best].name})")
    errors = sorted(set(jt.job.fit_errors.values()))[:2]
    detail = f": {'; '.join(errors)}" if errors else ""
    return f"no {scope} HyperNode fits all {n_pods} pods of the gang together{detail}"
