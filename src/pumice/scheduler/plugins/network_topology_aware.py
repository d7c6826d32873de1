"""network-topology-aware: HyperNode gradients, HyperNode binpacking, and topology node order.

* HyperNodeGradientFn: for a hard-topology job/SubJob, the eligible HyperNodes under the search root
  (tier <= highestTierAllowed, enough idle resources unless something is already placed), by tier.
* HyperNodeOrderFn: HyperNode-level binpacking of the SubJob's requests, task count on ties.
* BatchNodeOrderFn: pods with topology prefer nodes whose HyperNode is close (low LCA tier) to the
  SubJob's allocated HyperNode; other pods prefer partly used HyperNodes, tier weights fading.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import TaskInfo
from pumice.scheduler.resources import CPU, MEMORY, less_equal
from pumice.scheduler.topology.context import PURPOSE_EVICT, SearchRequest, TopologyContext, topology_of
from pumice.scheduler.topology.resources import HyperNodeResources, binpack_scores
from pumice.scheduler.topology.subjobs import SubJob
from pumice.scheduler.topology.tree import HyperNodeInfo

MAX_SCORE = 100.0


def _int(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    try:
        out = int(value) if value is not None else default
    except (TypeError, ValueError):
        return default
    return default if out < 0 else out


def _float(args: dict[str, Any], key: str, default: float) -> float:
    value = args.get(key)
    try:
        out = float(value) if value is not None else default
    except (TypeError, ValueError):
        return default
    return default if out < 0 else out


def _bool(args: dict[str, Any], key: str, default: bool) -> bool:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() == "true"


class _Topo:
    """The plugin's callbacks for one session."""

    #: ``hypernode_order`` scores each HyperNode by itself, plus a bonus below one point per 100 only
    #: for HyperNodes tied at the best score (topology allocate relies on it to stop dry runs early).
    ORDER_TIES_ONLY_AT_MAX = True

    def __init__(self, ssn: Session, ctx: TopologyContext, args: dict[str, Any]) -> None:
        self.ssn = ssn
        self.ctx = ctx
        self.tree = ctx.tree
        self.weight = _int(args, "weight", 1)
        names = {CPU: _int(args, "hypernode.binpack.cpu", 1), MEMORY: _int(args, "hypernode.binpack.memory", 1)}
        for name in str(args.get("hypernode.binpack.resources") or "").split(","):
            name = name.strip()
            if name:
                names[name] = _int(args, f"hypernode.binpack.resources.{name}", 1)
        self.weights = np.full(ssn.space.size, np.nan)
        for name, w in names.items():
            if name in ssn.space.index:
                self.weights[ssn.space.index[name]] = w
        self.normal_pods = _bool(args, "hypernode.binpack.normal-pod.enable", True)
        self.fading = _float(args, "hypernode.binpack.normal-pod.fading", 0.8)
        self.evict_max = _int(args, "hypernode.gradient.evict.max-hypernodes", 8) or 8
        self.res = HyperNodeResources(self.tree, ssn.nodes)
        ctx.resources = self.res
        tiers = self.tree.tiers
        self.min_tier, self.max_tier = (tiers[0], tiers[-1]) if tiers else (0, 0)
        self._tier_tables: dict[str, np.ndarray] = {}

    # --- gradients ------------------------------------------------------------------------------
    def gradient(self, req: SearchRequest, root: HyperNodeInfo, purpose: str) -> list[list[HyperNodeInfo]] | None:
        topo = req.topology
        if topo is None or not topo.constrains or topo.highest_tier is None:
            return [[root]]
        limit = topo.highest_tier
        tree = self.tree
        search_root = root
        if req.allocated_hypernode:
            top = tree.highest_allowed(req.allocated_hypernode, limit)
            if not top:
                return None
            lca = tree.lca(root.name, top)
            if lca == root.name:
                search_root = tree.infos[top]
            elif lca != top:
                return None  # the job's domain and the caller's do not intersect
        eligible: dict[int, list[HyperNodeInfo]] = {}
        queue = deque([search_root])
        seen = {search_root.name}
        while queue:
            hn = queue.popleft()
            if hn.tier <= limit and self._eligible(hn, req, purpose):
                eligible.setdefault(hn.tier, []).append(hn)
            for child in hn.children:
                if child not in seen and child in tree.infos:
                    seen.add(child)
                    queue.append(tree.infos[child])
        result = [sorted(eligible[t], key=lambda h: h.name) for t in sorted(eligible)]
        return self._evict_order(result) if purpose == PURPOSE_EVICT else result

    def _eligible(self, hn: HyperNodeInfo, req: SearchRequest, purpose: str) -> bool:
        if req.allocated_hypernode:
            return True  # no resource pre-filter once part of the job runs
        need = req.min_resource
        if purpose == PURPOSE_EVICT:
            return less_equal(need, self.res.allocatable[:, hn.idx])
        return less_equal(need, self.res.idle[:, hn.idx]) or less_equal(need, self.res.future_idle[:, hn.idx])

    def _evict_order(self, gradients: list[list[HyperNodeInfo]]) -> list[list[HyperNodeInfo]]:
        """Widest domains first, at most ``hypernode.gradient.evict.max-hypernodes`` in all."""
        left = self.evict_max
        out: list[list[HyperNodeInfo]] = []
        for gradient in reversed(gradients):
            if left <= 0:
                break
            out.append(gradient[-left:] if len(gradient) > left else gradient)
            left -= len(out[-1])
        return out

    # --- HyperNode order ------------------------------------------------------------------------
    def _task_num(self, row: int, tasks: list[TaskInfo]) -> float:
        if not tasks:
            return 1.0
        nodes = [t.node for t in tasks if t.node >= 0]
        placed = int(self.tree.membership[row, nodes].sum()) if nodes and row >= 0 else 0
        return placed / len(tasks)

    def hypernode_order(self, sj: SubJob, candidates: list[HyperNodeInfo]) -> dict[str, float]:
        request = self.ssn.space.zeros()
        for t in sj.tasks:
            request += t.resreq
        rows = np.array([h.idx for h in candidates], dtype=np.int64)
        scores = binpack_scores(self.res, rows, request, self.weights)
        if len(scores):
            ties = np.flatnonzero(scores == scores.max())
            if len(ties) > 1:
                for i in ties:
                    scores[i] += self._task_num(int(rows[i]), sj.tasks)
        return {h.name: MAX_SCORE * self.weight * float(s) for h, s in zip(candidates, scores, strict=True)}

    # --- node order -----------------------------------------------------------------------------
    def _tier_table(self, allocated: str) -> np.ndarray:
        """Score per HyperNode row for nodes of that (lowest) HyperNode, given the SubJob's HyperNode."""
        table = self._tier_tables.get(allocated)
        if table is None:
            tree = self.tree
            table = np.zeros(len(tree.rows))
            for hn in tree.rows:
                if hn.name == allocated:
                    table[hn.idx] = 1.0
                    continue
                lca = tree.get(tree.lca(hn.name, allocated))
                if lca is None:
                    continue
                if self.min_tier == self.max_tier:
                    table[hn.idx] = 1.0
                elif self.min_tier <= lca.tier <= self.max_tier:
                    table[hn.idx] = (self.max_tier - lca.tier) / (self.max_tier - self.min_tier)
            self._tier_tables[allocated] = table
        return table

    def _topology_pod(self, task: TaskInfo, sj: SubJob, idx: np.ndarray) -> np.ndarray | None:
        allocated = self.ctx.task_hypernode.get(task.uid, "")
        if not self.tree.tiers:
            return None  # no HyperNodes: every node scores the same
        rows = self.tree.lowest[idx]
        if rows[0] == rows[-1] and (rows == rows[0]).all():
            # One HyperNode (or none) holds every candidate: the score is the same on all of them,
            # and stays so for later replicas (their candidates are among these), so the placement
            # engine may share work between replicas (its ladder).
            return None
        if not allocated:
            return np.zeros(len(idx))  # (not None: later replicas must be re-scored, not laddered)
        score = np.where(rows >= 0, self._tier_table(allocated)[np.maximum(rows, 0)], 0.0)
        ties = np.flatnonzero(score == score.max())
        if len(ties) > 1:
            by_row: dict[int, float] = {}
            for i in ties:
                row = int(rows[i])
                if row not in by_row:
                    by_row[row] = self._task_num(row, sj.tasks) if row >= 0 else 0.0
                score[i] += by_row[row]
        return score

    def _normal_pod(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        if not self.normal_pods or not self.tree.tiers:
            return None
        per_row = binpack_scores(self.res, np.arange(len(self.tree.rows)), task.resreq, self.weights)
        total = np.zeros(len(idx))
        weight_sum = 0.0
        for tier in range(self.min_tier, self.max_tier + 1):
            try:
                w = math.pow(self.fading, tier - 1)
            except (ValueError, ZeroDivisionError):
                w = math.inf
            rows = self.tree.rows_at_tier(tier)[idx]
            total += w * np.where(rows >= 0, per_row[np.maximum(rows, 0)], 1.0)
            weight_sum += w
        if not weight_sum > 0 or math.isinf(weight_sum):
            return None
        return total / weight_sum

    def batch_node_order(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        job = task.job
        if job is None:
            return None
        sj = self.ctx.job(job).task_subjob.get(task.uid)
        if sj is not None and sj.topology is not None:
            score = self._topology_pod(task, sj, idx)
        else:
            score = self._normal_pod(task, idx)
        return None if score is None else score * (MAX_SCORE * self.weight)


@register_plugin
class NetworkTopologyAwarePlugin(Plugin):
    name = "network-topology-aware"

    def on_session_open(self, ssn: Session) -> None:
        topo = _Topo(ssn, topology_of(ssn), self.arguments or {})
        ssn.add("hypernode_gradient", self.name, topo.gradient)
        ssn.add("hypernode_order", self.name, topo.hypernode_order)
        ssn.add("batch_node_order", self.name, topo.batch_node_order)
        ssn.add_event_handler(topo.res.on_allocate, topo.res.on_deallocate)
