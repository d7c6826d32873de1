"""nodeorder: kube-scheduler's scores with Volcano's weights — least/most requested, balanced
allocation (per node), taint toleration, preferred node affinity and inter-pod affinity (normalized
over candidates)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pumice.api.arguments import Arguments
from pumice.api.labels import node_selector_term
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import BATCH_NODE_ORDER, NODE_ORDER
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import MemoSlot, Shape, TaskInfo
from pumice.scheduler.plugins.matching import untolerated
from pumice.scheduler.plugins.pod_affinity_score import PodAffinityScores, normalize_min_max

MAX_NODE_SCORE = 100
DEFAULT_WEIGHTS = {
    "leastrequested.weight": 1,
    "mostrequested.weight": 0,
    "nodeaffinity.weight": 2,
    "podaffinity.weight": 2,
    "balancedresource.weight": 1,
    "tainttoleration.weight": 3,
    "imagelocality.weight": 1,
    "podtopologyspread.weight": 2,
}
BALANCED_SCALARS = ("nvidia.com/gpu",)


#: Below this allocatable, ``floor(a / b)`` of whole numbers ``0 <= a <= 100 b`` is their exact integer
#: quotient (the division's rounding error, at most 100 x 2^-53, stays under the 1 / b a fraction is from
#: the next integer), and ten times faster than numpy's floor_divide of floats.
_EXACT_QUOTIENT = 2.0**53 / (2 * MAX_NODE_SCORE)


def _resource_scores(requested: np.ndarray, alloc: np.ndarray, most: bool, exact: bool = False) -> np.ndarray:
    """kube-scheduler's Least/MostAllocated over resources (rows): per resource
    ``(alloc - req) * 100 // alloc`` (0 when over) or ``min(req, alloc) * 100 // alloc``, then the
    integer average over the resources whose allocatable is not zero. Requests and allocatable are
    whole numbers (milli-cores, bytes: ``resources.quantity_in_units``). ``exact``: the caller knows that
    ``alloc`` is two rows, none zero, all below :data:`_EXACT_QUOTIENT` (the node table's, checked once)."""
    if exact or alloc.all():  # the usual case: no zero allocatable to leave out
        if exact or (len(alloc) == 2 and alloc.max(initial=0.0) < _EXACT_QUOTIENT):
            # in place: a ladder and a refresh of changed rows call this twice per gang
            per = np.minimum(requested, alloc) if most else alloc - requested
            per *= MAX_NODE_SCORE
            per /= alloc
            np.floor(per, out=per)
            if not most:
                per[requested > alloc] = 0
            exact_mean: np.ndarray = per[0] + per[1]
            exact_mean *= 0.5
            np.floor(exact_mean, out=exact_mean)
            return exact_mean
        if most:
            per = np.floor_divide(np.minimum(requested, alloc) * MAX_NODE_SCORE, alloc)
        else:
            per = np.floor_divide((alloc - requested) * MAX_NODE_SCORE, alloc)
            per[requested > alloc] = 0
        out: np.ndarray = np.floor_divide(per.sum(axis=0), len(alloc))
        return out
    has = alloc != 0
    safe = np.where(has, alloc, 1)
    if most:
        per = np.floor_divide(np.minimum(requested, alloc) * MAX_NODE_SCORE, safe)
    else:
        per = np.where(requested > alloc, 0, np.floor_divide((alloc - requested) * MAX_NODE_SCORE, safe))
    den = has.sum(axis=0)
    return np.where(den == 0, 0, np.floor_divide((per * has).sum(axis=0), np.maximum(den, 1)))


def balanced_present(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
    """BalancedAllocation, ``100 x (1 - std of the requested fractions)``, on nodes (columns) that all have
    some of every resource (rows): :func:`balanced_any` with nothing to leave out, the same bits for less work."""
    frac = req / alloc
    np.minimum(frac, 1.0, out=frac)
    if len(frac) == 2:  # the std of two fractions is half their gap (in place: twice per gang)
        two: np.ndarray = frac[0] - frac[1]
        np.abs(two, out=two)
        two /= 2
        np.subtract(1, two, out=two)
        two *= MAX_NODE_SCORE
        np.trunc(two, out=two)
        return two
    mean = frac.sum(axis=0) / len(frac)
    std = np.sqrt(((frac - mean) ** 2).sum(axis=0) / len(frac))
    scores: np.ndarray = np.trunc((1 - std) * MAX_NODE_SCORE)
    return scores


def balanced_any(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
    """BalancedAllocation over the resources each node has (a resource with no allocatable is left out)."""
    has = alloc != 0
    frac = np.where(has, np.minimum(req / np.where(has, alloc, 1), 1.0), 0.0)
    count = has.sum(axis=0)
    safe = np.maximum(count, 1)
    mean = frac.sum(axis=0) / safe  # frac is 0 where the node has none of the resource
    var = (((frac - mean) ** 2) * has).sum(axis=0) / safe
    # two resources present: the std is half their gap (max - min over the present ones)
    gap = np.where(has, frac, -np.inf).max(axis=0) - np.where(has, frac, np.inf).min(axis=0)
    std = np.where(count == 2, gap / 2, np.sqrt(var))
    std = np.where(count < 2, 0.0, std)
    scores: np.ndarray = np.trunc((1 - std) * MAX_NODE_SCORE)
    return scores


#: Raw preference scores per shape: (taint counts, preferred node affinity), None where nothing
#: differs. They depend on the nodes' taints and labels and the shape only: kept for the node
#: table's life, one slot per (taint toleration weighted, node affinity weighted).
RawPreferences = dict[Shape, tuple[np.ndarray | None, np.ndarray | None]]
_RAW_PREFERENCES: dict[tuple[bool, bool], MemoSlot[RawPreferences]] = {
    (taints, affinity): MemoSlot(f"nodeorder raw preferences (taints: {taints}, affinity: {affinity})")
    for taints in (False, True) for affinity in (False, True)
}


class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        #: Volcano's weights by argument name (negative ones kept, as Volcano keeps them).
        self.weights = {key: arguments.get_int(key, default) for key, default in DEFAULT_WEIGHTS.items()}
        self.least_w = self.weights["leastrequested.weight"]
        self.most_w = self.weights["mostrequested.weight"]
        self.balanced_w = self.weights["balancedresource.weight"]
        self.taint_w = self.weights["tainttoleration.weight"]
        self.affinity_w = self.weights["nodeaffinity.weight"]
        self.pod_affinity_w = self.weights["podaffinity.weight"]

    def on_session_open(self, ssn: Session) -> None:
        self.nodes = ssn.nodes
        self.balanced_scalars = [ssn.space.index[n] for n in BALANCED_SCALARS if n in ssn.space.index]
        # cpu and memory allow the exact quotient on every node (fixed with the node table: checked once, not
        # on every call's columns)
        held, alloc = ssn.nodes.held_by_all, ssn.nodes.allocatable
        self.exact = bool(len(held) >= 2 and held[0] and held[1] and alloc[:2].max(initial=0.0) < _EXACT_QUOTIENT)
        #: Per shape: (non-zero cpu/memory request as a column, balanced resources, their request column,
        #: whether every node has some of each balanced resource).
        self.shapes: dict[Shape, tuple[np.ndarray, list[int], np.ndarray, bool]] = {}
        self.raw = ssn.nodes.memo.get(_RAW_PREFERENCES[(bool(self.taint_w), bool(self.affinity_w))], dict)
        #: InterPodAffinity's raw scores, kept as pods are placed (None: weight 0 or no pod affinity anywhere).
        self.pod_affinity: PodAffinityScores | None = None
        if self.pod_affinity_w:
            scores = PodAffinityScores(ssn.nodes, [t for job in ssn.waiting for t in job.tasks.values()])
            if scores.active:
                self.pod_affinity = scores
                ssn.add_event_handler(scores.on_allocate, scores.on_deallocate)
        ssn.add(NODE_ORDER, self.name, self)
        ssn.add(BATCH_NODE_ORDER, self.name, self.preference_scores)

    # --- NodeOrderFn: least/most requested and balanced allocation, per node -------------------
    def static_score(self, task: TaskInfo) -> np.ndarray | None:
        return None  # image locality: simulated nodes hold no images

    def _per_shape(self, task: TaskInfo) -> tuple[np.ndarray, list[int], np.ndarray, bool]:
        got = self.shapes.get(task.shape)
        if got is None:
            dims = [0, 1] + [d for d in self.balanced_scalars if task.resreq[d] > 0]
            got = self.shapes[task.shape] = (np.asarray(task.nonzero)[:, None], dims, task.resreq[dims, None],
                                             all(self.nodes.held_by_all[d] for d in dims))
        return got

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        nonzero, dims, dims_req, everywhere = self._per_shape(task)
        total = None
        if self.least_w or self.most_w:
            requested = view.nonzero_used + nonzero
            alloc = view.allocatable[:2]
            if self.least_w:
                total = self.least_w * _resource_scores(requested, alloc, most=False, exact=self.exact)
            if self.most_w:
                most = self.most_w * _resource_scores(requested, alloc, most=True, exact=self.exact)
                total = most if total is None else total + most
        if self.balanced_w:
            balanced = self.balanced_w * self._balanced(view, dims, dims_req, everywhere)
            total = balanced if total is None else total + balanced
        return total if total is not None else np.zeros(len(view.idx))

    def _balanced(self, view: NodeView, dims: list[int], dims_req: np.ndarray, everywhere: bool) -> np.ndarray:
        """BalancedAllocation: 100 x (1 - std of the requested fractions), resources with allocatable.
        ``everywhere``: every node has some of each resource (the usual case: nothing to leave out)."""
        if len(dims) == 2:
            alloc = view.allocatable[:2]
            req = view.used[:2] + dims_req
        else:
            alloc = view.allocatable[dims]
            req = view.used[dims] + dims_req
        return balanced_present(alloc, req) if everywhere or alloc.all() else balanced_any(alloc, req)

    # --- BatchNodeOrderFn: taint toleration, preferred node affinity, normalized over candidates --
    def _raw_scores(self, task: TaskInfo) -> tuple[np.ndarray | None, np.ndarray | None]:
        cached = self.raw.get(task.shape)
        if cached is not None:
            return cached
        spec: dict[str, Any] = task.pod.get("spec") or {}
        nodes = self.nodes
        taints = None
        if self.taint_w and nodes.any_taints:
            tolerations = [t for t in spec.get("tolerations") or []
                           if (t.get("effect") or "") in ("", "PreferNoSchedule")]
            counts = np.array([len(untolerated(ts, tolerations, ("PreferNoSchedule",))) if ts else 0
                               for ts in nodes.taints], dtype=float)
            taints = counts if counts.any() else None
        affinity = None
        preferred = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                     .get("preferredDuringSchedulingIgnoredDuringExecution") or [])
        if self.affinity_w and preferred:
            raw = np.zeros(len(nodes))
            for term in preferred:
                w = float(term.get("weight") or 0)
                pref = node_selector_term(term.get("preference"))
                raw += w * np.array([pref.matches(lb, nm)
                                     for lb, nm in zip(nodes.labels, nodes.names, strict=True)])
            affinity = raw if raw.any() else None
        self.raw[task.shape] = (taints, affinity)
        return taints, affinity

    def preference_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        taints, affinity = self._raw_scores(task)
        pods = self.pod_affinity.raw(task) if self.pod_affinity is not None else None
        if taints is None and affinity is None and pods is None:
            return None
        total = np.zeros(len(idx))
        if pods is not None:
            total += self.pod_affinity_w * normalize_min_max(pods[idx])
        if taints is not None:
            total += self.taint_w * normalize(taints[idx], reverse=True)
        if affinity is not None:
            total += self.affinity_w * normalize(affinity[idx], reverse=False)
        return total


def normalize(raw: np.ndarray, reverse: bool) -> np.ndarray:
    """kube-scheduler's DefaultNormalizeScore (integer)."""
    top = raw.max() if len(raw) else 0
    if top == 0:
        return np.full(len(raw), float(MAX_NODE_SCORE if reverse else 0))
    score = np.floor_divide(MAX_NODE_SCORE * raw, top)
    out: np.ndarray = MAX_NODE_SCORE - score if reverse else score
    return out
