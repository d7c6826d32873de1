"""network-topology-aware: HyperNode gradients, HyperNode binpacking, and topology node order.

* HyperNodeGradientFn: for a hard-topology job/SubJob, the eligible HyperNodes under the search root
  (tier <= highestTierAllowed, enough idle resources unless something is already placed), by tier.
* HyperNodeOrderFn: HyperNode-level binpacking of the SubJob's requests, task count on ties.
* BatchNodeOrderFn: pods with topology prefer nodes whose HyperNode is close (low LCA tier) to the
  SubJob's allocated HyperNode; other pods prefer partly used HyperNodes, tier weights fading
  (a term of the node's group of HyperNodes, offered to the placement engine as ``GroupTerms`` so
  that replicas still share its ladder).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from pumice.scheduler.framework.placement import GroupTerms
from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, TaskInfo
from pumice.scheduler.resources import CPU, EPS, MEMORY
from pumice.scheduler.topology.context import (
    PURPOSE_ALLOCATE,
    PURPOSE_EVICT,
    SearchRequest,
    TopologyContext,
    topology_of,
)
from pumice.scheduler.topology.resources import HyperNodeResources, RowScorer, binpack_scores
from pumice.scheduler.topology.subjobs import SubJob, ordered_sum
from pumice.scheduler.topology.tree import HyperNodeInfo

MAX_SCORE = 100.0
_NORMAL_POD = "network-topology-aware/normal-pod"


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
        #: The last ``alone_bounds``: (SubJob, HyperNode usage then, per HyperNode row its score
        #: alone, NaN where not scored).
        self._alone: tuple[str, np.ndarray, np.ndarray] | None = None
        #: Per SubJob: Σ resreq of its tasks (what HyperNode binpacking places for it).
        self._requests: dict[str, np.ndarray] = {}
        #: The HyperNode rows of recent gradient lists: id(list) -> (list, rows).
        self._listed: dict[int, tuple[list[HyperNodeInfo], np.ndarray]] = {}
        #: Per HyperNode row: the rows of its subtree by (tier, name), and their tiers.
        self._subtrees: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._group_cache: tuple[np.ndarray, np.ndarray, list[float], float] | None = None
        self._group_parts: list[tuple[float, np.ndarray | None, np.ndarray]] = []
        self._group_weighted_rows: list[list[tuple[float, int]]] = []
        #: Per pod request: per-HyperNode scores; (len(_changed) when computed, per-group scores).
        self._row_cache: dict[bytes, _RowScores] = {}
        self._score_cache: dict[bytes, tuple[int, np.ndarray]] = {}
        #: Per HyperNode row: the position of its tier among the normal-pod tiers (-1: none).
        self._tier_pos: list[int] = [h.tier - self.min_tier if self.min_tier <= h.tier <= self.max_tier else -1
                                     for h in self.tree.rows]
        #: Per node: (row, tier position) of its HyperNodes at the normal-pod tiers.
        self._tier_rows: dict[int, list[tuple[int, int]]] = {}
        #: Per HyperNode row: whether it has HyperNode children, and its tier.
        self._has_children = np.array([bool(h.children) for h in self.tree.rows], dtype=bool)
        self._row_tiers = np.array([h.tier for h in self.tree.rows], dtype=np.int64)
        #: Nodes of every allocate / deallocate event: their HyperNodes' usage changed.
        self._changed: list[int] = []

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
        ok = self._eligible_rows(req, purpose)
        if tree.ready:
            result = self._gradient_rows(search_root, limit, ok)
            return self._evict_order(result) if purpose == PURPOSE_EVICT else result
        eligible: dict[int, list[HyperNodeInfo]] = {}
        queue = deque([search_root])
        seen = {search_root.name}
        while queue:
            hn = queue.popleft()
            if hn.tier <= limit and ok[hn.idx]:
                eligible.setdefault(hn.tier, []).append(hn)
            for child in hn.children:
                if child not in seen and child in tree.infos:
                    seen.add(child)
                    queue.append(tree.infos[child])
        result = [sorted(eligible[t], key=lambda h: h.name) for t in sorted(eligible)]
        return self._evict_order(result) if purpose == PURPOSE_EVICT else result

    def _gradient_rows(self, root: HyperNodeInfo, limit: int, ok: np.ndarray) -> list[list[HyperNodeInfo]]:
        """The BFS of ``gradient`` on a consistent tree, with arrays: the HyperNodes under ``root``
        (itself included) of tier <= ``limit`` that ``ok`` admits, by tier, each tier by name."""
        found = self._subtrees.get(root.idx)
        if found is None:
            rows = self.tree.rows
            under = [h for h in rows if root.name in h.ancestors]
            under.sort(key=lambda h: (h.tier, h.name))
            found = self._subtrees[root.idx] = (np.array([h.idx for h in under], dtype=np.int64),
                                                np.array([h.tier for h in under], dtype=np.int64))
        idx, tiers = found
        keep = np.flatnonzero((tiers <= limit) & ok[idx])
        if not len(keep):
            return []
        rows = self.tree.rows
        kept = idx[keep]
        picked = [rows[i] for i in kept.tolist()]
        # the tiers come sorted: cut where the tier changes
        cuts = (np.flatnonzero(np.diff(tiers[keep])) + 1).tolist()
        out = []
        if len(self._listed) > 64:
            self._listed.clear()
        for a, b in zip([0, *cuts], [*cuts, len(picked)], strict=True):
            part = picked[a:b]
            self._listed[id(part)] = (part, kept[a:b])
            out.append(part)
        return out

    def _rows_array(self, candidates: list[HyperNodeInfo]) -> np.ndarray:
        """The HyperNode rows of ``candidates`` (known already when it is a gradient list of ours)."""
        found = self._listed.get(id(candidates))
        if found is not None and found[0] is candidates and len(found[1]) == len(candidates):
            return found[1]
        return np.array([h.idx for h in candidates], dtype=np.int64)

    def _eligible_rows(self, req: SearchRequest, purpose: str) -> np.ndarray:
        """Per HyperNode row: may it be a candidate for ``req`` (resources: Volcano ``LessEqual``)?"""
        n = len(self.tree.rows)
        if req.allocated_hypernode:
            return np.ones(n, dtype=bool)  # no resource pre-filter once part of the job runs
        need = req.min_resource[:, None]
        if purpose == PURPOSE_EVICT:
            return np.all(need - self.res.allocatable < EPS, axis=0)
        return np.all(need - self.res.idle < EPS, axis=0) | np.all(need - self.res.future_idle < EPS, axis=0)

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

    def _request(self, sj: SubJob) -> np.ndarray:
        """Σ resreq of the SubJob's tasks, summed in task order (once: it does not change)."""
        found = self._requests.get(sj.uid)
        if found is None:
            found = self._requests[sj.uid] = ordered_sum(self.ssn.space.zeros(), [t.resreq for t in sj.tasks])
        return found

    def hypernode_order(self, sj: SubJob, candidates: list[HyperNodeInfo]) -> dict[str, float]:
        if len(candidates) == 1 and self._alone is not None:
            # Scored alone by ``alone_bounds`` already? (A HyperNode scored alone depends on the
            # SubJob and on the HyperNode's usage only.)
            uid, used, scores = self._alone
            idx = candidates[0].idx
            found = float(scores[idx])
            if uid == sj.uid and not math.isnan(found) and (self.res.used[:, idx] == used[:, idx]).all():
                return {candidates[0].name: found}
        rows = self._rows_array(candidates)
        scores = binpack_scores(self.res, rows, self._request(sj), self.weights)
        if len(scores):
            ties = np.flatnonzero(scores == scores.max())
            if len(ties) > 1:
                for i in ties:
                    scores[i] += self._task_num(int(rows[i]), sj.tasks)
        return {h.name: MAX_SCORE * self.weight * float(s) for h, s in zip(candidates, scores, strict=True)}

    def alone_bounds(self, req: SearchRequest, sj: SubJob, candidates: list[HyperNodeInfo]) -> list[float] | None:
        """For topology allocate's job search: per candidate ``h``, the SubJob's score of ``h``
        scored alone if the SubJob's gradient inside ``h`` is exactly ``[[h]]``, -inf if it is
        empty, +inf otherwise; None when the SubJob already runs somewhere (not answered here).
        The same values as ``gradient`` and ``hypernode_order`` give, for all candidates at once."""
        if req.allocated_hypernode:
            return None
        topo = req.topology
        n = len(candidates)
        rows = self._rows_array(candidates)
        if topo is None or not topo.constrains or topo.highest_tier is None:
            eligible = np.ones(n, dtype=bool)
        else:
            tiers = self._row_tiers[rows]
            need = req.min_resource[:, None]
            eligible = (tiers <= topo.highest_tier) & (
                np.all(need - self.res.idle[:, rows] < EPS, axis=0)
                | np.all(need - self.res.future_idle[:, rows] < EPS, axis=0))
        scaled = MAX_SCORE * self.weight * binpack_scores(self.res, rows, self._request(sj), self.weights)
        # what hypernode_order gives each one scored alone, while the usage stays as it is now
        alone = np.full(len(self.tree.rows), np.nan)
        alone[rows] = scaled
        self._alone = (sj.uid, self.res.used.copy(), alone)
        out = np.where(eligible, scaled, -np.inf)
        if topo is not None and topo.constrains:
            for i in np.flatnonzero(self._has_children[rows]).tolist():
                hn = candidates[i]
                inner = self.gradient(req, hn, PURPOSE_ALLOCATE) or []
                if not inner:
                    out[i] = -math.inf
                elif len(inner) == 1 and len(inner[0]) == 1 and inner[0][0] is hn:
                    out[i] = scaled[i]
                else:
                    out[i] = math.inf
        return out.tolist()

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

    # --- normal pods: HyperNode binpacking by tier, as a term of the node's group ------------------
    def _groups(self) -> tuple[np.ndarray, np.ndarray, list[float], float] | None:
        """Nodes grouped by their HyperNode at every tier: (node -> group, tiers x groups of rows,
        tier weights, their sum); None when the weights make no score."""
        if self._group_cache is None:
            tiers = range(self.min_tier, self.max_tier + 1)
            weights: list[float] = []
            for tier in tiers:
                try:
                    weights.append(math.pow(self.fading, tier - 1))
                except (ValueError, ZeroDivisionError):
                    weights.append(math.inf)
            weight_sum = 0.0
            for w in weights:
                weight_sum += w
            table = np.stack([self.tree.rows_at_tier(t) for t in tiers])
            rows, group = np.unique(table, axis=1, return_inverse=True)
            self._group_cache = (group.reshape(-1).astype(np.int64), rows, weights, weight_sum)
            #: Per group: (tier weight, row) for each tier, in tier order (row -1: none).
            self._group_weighted_rows = [[(w, int(rows[i, g])) for i, w in enumerate(weights)]
                                         for g in range(rows.shape[1])]
            #: Per tier: (weight, which groups have a HyperNode at the tier, their row or 0); None
            #: when all have one (np.where would change nothing).
            self._group_parts = [(w, None if (rows[i] >= 0).all() else rows[i] >= 0, np.maximum(rows[i], 0))
                                 for i, w in enumerate(weights)]
        group, rows, weights, weight_sum = self._group_cache
        if not weight_sum > 0 or math.isinf(weight_sum):
            return None
        return self._group_cache

    def _tier_rows_of(self, node: int) -> list[tuple[int, int]]:
        """(row, tier position) of the node's HyperNodes at the normal-pod tiers."""
        found = self._tier_rows.get(node)
        if found is None:
            pos = self._tier_pos
            found = self._tier_rows[node] = [(r, pos[r]) for r in self.res.rows_of_node(node) if pos[r] >= 0]
        return found

    def _rows_of(self, resreq: np.ndarray) -> _RowScores:
        """The per-HyperNode scores of a pod of ``resreq``, current."""
        key = resreq.tobytes()
        rows = self._row_cache.get(key)
        if rows is None:
            rows = self._row_cache[key] = _RowScores(self, resreq)
        else:
            rows.sync()
        return rows

    def _row_scores(self, resreq: np.ndarray) -> np.ndarray:
        """Per HyperNode row: the binpack score of a pod of ``resreq`` in it (see ``_RowScores``)."""
        return self._rows_of(resreq).array

    def _group_scores(self, resreq: np.ndarray) -> np.ndarray:
        """Per group: Σ_t fading^(t-1) · binpack of the pod in the node's tier-t HyperNode (1 if
        none) / Σ_t fading^(t-1), times 100 × weight."""
        key = resreq.tobytes()
        cached = self._score_cache.get(key)
        if cached is not None and cached[0] == len(self._changed):
            return cached[1]
        per_row = self._row_scores(resreq)
        total = np.zeros(self._group_cache[1].shape[1])  # type: ignore[index]
        for w, valid, clipped in self._group_parts:
            total += w * (per_row[clipped] if valid is None else np.where(valid, per_row[clipped], 1.0))
        weight_sum = self._group_cache[3]  # type: ignore[index]
        out = total / weight_sum * (MAX_SCORE * self.weight)
        self._score_cache[key] = (len(self._changed), out)
        return out

    def _normal_pod(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        if not self.normal_pods or not self.tree.tiers or self._groups() is None:
            return None
        group = self._group_cache[0][idx]  # type: ignore[index]
        if group[0] == group[-1] and (group == group[0]).all():
            return None  # one group: the same score on every candidate (and on later replicas')
        return self._group_scores(task.resreq)[group]

    def _subjob(self, job: JobInfo, task: TaskInfo) -> SubJob | None:
        """The task's SubJob; None (without building the job's SubJobs) for a job with neither
        topology nor SubGroup policies: all its pods are in its default SubJob, without topology."""
        if job.network_topology is None and not (job.pod_group.get("spec") or {}).get("subGroupPolicy"):
            return None
        return self.ctx.job(job).task_subjob.get(task.uid)

    def _is_normal_pod(self, task: TaskInfo) -> bool:
        job = task.job
        if job is None:
            return False
        sj = self._subjob(job, task)
        return sj is None or sj.topology is None

    def group_terms(self, task: TaskInfo) -> GroupTerms | None:
        """For the placement engine's ladder: a normal pod's score is its node group's term."""
        if not self.normal_pods or not self.tree.tiers or not self._is_normal_pod(task):
            return None
        groups = self._groups()
        if groups is None:
            return None
        resreq = task.resreq
        terms = _Terms(self, self._rows_of(resreq))
        return GroupTerms(groups[0], lambda: self._group_scores(resreq), key=_NORMAL_POD,
                          terms_of=terms.terms_of, rise=terms.rise)

    def on_allocate(self, task: TaskInfo) -> None:
        node = self.res.on_allocate(task)
        if node >= 0:
            self._changed.append(node)

    def on_deallocate(self, task: TaskInfo) -> None:
        node = self.res.on_deallocate(task)
        if node >= 0:
            self._changed.append(node)

    def batch_node_order(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        job = task.job
        if job is None:
            return None
        sj = self._subjob(job, task)
        if sj is not None and sj.topology is not None:
            score = self._topology_pod(task, sj, idx)
            return None if score is None else score * (MAX_SCORE * self.weight)
        return self._normal_pod(task, idx)


class _RowScores:
    """One pod request's binpack score in every HyperNode row (``array`` and, as plain floats,
    ``values``), kept current from the plugin's event log: only the rows of the nodes placed on
    or freed since are re-scored, and of those only the rows at the normal-pod tiers (no other
    row of a partial update is ever read)."""

    __slots__ = ("array", "cursor", "resreq", "scorer", "topo", "values")

    def __init__(self, topo: _Topo, resreq: np.ndarray) -> None:
        self.topo = topo
        self.resreq = resreq
        self.scorer = RowScorer(topo.res, resreq, topo.weights)
        self._full()

    def _full(self) -> None:
        topo = self.topo
        self.array = binpack_scores(topo.res, np.arange(len(topo.tree.rows)), self.resreq, topo.weights)
        self.values: list[float] = self.array.tolist()
        self.cursor = len(topo._changed)

    def sync(self) -> None:
        log = self.topo._changed
        cursor = self.cursor
        if cursor == len(log):
            return
        tier_rows = self.topo._tier_rows_of
        if len(log) - cursor == 1:
            dirty = tier_rows(log[cursor])
        else:
            nodes = set(log[cursor:])
            if len(nodes) > 32:
                self._full()
                return
            dirty = list(dict.fromkeys(rp for n in nodes for rp in tier_rows(n)))
        self.cursor = len(log)
        self.scorer.rescore(dirty, self.values, self.array)


class _Terms:
    """The group terms of one pod request as a ladder asks for them: a few groups' current terms
    (``terms_of``), and how much any group's term may have risen since creation (``rise``: per
    tier, the largest rise of one HyperNode's binpack score, weighted as the scores are; an upper
    bound). Both follow the plugin's event log: only the HyperNodes of nodes placed on since
    changed."""

    __slots__ = ("base", "cursor", "factor", "most", "parts", "rows", "topo", "value", "weight_sum", "weights")

    def __init__(self, topo: _Topo, rows: _RowScores) -> None:
        self.topo = topo
        self.rows = rows
        self.base = list(rows.values)
        self.cursor = len(topo._changed)
        _, _, self.weights, self.weight_sum = topo._group_cache  # type: ignore[misc]
        self.parts = topo._group_weighted_rows
        self.factor = MAX_SCORE * topo.weight
        self.most = [0.0] * len(self.weights)
        self.value = 0.0

    def _advance(self) -> None:
        topo = self.topo
        log = topo._changed
        rows = self.rows
        end = len(log)
        if self.cursor == end - 1 and rows.cursor == end - 1:
            # the usual step of a ladder: its own placement, which nothing has looked at yet
            changed = topo._tier_rows.get(log[-1]) or topo._tier_rows_of(log[-1])
            rows.cursor = end
            rows.scorer.rescore(changed, rows.values, rows.array)
        else:
            rows.sync()
            tier_rows = topo._tier_rows_of
            changed = [rp for n in log[self.cursor:] for rp in tier_rows(n)]
        self.cursor = end
        values, base, most = rows.values, self.base, self.most
        rose = False
        for r, i in changed:
            up = values[r] - base[r]
            if up > most[i]:
                most[i] = up
                rose = True
        if rose:
            total = 0.0
            for w, m in zip(self.weights, most, strict=True):
                total += w * m
            self.value = total / self.weight_sum * self.factor

    def terms_of(self, groups: list[int]) -> list[float]:
        """``_group_scores(resreq)[groups]`` in plain floats: the same operations in the same order."""
        if self.cursor < len(self.topo._changed):
            self._advance()
        values = self.rows.values
        weight_sum, factor, parts = self.weight_sum, self.factor, self.parts
        out = []
        for g in groups:
            total = 0.0
            for w, r in parts[g]:
                total += w * (values[r] if r >= 0 else 1.0)
            out.append(total / weight_sum * factor)
        return out

    def rise(self) -> float:
        if self.cursor < len(self.topo._changed):
            self._advance()
        return self.value


class _BatchNodeOrder:
    """The plugin's BatchNodeOrderFn, which also offers the placement engine group terms."""

    def __init__(self, topo: _Topo) -> None:
        self.topo = topo

    def __call__(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        return self.topo.batch_node_order(task, idx)

    def group_terms(self, task: TaskInfo) -> GroupTerms | None:
        return self.topo.group_terms(task)

    def terms_key(self, task: TaskInfo) -> object:
        topo = self.topo
        if not topo.normal_pods or not topo.tree.tiers or not topo._is_normal_pod(task) or topo._groups() is None:
            return None
        return _NORMAL_POD


@register_plugin
class NetworkTopologyAwarePlugin(Plugin):
    name = "network-topology-aware"

    def on_session_open(self, ssn: Session) -> None:
        topo = _Topo(ssn, topology_of(ssn), self.arguments or {})
        ssn.add("hypernode_gradient", self.name, topo.gradient)
        ssn.add("hypernode_order", self.name, topo.hypernode_order)
        ssn.add("batch_node_order", self.name, _BatchNodeOrder(topo))
        ssn.add_event_handler(topo.on_allocate, topo.on_deallocate)
