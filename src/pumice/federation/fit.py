"""Can a member start a job's gang now? On its nodes, and inside one HyperNode of a tier.

Not by totals: each task's minimum pods are packed onto the nodes they may use (selectors, affinity, taints),
node by node, as the member's scheduler would have to. Greedy and vectorized: tasks from the largest pod down,
each onto the nodes with the least room for it first (keeping large nodes for large pods). A greedy "yes" is a
real placement (it is what is reserved); a "no" may miss a cleverer packing, so the federation errs on the side
of not sending a job that would wait in the member.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pumice.scheduler.resources import EPS

from .capacity import MemberCapacity
from .demand import JobDemand, TaskDemand

__all__ = ["Fit", "Placement", "fit_gang", "fit_topology", "short_of", "slots", "spread_gang", "tier_limit"]


@dataclass
class Placement:
    """Where the gang would go: member node indices, what each takes (k x r) and how many pods."""

    nodes: np.ndarray
    amounts: np.ndarray
    pods: np.ndarray
    hypernode: str = ""
    tier: int | None = None


@dataclass
class Fit:
    """Whether the gang fits; where (``placement``) when it was worked out, and the HyperNode block chosen."""

    ok: bool
    reason: str = ""
    placement: Placement | None = None
    hypernode: str = ""
    tier: int | None = None


def slots(cap: MemberCapacity, room: np.ndarray, pods: np.ndarray, task: TaskDemand, vec: np.ndarray) -> np.ndarray:
    """How many of ``task``'s pods each node can take now (0 where the task may not go)."""
    dims = vec > 0
    per = np.floor((room[:, dims] + EPS) / vec[dims]).min(axis=1) if dims.any() else np.full(len(pods), np.inf)
    per = np.minimum(per, np.floor(pods + EPS))
    return np.where(cap.eligible(task), np.maximum(per, 0.0), 0.0)


def short_of(cap: MemberCapacity, task: TaskDemand, have: float, eligible: int) -> str:
    return (f"task {task.name}: {task.gang} pods of {{{_describe(cap, task)}}} must start together, "
            f"{int(have)} fit on its {eligible} eligible nodes")


def _describe(cap: MemberCapacity, task: TaskDemand) -> str:
    vec = cap.vector(task.request)
    return cap.space.describe(vec) if vec is not None else ", ".join(task.request)


def fit_gang(cap: MemberCapacity, job: JobDemand, room: np.ndarray, pods: np.ndarray,
             subset: np.ndarray | None = None, tasks: list[TaskDemand] | None = None) -> Fit:
    """Pack the gang (or ``tasks``' gang pods) onto ``subset`` of the nodes (all when None).

    ``room``/``pods`` are the free columns (``MemberCapacity.free``); they are not changed.
    """
    tasks = [t for t in (job.tasks if tasks is None else tasks) if t.gang > 0]
    if subset is None:
        subset = np.arange(len(cap.names))
    free = room[subset].copy()
    free_pods = pods[subset].copy()
    scale = np.maximum(cap.alloc.max(axis=0), 1.0) if len(cap.names) else np.ones(cap.space.size)
    shaped: list[tuple[TaskDemand, np.ndarray]] = []
    for task in tasks:
        vec = cap.vector(task.request)
        if vec is None:
            return Fit(False, f"no node offers {', '.join(cap.missing(task.request))} (task {task.name})")
        shaped.append((task, vec))
    shaped.sort(key=lambda tv: -float((tv[1] / scale).sum()))
    chosen: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    vectors: list[np.ndarray] = []
    for task, vec in shaped:
        mask = cap.eligible(task)[subset]
        if not mask.any():
            return Fit(False, f"no node matches task {task.name}'s node selector, affinity or tolerations")
        dims = vec > 0
        per = np.floor((free[:, dims] + EPS) / vec[dims]).min(axis=1) if dims.any() else np.full(len(subset), np.inf)
        per = np.minimum(per, np.floor(free_pods + EPS))
        per = np.where(mask, np.maximum(per, 0.0), 0.0)
        have = float(per.sum())
        if have < task.gang:
            return Fit(False, short_of(cap, task, have, int(mask.sum())))
        idx = np.flatnonzero(per > 0)
        order = idx[np.argsort(per[idx], kind="stable")]
        cumulative = np.cumsum(per[order])
        cut = int(np.searchsorted(cumulative, task.gang - EPS))
        take_at = order[: cut + 1]
        take = per[take_at].copy()
        take[-1] -= cumulative[cut] - task.gang
        free[take_at] -= take[:, None] * vec
        free_pods[take_at] -= take
        chosen.append(subset[take_at])
        counts.append(take)
        vectors.append(vec)
    if not chosen:
        return Fit(True, placement=Placement(np.zeros(0, np.int64), np.zeros((0, cap.space.size)), np.zeros(0)))
    nodes = np.concatenate(chosen)
    amounts = np.concatenate([c[:, None] * v for c, v in zip(counts, vectors, strict=True)])
    return Fit(True, placement=Placement(nodes, amounts, np.concatenate(counts)))


def tier_limit(cap: MemberCapacity, job: JobDemand) -> tuple[int | None, str]:
    """The highest tier the job allows in this member (None: unknown tier name), and a reason when None."""
    assert job.topology is not None
    _, tier, tier_name = job.topology
    if tier is not None:
        return tier, ""
    tree = cap.tree
    if tier_name and tree is not None and tier_name in tree.tier_names:
        return tree.tier_names[tier_name], ""
    if tier_name:
        return None, f"no HyperNode tier is named {tier_name!r}"
    return None, "networkTopology gives neither highestTierAllowed nor highestTierName"


def fit_topology(cap: MemberCapacity, job: JobDemand, room: np.ndarray, pods: np.ndarray, limit: int,
                 hn_room: np.ndarray | None = None) -> Fit:
    """The gang inside one HyperNode of tier <= ``limit``, the lowest tier first, the tightest block first.

    ``hn_room``: free resources per HyperNode row (``tree.membership @ room``), when the caller has it.
    """
    tree = cap.tree
    if tree is None:
        return Fit(False, "the member has no HyperNodes: its network topology is unknown")
    if not tree.ready:
        return Fit(False, f"the member's HyperNode tree is unusable: {tree.error}")
    if hn_room is None:
        hn_room = tree.membership.astype(float) @ room
    need = np.zeros(cap.space.size)
    vec = cap.vector(job.gang_total)
    if vec is None:
        return Fit(False, f"no node offers {', '.join(cap.missing(job.gang_total))}")
    need = vec
    tried = 0
    best_block = ""
    for tier in [t for t in tree.tiers if t <= limit] + ([tree.top.tier] if tree.top.tier <= limit else []):
        rows = tree.by_tier.get(tier, []) if tier != tree.top.tier else [tree.top]
        enough = [h for h in rows if bool((hn_room[h.idx] - need > -EPS).all())]
        # tightest block first: the least room left over (most-allocated, as HyperNode binpacking prefers)
        enough.sort(key=lambda h: (float(((hn_room[h.idx] - need) / np.maximum(need, 1.0)).sum()), h.name))
        for h in enough:
            tried += 1
            fit = fit_gang(cap, job, room, pods, subset=h.nodes)
            if fit.ok and fit.placement is not None:
                fit.placement.hypernode, fit.placement.tier = h.name, tier
                fit.hypernode, fit.tier = h.name, tier
                return fit
        if rows and not best_block:
            best = max(rows, key=lambda h: float((hn_room[h.idx] / np.maximum(need, 1.0)).min()))
            best_block = f"; largest tier-{tier} block {best.name} has {cap.space.describe(hn_room[best.idx])}"
    checked = f"{tried} HyperNodes with room checked" if tried else "no HyperNode has room in total"
    return Fit(False, f"the gang ({cap.space.describe(need)}) fits in no HyperNode of tier <= {limit} "
                      f"({checked}{best_block})")


def spread_gang(cap: MemberCapacity, job: JobDemand, room: np.ndarray, pods: np.ndarray,
                subset: np.ndarray | None = None) -> Placement | None:
    """The gang placed pod by pod on the node with the most room for it (worst fit): what the federation
    reserves for a job in flight, the member's scheduler not having placed it yet.

    The member may put those pods anywhere they fit; assuming they go where they leave the least room for large
    pods is the cautious guess, so that a gang dispatched after them still fits when the member's scheduler
    spreads the earlier ones. None when the gang cannot be placed that way.
    """
    if subset is None:
        subset = np.arange(len(cap.names))
    free = room[subset].copy()
    free_pods = pods[subset].copy()
    chosen: list[int] = []
    amounts: list[np.ndarray] = []
    for task in job.tasks:
        if task.gang <= 0:
            continue
        vec = cap.vector(task.request)
        if vec is None:
            return None
        mask = cap.eligible(task)[subset]
        dims = vec > 0
        for _ in range(task.gang):
            per = np.floor((free[:, dims] + EPS) / vec[dims]).min(axis=1) if dims.any() else free_pods.copy()
            per = np.where(mask & (free_pods >= 1 - EPS), per, 0.0)
            j = int(np.argmax(per))
            if per[j] < 1:
                return None
            free[j] -= vec
            free_pods[j] -= 1
            chosen.append(int(subset[j]))
            amounts.append(vec)
    if not chosen:
        return Placement(np.zeros(0, np.int64), np.zeros((0, cap.space.size)), np.zeros(0))
    return Placement(np.array(chosen, dtype=np.int64), np.array(amounts), np.ones(len(chosen)))
