"""Choosing a node for a task: predicates and node order, evaluated column-wise.

Volcano filters and scores every node for every task. Here a task's *shape* (the static part of
its constraints) is evaluated once per session, and replicas of one shape placed one after the
other share a *ladder*: the scores their candidate nodes would have after 0, 1, 2, ... more
replicas, computed in one vectorized call. Choosing the next replica's node is then an argmax over
a few dozen numbers; the decisions are exactly those of the per-task evaluation (see ``_Ladder``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import TaskInfo, TaskStatus
from pumice.scheduler.resources import EPS

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session

#: Deepest ladder built at once; longer runs of replicas rebuild it when it runs out.
MAX_LADDER_DEPTH = 64


@dataclass(slots=True)
class Choice:
    node: int
    #: True: the task fits the node's idle resources (allocate); False: only its future idle (pipeline).
    fits_idle: bool


@dataclass(slots=True)
class _Static:
    mask: np.ndarray
    score: np.ndarray


class _Ladder:
    """Scores of candidate nodes for the next replicas of one shape.

    Correctness: while only this run places pods, a node's row changes only when it is picked, so
    the next pick is the best head among the candidates; with candidates = the top ``depth``
    feasible nodes by (score, -index), any of the next ``depth`` picks lies among them (an untouched
    candidate always outranks every non-candidate). When every candidate is exhausted the ladder is
    rebuilt.
    """

    __slots__ = ("cand", "depth", "expected_changes", "level", "ok", "score", "shape", "subset_key")

    def __init__(self, shape: tuple, subset_key: int, cand: np.ndarray, ok: np.ndarray, score: np.ndarray,
                 depth: int, expected_changes: int) -> None:
        self.shape = shape
        self.subset_key = subset_key
        self.cand = cand
        self.ok = ok  # depth x C
        self.score = score  # depth x C
        self.depth = depth
        self.level = np.zeros(len(cand), dtype=np.int64)
        self.expected_changes = expected_changes

    def pick(self) -> int | None:
        lv = self.level
        live = lv < self.depth
        if not live.any():
            return None
        cols = np.arange(len(self.cand))
        rows = np.minimum(lv, self.depth - 1)
        ok = self.ok[rows, cols] & live
        if not ok.any():
            return None
        cur = np.where(ok, self.score[rows, cols], -np.inf)
        c = int(np.argmax(cur))  # candidates are in node order: ties go to the lowest index
        self.level[c] += 1
        self.expected_changes += 1
        return int(self.cand[c])


class Placer:
    """Feasibility, scores and the best node for tasks of one session."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.nodes = ssn.nodes
        self.filters = ssn.node_filters()
        self.scorers = ssn.node_scorers()
        self.batch = ssn.batch_scorers()
        self._static: dict[tuple, _Static] = {}
        self._ladder: _Ladder | None = None

    # --- pieces -------------------------------------------------------------------------------
    def static(self, task: TaskInfo) -> _Static:
        st = self._static.get(task.shape)
        if st is None:
            n = len(self.nodes)
            mask = np.ones(n, dtype=bool)
            for _, f in self.filters:
                for _, ok in f.static(task):
                    mask &= ok
            score = np.zeros(n)
            for _, s in self.scorers:
                part = s.static(task)
                if part is not None:
                    score = score + part
            st = self._static[task.shape] = _Static(mask, score)
        return st

    def _dynamic(self, task: TaskInfo, view: NodeView) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(feasible, fits idle, node-order score) on a view; static parts included."""
        st = self.static(task)
        req = task.init_resreq
        dims = np.flatnonzero(req > 0)
        fut = view.future_idle
        ok = st.mask[view.idx].copy()
        fits_idle = np.ones(len(view.idx), dtype=bool)
        for d in dims:
            ok &= req[d] - fut[d] < EPS
            fits_idle &= req[d] - view.idle[d] < EPS
        for _, f in self.filters:
            for _, passed in f.dynamic(task, view):
                ok &= passed
        score = st.score[view.idx].copy()
        for _, s in self.scorers:
            part = s.dynamic(task, view)
            if part is not None:
                score += part
        return ok, fits_idle & ok, score

    def _replica_safe(self, task: TaskInfo) -> bool:
        return all(f.replica_safe(task) for _, f in self.filters)

    def _batch_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        total = None
        for _, fn in self.batch:
            part = fn(task, idx)
            if part is not None:
                total = part if total is None else total + part
        return total

    # --- public -------------------------------------------------------------------------------
    def node_scores(self, task: TaskInfo) -> np.ndarray:
        """NodeOrderFn sums on every node (no predicates, no batch normalization)."""
        _, _, score = self._dynamic(task, NodeView.of(self.nodes))
        return score

    def feasible(self, task: TaskInfo, subset: np.ndarray | None = None) -> np.ndarray:
        """Indices of nodes that pass resources and every predicate."""
        view = NodeView.of(self.nodes, subset)
        ok, _, _ = self._dynamic(task, view)
        return view.idx[ok]

    def best_node(self, task: TaskInfo, subset: np.ndarray | None = None, depth: int = 1) -> Choice | None:
        """The node Volcano's allocate would pick; ``depth`` = replicas of this shape still to place."""
        key = id(subset) if subset is not None else 0
        lad = self._ladder
        if (lad is not None and lad.shape == task.shape and lad.subset_key == key
                and lad.expected_changes == len(self.nodes.changes)):
            node = lad.pick()
            if node is not None:
                return Choice(node, True)
        self._ladder = None
        view = NodeView.of(self.nodes, subset)
        ok, fits_idle, score = self._dynamic(task, view)
        if not ok.any():
            return None
        group = fits_idle if fits_idle.any() else ok
        cand = np.flatnonzero(group)
        if len(cand) == 1:
            return Choice(int(view.idx[cand[0]]), bool(fits_idle[cand[0]]))
        batch = self._batch_scores(task, view.idx[cand])
        cand_score = score[cand] if batch is None else score[cand] + batch
        if (batch is None and depth > 1 and fits_idle.any() and self._replica_safe(task)
                and not self.nodes.releasing.any() and not self.nodes.pipelined.any()):
            lad = self._build_ladder(task, view.idx[cand], cand_score, min(depth, MAX_LADDER_DEPTH), key)
            if lad is not None:
                node = lad.pick()
                if node is not None:
                    self._ladder = lad
                    return Choice(node, True)
        best = int(np.argmax(cand_score))
        c = cand[best]
        return Choice(int(view.idx[c]), bool(fits_idle[c]))

    def _build_ladder(self, task: TaskInfo, idx: np.ndarray, score: np.ndarray, depth: int,
                      key: int) -> _Ladder | None:
        k = min(depth, len(idx))
        if k < len(idx):
            # top-k by score, ties to the lowest node index (idx is ascending)
            thr = np.partition(score, len(score) - k)[len(score) - k]
            above = np.flatnonzero(score > thr)
            at = np.flatnonzero(score == thr)[: k - len(above)]
            top = np.sort(np.concatenate([above, at]))
            idx = idx[top]
        view = NodeView.ladder(self.nodes, idx, task.resreq, task.nonzero, depth)
        _, fits_idle, lscore = self._dynamic(task, view)
        c = len(idx)
        return _Ladder(task.shape, key, idx, fits_idle.reshape(depth, c), lscore.reshape(depth, c),
                       depth, len(self.nodes.changes))

    def explain(self, task: TaskInfo, subset: np.ndarray | None = None) -> str:
        """kube-scheduler style: ``0/5 nodes are unavailable: 3 Insufficient cpu, 2 ...``."""
        view = NodeView.of(self.nodes, subset)
        n = len(view.idx)
        reasons = np.full(n, "", dtype=object)
        open_ = np.ones(n, dtype=bool)

        def apply(reason: str, passed: np.ndarray) -> None:
            fail = open_ & ~passed
            reasons[fail] = reason
            open_[fail] = False

        req = task.init_resreq
        for d in np.flatnonzero(req > 0):
            apply(f"Insufficient {self.nodes.space.names[d]}", req[d] - view.future_idle[d] < EPS)
        for _, f in self.filters:
            for reason, passed in f.static(task):
                apply(reason, passed[view.idx])
            for reason, passed in f.dynamic(task, view):
                apply(reason, passed)
        counts = Counter(r for r in reasons if r)
        if not counts:
            return f"{n}/{n} nodes are available"
        hist = ", ".join(sorted(f"{c} {r}" for r, c in counts.items()))
        return f"0/{n} nodes are unavailable: {hist}."


def pending_status(task: TaskInfo) -> bool:
    return task.status == TaskStatus.PENDING
