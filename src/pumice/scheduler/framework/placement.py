"""Choosing a node for a task: predicates and node order, evaluated column-wise.

Volcano filters and scores every node for every task. Here a task's *shape* (the static part of
its constraints) is evaluated once per session, and replicas of one shape placed one after the
other share a *ladder*: the scores their candidate nodes would have after 0, 1, 2, ... more
replicas, computed in one vectorized call. Choosing the next replica's node is then an argmax over
a few dozen numbers; the decisions are exactly those of the per-task evaluation (see ``_Ladder``).

A BatchNodeOrderFn usually stops the ladder (its scores depend on all candidates). One whose score
is a term of the node's *group* (HyperNode binpacking of pods without topology: the term of a node
is that of its HyperNodes, and rises for the whole group when a pod lands in it) offers
:class:`GroupTerms`, and replicas share a :class:`_TermLadder` instead, which answers a pick only
while it provably beats every node left out of the ladder.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from pumice.scheduler.framework.points import BATCH_NODE_ORDER, NODE_ORDER, PREDICATE, BatchScorer
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import Shape, TaskInfo
from pumice.scheduler.resources import EPS

if TYPE_CHECKING:
    from pumice.scheduler.conf import SchedulerConf
    from pumice.scheduler.framework.session import Session

#: Node changes kept for the placement caches of a long-lived state before they are dropped.
MAX_CHANGE_LOG = 1_000_000
#: Deepest ladder built at once; longer runs of replicas rebuild it when it runs out.
MAX_LADDER_DEPTH = 64
#: Most candidates of a ladder whose batch score is a group term (whole groups of the best nodes).
GROUP_LADDER_NODES = 128


@dataclass(slots=True)
class Choice:
    node: int
    #: True: the task fits the node's idle resources (allocate); False: only its future idle (pipeline).
    fits_idle: bool


@dataclass(slots=True)
class _Static:
    mask: np.ndarray
    score: np.ndarray
    #: Resource dimensions the shape's InitResreq asks for (the fit test runs on these only).
    dims: list[int]


@dataclass(slots=True)
class _Rows:
    """Feasibility and scores of one shape on every node, refreshed row by row as nodes change."""

    ok: np.ndarray
    fits_idle: np.ndarray
    score: np.ndarray
    cursor: int


#: Levels of a ladder computed up front; a candidate that takes more replicas gets more levels
#: then. With spreading scores most candidates take one replica, so most levels would go unused.
FIRST_LEVELS = 8


class _Ladder:
    """Scores of candidate nodes for the next replicas of one shape.

    Correctness: while only this run places pods, a node's row changes only when it is picked, so
    the next pick is the best head among the candidates; with candidates = the top ``budget``
    feasible nodes by (score, -index), any of the next ``budget`` picks lies among them (an
    untouched candidate always outranks every non-candidate). A candidate's levels beyond the first
    ones are computed when it reaches them, from its row at that time (which then holds exactly the
    replicas it was given). When every candidate is exhausted the ladder is rebuilt.
    """

    __slots__ = ("budget", "cand", "depth", "expected_changes", "extend", "heap", "level", "ok", "score",
                 "shape", "subset_key")

    def __init__(self, shape: Shape, subset_key: int, cand: np.ndarray, ok: np.ndarray, score: np.ndarray,
                 depth: int, expected_changes: int, budget: int | None = None,
                 extend: Callable[[int, int], tuple[list[bool], list[float]]] | None = None) -> None:
        self.shape = shape
        self.subset_key = subset_key
        self.cand: list[int] = cand.tolist()
        # per candidate, its levels computed so far (plain lists: a pick is a few list lookups)
        self.ok: list[list[bool]] = ok.T.tolist()
        self.score: list[list[float]] = score.T.tolist()
        #: Levels a candidate can have at most (resources allow no more replicas on it).
        self.depth = depth
        #: (node index, replicas) -> that candidate's next levels; None: all levels are given.
        self.extend = extend
        self.level = [0] * len(self.cand)
        #: (-score of the candidate's next replica, candidate position): positions follow node order,
        #: so equal scores go to the lowest node index.
        self.heap = [(-sc[0], c) for c, (sc, fits) in enumerate(zip(self.score, self.ok, strict=True)) if fits[0]]
        heapq.heapify(self.heap)
        self.expected_changes = expected_changes
        #: Picks the ladder answers for: the candidates hold the next ``budget`` picks, and a
        #: candidate at level ``depth`` is known to take no more only when depth < budget (the
        #: depth was cut to what resources allow).
        self.budget = depth if budget is None else budget

    def pick(self) -> int | None:
        if not self.heap or self.budget <= 0:
            return None
        self.budget -= 1
        _, c = heapq.heappop(self.heap)
        self.expected_changes += 1
        nxt = _next_level(self, c)
        if nxt is not None and nxt[0]:
            heapq.heappush(self.heap, (-nxt[1], c))
        return self.cand[c]


def _next_level(lad: _Ladder | _TermLadder, c: int) -> tuple[bool, float] | None:
    """Move candidate ``c`` of a ladder one replica up: (feasible, score) there, None past the depth.
    Levels are computed in doubling batches as candidates reach them."""
    lv = lad.level[c] + 1
    lad.level[c] = lv
    if lv >= lad.depth:
        return None
    ok, score = lad.ok[c], lad.score[c]
    if lv == len(ok) and lad.extend is not None:
        more_ok, more_score = lad.extend(lad.cand[c], min(lad.depth, 2 * lv) - lv)
        ok.extend(more_ok)
        score.extend(more_score)
    return ok[lv], score[lv]


@dataclass(slots=True)
class GroupTerms:
    """A BatchNodeOrderFn score that is a term of the node's *group* (e.g. its HyperNodes): offered
    by a batch scorer's ``group_terms(task)`` so that replicas may still share a ladder.

    ``group`` maps every node to its group; ``terms()`` gives each group's current term, exactly
    the value the scorer would add for a node of the group now (it may change whenever a pod is
    placed anywhere); ``key`` tells tasks apart whose terms differ although their shape is equal.
    """

    group: np.ndarray
    terms: Callable[[], np.ndarray]
    key: object = None
    #: Optional, for speed: ``terms()[groups]`` for a few groups (the same values, bit for bit),
    #: and an upper bound on how much any group's term has risen since this object was made.
    terms_of: Callable[[list[int]], list[float]] | None = None
    rise: Callable[[], float] | None = None
    #: The term is one number for every node, now and for the rest of the session: it cannot change
    #: which node is best, and replicas share a plain ladder.
    constant: bool = False


class _TermLadder:
    """A ladder for a shape whose batch score is a :class:`GroupTerms`: a pick is the best
    candidate by its next level's score plus its group's current term, and is answered only while
    it provably beats every other feasible node: one not picked keeps its row, so its score is its
    row's score plus its group's current term, bounded per group by the best such row."""

    __slots__ = ("budget", "cand", "cgroup", "cpos", "cur", "depth", "expected_changes", "extend", "key", "level",
                 "nbest", "ok", "score", "shape", "subset_key", "terms", "top", "ugroups")

    def __init__(self, shape: Shape, subset_key: int, cand: np.ndarray, ok: np.ndarray, score: np.ndarray,
                 depth: int, expected_changes: int, budget: int, terms: GroupTerms, nbest: np.ndarray,
                 extend: Callable[[int, int], tuple[list[bool], list[float]]] | None = None) -> None:
        self.shape = shape
        self.subset_key = subset_key
        self.cand: list[int] = cand.tolist()
        # per candidate, its levels computed so far (more are computed as in _Ladder)
        self.ok: list[list[bool]] = ok.T.tolist()
        self.score: list[list[float]] = score.T.tolist()
        self.depth = depth
        self.extend = extend
        self.level = [0] * len(cand)
        self.cur = np.where(ok[0], score[0], -np.inf)
        self.cgroup = terms.group[cand]
        self.terms = terms
        self.key = terms.key
        #: Per group, the best row score of a feasible node that is not a candidate (-inf: none).
        self.nbest = nbest
        self.expected_changes = expected_changes
        self.budget = budget
        #: The candidates' groups, and each candidate's position among them.
        ugroups, self.cpos = np.unique(self.cgroup, return_inverse=True)
        self.ugroups = ugroups.tolist()
        #: The best score of a non-candidate when the ladder was built (terms may only rise by
        #: ``terms.rise()`` since).
        self.top = float(np.max(nbest + terms.terms(), initial=-np.inf))

    def pick(self) -> int | None:
        if self.budget <= 0:
            return None
        terms = self.terms
        if terms.terms_of is not None:
            now = terms.terms_of(self.ugroups)
            total = self.cur + now[0] if len(now) == 1 else self.cur + np.array(now)[self.cpos]
        else:
            total = self.cur + terms.terms()[self.cgroup]
        c = int(total.argmax())  # candidates are in node order: ties go to the lowest index
        best = float(total[c])
        if best == -np.inf:
            return None
        # Cheap first: does it beat every non-candidate however their terms rose? (with a margin
        # far above rounding); else the exact check against every group's current term.
        clear = terms.rise is not None and best > self.top + terms.rise() + 1e-9 * (1.0 + abs(self.top))
        if not clear and not best > float(np.max(self.nbest + terms.terms(), initial=-np.inf)):
            return None
        self.budget -= 1
        nxt = _next_level(self, c)
        self.cur[c] = nxt[1] if nxt is not None and nxt[0] else -np.inf
        self.expected_changes += 1
        return self.cand[c]


@runtime_checkable
class GroupTermsOffer(Protocol):
    """A plugin capability (optional): its BatchNodeOrderFn score is a term of the node's group,
    and it says so per task, so that replicas may still share a ladder."""

    def group_terms(self, task: TaskInfo) -> GroupTerms | None:
        """The task's group terms; None when its score is not one."""
        ...

    def terms_key(self, task: TaskInfo) -> object:
        """``group_terms(task).key`` (None when there are none), cheaply."""
        ...


@runtime_checkable
class PlacementInputs(Protocol):
    """A plugin capability (optional): its predicates or scores read, beyond the nodes and a
    task's shape, session inputs that may change from one session to the next (a queue's
    node-group affinity, which time windows are open). Placement caches kept from an earlier
    session are dropped when any plugin's inputs differ from theirs."""

    def placement_inputs(self) -> object:
        """A comparable value standing for those inputs this session."""
        ...


@dataclass(eq=False)
class PlacementCache:
    """What placement computed for a node table under one configuration: static masks, per-shape
    rows and "fits nowhere" marks depend only on the table, the shape and the configuration, so a
    long-lived cluster state keeps them from session to session (rows are refreshed from the
    node change log like within a session). Kept on the node table (``NodeTable.placement_cache``)."""

    conf: SchedulerConf
    static: dict[Shape, _Static] = field(default_factory=dict)
    rows: dict[Shape, _Rows] = field(default_factory=dict)
    #: shape -> value of ``nodes.freed`` when it last fitted nowhere.
    nofit: dict[Shape, int] = field(default_factory=dict)
    #: The plugins' :class:`PlacementInputs` when these were computed.
    inputs: object = None


class Placer:
    """Feasibility, scores and the best node for tasks of one session."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.nodes = ssn.nodes
        self.filters = ssn.registered(PREDICATE)
        self.scorers = ssn.registered(NODE_ORDER)
        #: Each BatchNodeOrderFn with its plugin, if that plugin offers group terms.
        self.batch: list[tuple[BatchScorer, GroupTermsOffer | None]] = []
        for name, fn in ssn.registered(BATCH_NODE_ORDER):
            plugin = ssn.plugins.get(name)
            self.batch.append((fn, plugin if isinstance(plugin, GroupTermsOffer) else None))
        kept = ssn.nodes.placement_cache
        inputs = tuple((name, p.placement_inputs()) for name, p in ssn.plugins.items()
                       if isinstance(p, PlacementInputs)) or None
        if (kept is None or kept.conf is not ssn.conf or kept.inputs != inputs
                or len(ssn.nodes.changes) > MAX_CHANGE_LOG):
            ssn.nodes.clear_changes()
            kept = ssn.nodes.placement_cache = PlacementCache(ssn.conf, inputs=inputs)
        self._static = kept.static
        self._rows = kept.rows
        self._nofit = kept.nofit
        self._safe: dict[Shape, bool] = {}
        #: Per shape: the resources it requests (as a column of row indices) and its request there.
        self._asked: dict[Shape, tuple[np.ndarray, np.ndarray]] = {}
        self._explained: dict[tuple[Shape, int], tuple[int, str]] = {}
        #: (filter, shape) -> its static checks, for ``explain`` in a subset of nodes.
        self._explained_static: dict[tuple[int, Shape], list[tuple[str, np.ndarray]]] = {}
        self._ladder: _Ladder | _TermLadder | None = None
        #: The group terms offers of the batch scorers that answered (not None) in the last
        #: ``_batch_scores`` call.
        self._answered: list[GroupTermsOffer | None] = []

    # --- pieces -------------------------------------------------------------------------------
    def static(self, task: TaskInfo) -> _Static:
        st = self._static.get(task.shape)
        if st is None:
            n = len(self.nodes)
            mask = np.ones(n, dtype=bool)
            for _, f in self.filters:
                for _, ok in f.static_checks(task):
                    mask &= ok
            score = np.zeros(n)
            for _, s in self.scorers:
                part = s.static_score(task)
                if part is not None:
                    score = score + part
            req = task.init_resreq
            dims = ([d for d, _ in task.requested] if np.array_equal(req, task.resreq)
                    else np.flatnonzero(req > 0).tolist())
            st = self._static[task.shape] = _Static(mask, score, dims)
        return st

    def _dynamic(self, task: TaskInfo, view: NodeView) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(feasible, fits idle, node-order score) on a view; static parts included."""
        st = self.static(task)
        req = task.init_resreq
        dims = st.dims
        ok = st.mask[view.idx]
        if self.nodes.pipelined_tasks or self.nodes.releasing_tasks:
            fut = view.future_idle
            fits_idle = np.ones(len(view.idx), dtype=bool)
            for d in dims:
                ok = ok & (req[d] - fut[d] < EPS)
                fits_idle &= req[d] - view.idle[d] < EPS
        else:  # future idle is idle: one test serves both
            for d in dims:
                ok = ok & (req[d] - view.idle[d] < EPS)
            fits_idle = ok
        for _, f in self.filters:
            for _, passed in f.dynamic_checks(task, view):
                ok &= passed
        score = st.score[view.idx]
        for _, s in self.scorers:
            part = s.dynamic_score(task, view)
            if part is not None:
                score += part
        return ok, fits_idle & ok, score

    def _replica_safe(self, task: TaskInfo) -> bool:
        safe = self._safe.get(task.shape)
        if safe is None:
            safe = self._safe[task.shape] = all(f.replica_safe(task) for _, f in self.filters)
        return safe

    def _all_rows(self, task: TaskInfo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(feasible, fits idle, score) on every node, current; only changed rows are recomputed
        for shapes whose answer on a node depends on that node alone."""
        nodes = self.nodes
        if not self._replica_safe(task):
            return self._dynamic(task, NodeView.of(nodes))
        rows = self._rows.get(task.shape)
        changes = nodes.changes
        if rows is not None and rows.cursor != len(changes):
            dirty = nodes.changed_since(rows.cursor)
            if len(dirty) * 4 > len(nodes) * 3:  # gathering the changed rows costs less up to about there
                rows = None
            else:
                ok, fits_idle, score = self._dynamic(task, NodeView.of(nodes, dirty))
                rows.ok[dirty] = ok
                rows.fits_idle[dirty] = fits_idle
                rows.score[dirty] = score
                rows.cursor = len(changes)
        if rows is None:
            ok, fits_idle, score = self._dynamic(task, NodeView.of(nodes))
            rows = self._rows[task.shape] = _Rows(ok, fits_idle, score, len(changes))
        return rows.ok, rows.fits_idle, rows.score

    def _batch_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        total = None
        answered: list[GroupTermsOffer | None] = []
        self._answered = answered
        for fn, offer in self.batch:
            part = fn(task, idx)
            if part is not None:
                total = part if total is None else total + part
                answered.append(offer)
        return total

    def _group_terms(self, task: TaskInfo) -> GroupTerms | None:
        """The group terms of the one batch scorer that answered last, if it offers them."""
        if len(self._answered) != 1:
            return None
        offer = self._answered[0]
        return offer.group_terms(task) if offer is not None else None

    # --- public -------------------------------------------------------------------------------
    def node_scores(self, task: TaskInfo) -> np.ndarray:
        """NodeOrderFn sums on every node (no predicates, no batch normalization)."""
        _, _, score = self._dynamic(task, NodeView.of(self.nodes))
        return score

    def feasible_ignoring_resources(self, task: TaskInfo) -> np.ndarray:
        """Indices of nodes that only resources (and usage) keep ``task`` from: the nodes preempt
        and reclaim consider (Volcano's ``PredicateForPreemptAction`` drops only the nodes that
        fail in an unresolvable way — selectors, affinity, taints, cordons)."""
        return np.flatnonzero(self.static(task).mask)

    def preempt_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """Node-order score of ``task`` on nodes ``idx`` (NodeOrderFn + BatchNodeOrderFn sums)."""
        score = self.node_scores(task)[idx]
        batch = self._batch_scores(task, idx) if len(idx) else None
        out: np.ndarray = score if batch is None else score + batch
        return out

    def live_picks(self, task: TaskInfo, subset: np.ndarray | None = None) -> Callable[[], int | None] | None:
        """The ladder's ``pick`` when the last ladder built answers ``task`` now (its shape and nodes, and no
        change since but its own picks placed): each call the node ``best_node`` would give the next
        replica, once the one before is placed; None: no ladder answers."""
        lad = self._ladder
        if (lad is not None and lad.shape is task.shape and lad.subset_key == (id(subset) if subset is not None else 0)
                and lad.expected_changes == len(self.nodes.changes)
                and (type(lad) is _Ladder or self._reused_terms(lad, task))):
            return lad.pick
        return None

    def best_node(self, task: TaskInfo, subset: np.ndarray | None = None, depth: int = 1) -> Choice | None:
        """The node Volcano's allocate would pick; ``depth`` = replicas of this shape still to place."""
        key = id(subset) if subset is not None else 0
        pick = self.live_picks(task, subset)
        if pick is not None:
            node = pick()
            if node is not None:
                return Choice(node, True)
        self._ladder = None
        safe = self._replica_safe(task)
        if safe and self._nofit.get(task.shape) == self.nodes.freed and subset is None:
            return None  # nothing left since it last fitted nowhere: it still does not fit
        ok, fits_idle, score = self._all_rows(task)
        if subset is not None:
            ok, fits_idle, score = ok[subset], fits_idle[subset], score[subset]
        if not ok.any():
            if safe and subset is None:
                self._nofit[task.shape] = self.nodes.freed
            return None
        any_idle = fits_idle.any()
        cand = (fits_idle if any_idle else ok).nonzero()[0]  # flatnonzero without its wrappers (1-D): hot
        nodes = cand if subset is None else subset[cand]  # the candidates' node indices
        if len(cand) == 1:
            return Choice(int(nodes[0]), bool(fits_idle[cand[0]]))
        batch = self._batch_scores(task, nodes)
        rows = score[cand]
        cand_score = rows if batch is None else rows + batch
        if (depth > 1 and any_idle and safe
                and not self.nodes.releasing_tasks and not self.nodes.pipelined_tasks):
            terms = None if batch is None else self._group_terms(task)
            if batch is None or terms is not None:
                lad = self._build_ladder(task, nodes, cand_score, min(depth, MAX_LADDER_DEPTH), key,
                                         None if terms is None or terms.constant else terms, rows)
                node = lad.pick()
                if node is not None:
                    self._ladder = lad
                    return Choice(node, True)
        best = int(np.argmax(cand_score))
        return Choice(int(nodes[best]), bool(fits_idle[cand[best]]))

    def _reused_terms(self, lad: _Ladder | _TermLadder, task: TaskInfo) -> bool:
        """A term ladder continues for another task only if that task gets the same terms."""
        for _, offer in self.batch:
            key = offer.terms_key(task) if offer is not None else None
            if key is not None:
                return isinstance(lad, _TermLadder) and key == lad.key
        return False

    def _build_ladder(self, task: TaskInfo, idx: np.ndarray, score: np.ndarray, depth: int,
                      key: int, terms: GroupTerms | None = None,
                      rows: np.ndarray | None = None) -> _Ladder | _TermLadder:
        """``score``: full scores of the feasible nodes ``idx``; with ``terms``, ``rows`` holds
        their row scores (without the group terms)."""
        k = min(depth, len(idx))
        if k < len(idx):
            # top-k by score, ties to the lowest node index (idx is ascending); most often k nodes
            # tie at the best score (a fifth of the cost of the partition)
            at_best = (score == score.max()).nonzero()[0]
            if len(at_best) >= k:
                top = at_best[:k]
            else:
                thr = np.partition(score, len(score) - k)[len(score) - k]
                above = (score > thr).nonzero()[0]
                at = (score == thr).nonzero()[0][: k - len(above)]
                top = np.sort(np.concatenate([above, at]))
        else:
            top = np.arange(len(idx))
        if terms is not None and len(top) < len(idx):
            # Whole groups of the best nodes: their group terms rise together as replicas land,
            # so a node left out of such a group would soon stop the ladder (see _TermLadder).
            group = terms.group[idx]
            chosen = np.zeros(int(group.max()) + 1, dtype=bool)
            chosen[group[top]] = True
            mates = np.flatnonzero(chosen[group])
            if len(mates) <= GROUP_LADDER_NODES:
                top = mates
        all_idx, idx = idx, idx[top]
        budget = depth
        depth = self._most_replicas(task, idx, depth)
        c = len(idx)
        first = min(depth, FIRST_LEVELS)
        view = NodeView.ladder(self.nodes, idx, task.row, first)
        _, fits_idle, lscore = self._dynamic(task, view)

        def extend(node: int, levels: int) -> tuple[list[bool], list[float]]:
            # called from pick(), before the replica it answers is placed: the node's row holds
            # one replica less than the level asked for
            more = NodeView.ladder(self.nodes, np.array([node]), task.row, levels, start=1)
            _, more_ok, more_score = self._dynamic(task, more)
            return more_ok.tolist(), more_score.tolist()

        if terms is None:
            return _Ladder(task.shape, key, idx, fits_idle.reshape(first, c), lscore.reshape(first, c),
                           depth, len(self.nodes.changes), budget, extend)
        others = np.ones(len(all_idx), dtype=bool)
        others[top] = False
        nbest = np.full(int(terms.group.max()) + 1 if len(terms.group) else 0, -np.inf)
        np.maximum.at(nbest, terms.group[all_idx[others]], rows[others])  # type: ignore[index]
        return _TermLadder(task.shape, key, idx, fits_idle.reshape(first, c), lscore.reshape(first, c),
                           depth, len(self.nodes.changes), budget, terms, nbest, extend)

    def _most_replicas(self, task: TaskInfo, idx: np.ndarray, depth: int) -> int:
        """An upper bound on how many replicas any of the nodes ``idx`` can still take (by resources
        alone: whether a pod limit applies is the predicates' business); a ladder deeper than that
        would only hold rows that fit nowhere."""
        asked = self._asked.get(task.shape)
        if asked is None:
            dims = np.flatnonzero(task.resreq > 0)
            asked = self._asked[task.shape] = (dims[:, None], task.resreq[dims, None])
        rows, req = asked
        if not len(req) or not len(idx):
            return depth
        nodes = self.nodes
        idle = nodes.allocatable[rows, idx] - nodes.used[rows, idx]
        idle += EPS
        idle /= req
        np.floor(idle, out=idle)
        return int(min(depth, max(idle.min(axis=0).max(), 1)))

    def _static_checks(self, i: int, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        """Filter ``i``'s static checks of a shape, kept: topology allocate explains the same shapes
        in HyperNode after HyperNode (on every node, like ``static``)."""
        key = (i, task.shape)
        found = self._explained_static.get(key)
        if found is None:
            found = self._explained_static[key] = self.filters[i][1].static_checks(task)
        return found

    def explain(self, task: TaskInfo, subset: np.ndarray | None = None) -> str:
        """kube-scheduler style: ``0/5 nodes are unavailable: 3 Insufficient cpu, 2 ...``.

        Each node is charged to the first check it fails, in Volcano's order (resources first).
        """
        key = (task.shape, id(subset) if subset is not None else 0)
        cached = self._explained.get(key)
        if cached is not None and cached[0] == len(self.nodes.changes):
            return cached[1]
        view = NodeView.of(self.nodes, subset)
        n = len(view.idx)
        checks: list[tuple[str, np.ndarray]] = []
        req = task.init_resreq
        for d in np.flatnonzero(req > 0):
            checks.append((f"Insufficient {self.nodes.space.names[d]}", req[d] - view.future_idle[d] < EPS))
        for i, (_, f) in enumerate(self.filters):
            static = f.static_checks(task) if subset is None else self._static_checks(i, task)
            checks.extend((reason, passed[view.idx]) for reason, passed in static)
            checks.extend(f.dynamic_checks(task, view))
        first = np.full(n, -1)
        for i, (_, passed) in enumerate(checks):
            first[(first < 0) & ~passed] = i
        failed = first[first >= 0]
        if len(failed) < n:
            text = f"{n - len(failed)}/{n} nodes are available"
        else:
            counts: Counter[str] = Counter()
            for i, c in enumerate(np.bincount(failed, minlength=len(checks)).tolist()):
                if c:
                    counts[checks[i][0]] += c
            text = f"0/{n} nodes are unavailable: " + ", ".join(sorted(f"{c} {r}" for r, c in counts.items())) + "."
        self._explained[key] = (len(self.nodes.changes), text)
        return text
