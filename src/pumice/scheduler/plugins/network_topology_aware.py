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
from dataclasses import dataclass, field

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.placement import GroupTerms
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import BATCH_NODE_ORDER, HYPERNODE_GRADIENT, HYPERNODE_ORDER
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, TaskInfo
from pumice.scheduler.resources import CPU, EPS, MEMORY
from pumice.scheduler.topology.context import PURPOSE_ALLOCATE, PURPOSE_EVICT, SearchRequest, topology_of
from pumice.scheduler.topology.resources import HyperNodeResources, RowScorer, binpack_scores
from pumice.scheduler.topology.subjobs import SubJob, ordered_sum
from pumice.scheduler.topology.tree import HyperNodeInfo

MAX_SCORE = 100.0
_NORMAL_POD = "network-topology-aware/normal-pod"
RESOURCES = "hypernode.binpack.resources"


def _non_negative(arguments: Arguments, key: str, default: int) -> int:
    """An integer argument; a negative one counts as the default (as in Volcano)."""
    value = arguments.get_int(key, default)
    if value < 0:
        arguments.warn(key, f"{value} is negative; using {default}")
        value = default
    return value


@dataclass(slots=True)
class NodeGroups:
    """Nodes grouped by their HyperNode at every normal-pod tier (built once per session)."""

    #: node -> its group.
    group: np.ndarray
    #: tiers x groups: the group's HyperNode row at each tier (-1: none).
    rows: np.ndarray
    #: Per tier: its weight (fading^(tier-1)), and their sum.
    weights: list[float]
    weight_sum: float
    #: Per group: (tier weight, row) for each tier, in tier order (row -1: none).
    weighted_rows: list[list[tuple[float, int]]]
    #: Per tier: (weight, which groups have a HyperNode at the tier, their row or 0); None when all
    #: have one (np.where would change nothing).
    parts: list[tuple[float, np.ndarray | None, np.ndarray]]

    #: Whether the tier weights make a score.
    scores: bool = field(init=False)

    def __post_init__(self) -> None:
        self.scores = self.weight_sum > 0 and not math.isinf(self.weight_sum)


class TierRows:
    """Per node: (row, tier position) of its HyperNodes at the normal-pod tiers, on first ask."""

    __slots__ = ("known", "positions", "res")

    def __init__(self, res: HyperNodeResources, positions: list[int]) -> None:
        self.res = res
        #: Per HyperNode row: the position of its tier among the normal-pod tiers (-1: none).
        self.positions = positions
        self.known: dict[int, list[tuple[int, int]]] = {}

    def of(self, node: int) -> list[tuple[int, int]]:
        found = self.known.get(node)
        if found is None:
            pos = self.positions
            found = self.known[node] = [(r, pos[r]) for r in self.res.rows_of_node(node) if pos[r] >= 0]
        return found


class NetworkTopologyAwarePlugin(Plugin):
    """The plugin; it also offers the placement engine group terms for normal pods
    (:class:`GroupTermsOffer`) and topology allocate its search shortcuts
    (:class:`HyperNodeSearchShortcuts`)."""

    name = "network-topology-aware"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = _non_negative(arguments, "weight", 1)
        #: Per resource name: its weight in HyperNode binpacking.
        self.resource_weights = {CPU: _non_negative(arguments, "hypernode.binpack.cpu", 1),
                                 MEMORY: _non_negative(arguments, "hypernode.binpack.memory", 1)}
        for name in (n.strip() for n in arguments.get_string(RESOURCES, "").split(",")):
            if name and name not in (CPU, MEMORY):  # the cpu / memory weights win, as in Volcano
                self.resource_weights[name] = _non_negative(arguments, f"{RESOURCES}.{name}", 1)
        self.normal_pods = arguments.get_bool("hypernode.binpack.normal-pod.enable", True)
        fading = arguments.get_float("hypernode.binpack.normal-pod.fading", 0.8)
        if fading < 0:
            arguments.warn("hypernode.binpack.normal-pod.fading", f"{fading:g} is negative; using 0.8")
            fading = 0.8
        self.fading = fading
        evict_max = arguments.get_int("hypernode.gradient.evict.max-hypernodes", 8)
        if evict_max <= 0:
            arguments.warn("hypernode.gradient.evict.max-hypernodes", f"{evict_max} is not positive; using 8")
            evict_max = 8
        self.evict_max = evict_max

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ctx = self.ctx = topology_of(ssn)
        tree = self.tree = ctx.tree
        self.weights = np.full(ssn.space.size, np.nan)
        for name, w in self.resource_weights.items():
            if name in ssn.space.index:
                self.weights[ssn.space.index[name]] = w
        self.res = ctx.resources = HyperNodeResources(tree, ssn.nodes)
        tiers = tree.tiers
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
        self._groups: NodeGroups | None = None
        #: Per pod request: per-HyperNode scores; (len(changed) when computed, per-group scores).
        self._row_cache: dict[bytes, _RowScores] = {}
        self._score_cache: dict[bytes, tuple[int, np.ndarray]] = {}
        self.tier_rows = TierRows(self.res, [h.tier - self.min_tier if self.min_tier <= h.tier <= self.max_tier
                                             else -1 for h in tree.rows])
        #: Per HyperNode row: whether it has HyperNode children, and its tier.
        self._has_children = np.array([bool(h.children) for h in tree.rows], dtype=bool)
        self._row_tiers = np.array([h.tier for h in tree.rows], dtype=np.int64)
        #: Nodes of every allocate / deallocate event: their HyperNodes' usage changed.
        self.changed: list[int] = []
        ssn.add(HYPERNODE_GRADIENT, self.name, self.gradient)
        ssn.add(HYPERNODE_ORDER, self.name, self.hypernode_order)
        ssn.add(BATCH_NODE_ORDER, self.name, self.batch_node_order)
        if tree.tiers:  # without HyperNodes (the cluster alone) no HyperNode usage to follow (most dry runs, clusters)
            ssn.add_event_handler(self.on_allocate, self.on_deallocate)

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
        ok: np.ndarray
        if purpose == PURPOSE_EVICT:
            ok = np.all(need - self.res.allocatable < EPS, axis=0)
        else:
            ok = np.all(need - self.res.idle < EPS, axis=0) | np.all(need - self.res.future_idle < EPS, axis=0)
        return ok

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
        bounds: list[float] = out.tolist()
        return bounds

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
    def _node_groups(self) -> NodeGroups:
        """Nodes grouped by their HyperNode at every normal-pod tier (built on first use)."""
        if self._groups is None:
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
            self._groups = NodeGroups(
                group=group.reshape(-1).astype(np.int64), rows=rows, weights=weights, weight_sum=weight_sum,
                weighted_rows=[[(w, int(rows[i, g])) for i, w in enumerate(weights)] for g in range(rows.shape[1])],
                parts=[(w, None if (rows[i] >= 0).all() else rows[i] >= 0, np.maximum(rows[i], 0))
                       for i, w in enumerate(weights)],
            )
        return self._groups

    def _rows_of(self, resreq: np.ndarray) -> _RowScores:
        """The per-HyperNode scores of a pod of ``resreq``, current."""
        key = resreq.tobytes()
        rows = self._row_cache.get(key)
        if rows is None:
            rows = self._row_cache[key] = _RowScores(self.res, resreq, self.weights, self.changed, self.tier_rows)
        else:
            rows.sync()
        return rows

    def _group_scores(self, resreq: np.ndarray, groups: NodeGroups) -> np.ndarray:
        """Per group: Σ_t fading^(t-1) · binpack of the pod in the node's tier-t HyperNode (1 if
        none) / Σ_t fading^(t-1), times 100 × weight."""
        key = resreq.tobytes()
        cached = self._score_cache.get(key)
        if cached is not None and cached[0] == len(self.changed):
            return cached[1]
        per_row = self._rows_of(resreq).array
        total = np.zeros(groups.rows.shape[1])
        for w, valid, clipped in groups.parts:
            total += w * (per_row[clipped] if valid is None else np.where(valid, per_row[clipped], 1.0))
        out = total / groups.weight_sum * (MAX_SCORE * self.weight)
        self._score_cache[key] = (len(self.changed), out)
        return out

    def _normal_pod(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        if not self.normal_pods or not self.tree.tiers:
            return None
        groups = self._node_groups()
        if not groups.scores:
            return None
        group = groups.group[idx]
        if group[0] == group[-1] and (group == group[0]).all():
            return None  # one group: the same score on every candidate (and on later replicas')
        out: np.ndarray = self._group_scores(task.resreq, groups)[group]
        return out

    def _subjob(self, job: JobInfo, task: TaskInfo) -> SubJob | None:
        """The task's SubJob; None (without building the job's SubJobs) for a plain job: all its
        pods are in its default SubJob, without topology."""
        if job.plain:
            return None
        return self.ctx.job(job).task_subjob.get(task.uid)

    def _is_normal_pod(self, task: TaskInfo) -> bool:
        job = task.job
        if job is None:
            return False
        sj = self._subjob(job, task)
        return sj is None or sj.topology is None

    # --- capabilities: GroupTermsOffer (the placement engine's ladders) ------------------------
    def group_terms(self, task: TaskInfo) -> GroupTerms | None:
        """For the placement engine's ladder: a normal pod's score is its node group's term."""
        if not self.normal_pods or not self.tree.tiers or not self._is_normal_pod(task):
            return None
        groups = self._node_groups()
        if not groups.scores:
            return None
        resreq = task.resreq
        terms = _Terms(self._rows_of(resreq), groups, MAX_SCORE * self.weight, self.changed, self.tier_rows)
        return GroupTerms(groups.group, lambda: self._group_scores(resreq, groups), key=_NORMAL_POD,
                          terms_of=terms.terms_of, rise=terms.rise)

    def terms_key(self, task: TaskInfo) -> object:
        if (not self.normal_pods or not self.tree.tiers or not self._is_normal_pod(task)
                or not self._node_groups().scores):
            return None
        return _NORMAL_POD

    # --- event handlers and BatchNodeOrderFn -------------------------------------------------------
    def on_allocate(self, task: TaskInfo) -> None:
        node = self.res.on_allocate(task)
        if node >= 0:
            self.changed.append(node)

    def on_deallocate(self, task: TaskInfo) -> None:
        node = self.res.on_deallocate(task)
        if node >= 0:
            self.changed.append(node)

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
    ``values``), kept current from the plugin's event log (``log``: nodes placed on or freed): only
    the rows of the nodes placed on or freed since are re-scored, and of those only the rows at the
    normal-pod tiers (no other row of a partial update is ever read)."""

    __slots__ = ("array", "cursor", "log", "res", "resreq", "scorer", "tier_rows", "values", "weights")

    def __init__(self, res: HyperNodeResources, resreq: np.ndarray, weights: np.ndarray, log: list[int],
                 tier_rows: TierRows) -> None:
        self.res = res
        self.resreq = resreq
        self.weights = weights
        self.log = log
        self.tier_rows = tier_rows
        self.scorer = RowScorer(res, resreq, weights)
        self._full()

    def _full(self) -> None:
        self.array: np.ndarray = binpack_scores(self.res, np.arange(len(self.res.tree.rows)), self.resreq,
                                                self.weights)
        self.values: list[float] = self.array.tolist()
        self.cursor = len(self.log)

    def sync(self) -> None:
        log = self.log
        cursor = self.cursor
        if cursor == len(log):
            return
        tier_rows = self.tier_rows.of
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

    __slots__ = ("base", "cursor", "factor", "log", "most", "parts", "rows", "tier_rows", "value", "weight_sum",
                 "weights")

    def __init__(self, rows: _RowScores, groups: NodeGroups, factor: float, log: list[int],
                 tier_rows: TierRows) -> None:
        self.rows = rows
        self.log = log
        self.tier_rows = tier_rows
        self.base = list(rows.values)
        self.cursor = len(log)
        self.weights, self.weight_sum = groups.weights, groups.weight_sum
        self.parts = groups.weighted_rows
        self.factor = factor
        self.most = [0.0] * len(self.weights)
        self.value = 0.0

    def _advance(self) -> None:
        log = self.log
        rows = self.rows
        end = len(log)
        if self.cursor == end - 1 and rows.cursor == end - 1:
            # the usual step of a ladder: its own placement, which nothing has looked at yet
            changed = self.tier_rows.known.get(log[-1]) or self.tier_rows.of(log[-1])
            rows.cursor = end
            rows.scorer.rescore(changed, rows.values, rows.array)
        else:
            rows.sync()
            tier_rows = self.tier_rows.of
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
        if self.cursor < len(self.log):
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
        if self.cursor < len(self.log):
            self._advance()
        return self.value
