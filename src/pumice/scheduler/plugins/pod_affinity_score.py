"""kube-scheduler's InterPodAffinity score, columnar, for nodeorder's ``podaffinity.weight``.

For an incoming pod, every pod already on a node adds to the node's topology domain (the nodes sharing
the node's value of a term's ``topologyKey``): the incoming pod's preferred podAffinity terms that match
it add their weight, its preferred podAntiAffinity terms take it away; the existing pod's own required
podAffinity terms that match the incoming pod add ``hardPodAffinityWeight`` (1), its preferred terms add
or take away their weight. A node's raw score is the sum over its domains; the scores of the candidate
nodes are then scaled to 0-100 between their minimum and maximum (all 0 when they are equal).

No Python loop over nodes per pod: the placed pods are kept as per-node counts, one array per group of
pods that a term can tell apart (the pods a selector matches; the pods that share one set of terms),
updated as tasks are placed and removed; a domain's sum is one ``bincount`` over the nodes' topology
codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pumice.api.labels import label_selector_or_nothing
from pumice.scheduler.model import MemoSlot, NodeTable, TaskInfo

MAX_NODE_SCORE = 100
#: kube-scheduler's default ``InterPodAffinityArgs.hardPodAffinityWeight`` (Volcano keeps it).
HARD_POD_AFFINITY_WEIGHT = 1

#: Per topology key: each node's code of its value (-1 without the label) and the number of values.
TopologyCodes = dict[str, tuple[np.ndarray, int]]
_TOPOLOGY_CODES: MemoSlot[TopologyCodes] = MemoSlot("nodeorder pod affinity topology codes")


def _affinity(pod: dict[str, Any]) -> dict[str, Any]:
    return (pod.get("spec") or {}).get("affinity") or {}


def _labels(pod: dict[str, Any]) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _namespaces(term: dict[str, Any], owner_namespace: str) -> frozenset[str] | None:
    """The namespaces a term looks at (its own list, else its pod's); None: all (``namespaceSelector: {}``)."""
    if term.get("namespaceSelector") == {}:
        return None
    return frozenset(term.get("namespaces") or [owner_namespace])


def _matches(term: dict[str, Any], owner_namespace: str, namespace: str, labels: dict[str, str]) -> bool:
    namespaces = _namespaces(term, owner_namespace)
    if namespaces is not None and namespace not in namespaces:
        return False
    return label_selector_or_nothing(term.get("labelSelector")).matches(labels)


#: (weight, multiplier, term) of a pod's terms that score: required podAffinity (hard weight, +1),
#: preferred podAffinity (+1) and preferred podAntiAffinity (-1).
Scored = list[tuple[int, int, dict[str, Any]]]


def preferred_terms(pod: dict[str, Any]) -> Scored:
    """The incoming pod's preferred podAffinity (+1) and podAntiAffinity (-1) terms."""
    aff = _affinity(pod)
    out: Scored = []
    for kind, sign in (("podAffinity", 1), ("podAntiAffinity", -1)):
        for weighted in (aff.get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            term = weighted.get("podAffinityTerm") or {}
            out.append((int(weighted.get("weight") or 0), sign, term))
    return out


def existing_terms(pod: dict[str, Any]) -> Scored:
    """An existing pod's terms that score towards incoming pods (required affinity, preferred both ways)."""
    aff = _affinity(pod)
    required = (aff.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
    out: Scored = [(HARD_POD_AFFINITY_WEIGHT, 1, term) for term in required]
    return out + preferred_terms(pod)


@dataclass
class _Group:
    """Placed pods sharing one set of scoring terms (and namespace): their terms and count per node."""

    namespace: str
    terms: Scored
    counts: np.ndarray


def has_pod_affinity(pod: dict[str, Any]) -> bool:
    aff = _affinity(pod)
    return bool(aff.get("podAffinity") or aff.get("podAntiAffinity"))


class PodAffinityScores:
    """The raw InterPodAffinity scores of a session, kept current by the session's event handlers
    (``moved``): a pod counts on its node from its placement to its removal, as in Volcano's node infos
    (an evicted pod stops counting at once)."""

    def __init__(self, nodes: NodeTable, waiting: list[TaskInfo]) -> None:
        self.nodes = nodes
        self.codes = nodes.memo.get(_TOPOLOGY_CODES, dict)
        #: The pods counted, by uid: (node, task).
        self.where: dict[str, tuple[int, TaskInfo]] = {
            t.uid: (j, t) for j, tasks in enumerate(nodes.tasks) for t in tasks.values()}
        #: selector signature -> (term, owner namespace, per-node count of counted pods it matches)
        self.selected: dict[str, tuple[dict[str, Any], str, np.ndarray]] = {}
        #: terms signature -> the counted pods with those terms
        self.groups: dict[str, _Group] = {}
        shapes = {t.shape: t for t in waiting}
        #: Whether any pod, placed or waiting, has pod (anti-)affinity: nothing scores otherwise.
        self.active = (any(has_pod_affinity(t.pod) for t in shapes.values())
                       or any(has_pod_affinity(t.pod) for _, t in self.where.values()))
        if self.active:
            for j, t in self.where.values():
                self._add_group(t, j, 1)

    def _add_group(self, task: TaskInfo, node: int, delta: int) -> None:
        terms = existing_terms(task.pod)
        if not terms:
            return
        key = repr((task.namespace, terms))
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _Group(task.namespace, terms, np.zeros(len(self.nodes)))
        group.counts[node] += delta

    def on_allocate(self, task: TaskInfo) -> None:
        if task.node < 0 or task.uid in self.where:
            return
        self.where[task.uid] = (task.node, task)
        self._moved(task, task.node, 1)

    def on_deallocate(self, task: TaskInfo) -> None:
        got = self.where.pop(task.uid, None)
        if got is not None:
            self._moved(task, got[0], -1)

    def _moved(self, task: TaskInfo, node: int, delta: int) -> None:
        self._add_group(task, node, delta)
        if self.selected:
            labels = _labels(task.pod)
            for term, owner, counts in self.selected.values():
                if _matches(term, owner, task.namespace, labels):
                    counts[node] += delta

    def _selected(self, term: dict[str, Any], owner: str) -> np.ndarray:
        """Per node, the counted pods ``term`` (of a pod in namespace ``owner``) matches."""
        namespaces = _namespaces(term, owner)
        key = repr((None if namespaces is None else sorted(namespaces), term.get("labelSelector")))
        got = self.selected.get(key)
        if got is None:
            counts = np.zeros(len(self.nodes))
            for j, t in self.where.values():
                if _matches(term, owner, t.namespace, _labels(t.pod)):
                    counts[j] += 1
            got = self.selected[key] = (term, owner, counts)
        return got[2]

    # --- scores ---------------------------------------------------------------------------------
    def _topology(self, key: str) -> tuple[np.ndarray, int]:
        got = self.codes.get(key)
        if got is None:
            values: dict[str, int] = {}
            codes = np.array([values.setdefault(v, len(values)) if (v := labels.get(key)) is not None else -1
                              for labels in self.nodes.labels], dtype=np.int64)
            got = self.codes[key] = (codes, len(values))
        return got

    def _spread(self, raw: np.ndarray, key: str, weight: float, counts: np.ndarray) -> bool:
        """Add ``weight`` x (the pods counted in each node's domain of ``key``) to ``raw``."""
        codes, size = self._topology(key)
        has = codes >= 0
        if size == 0 or not counts[has].any():
            return False
        per_value = np.bincount(codes[has], weights=counts[has], minlength=size)
        raw[has] += weight * per_value[codes[has]]
        return True

    def raw(self, task: TaskInfo) -> np.ndarray | None:
        """The task's raw score on every node, or None when no pod and no term gives it one."""
        if not self.active:
            return None
        own = preferred_terms(task.pod)
        if not own and not self.groups:
            return None
        raw = np.zeros(len(self.nodes))
        scored = False
        for weight, sign, term in own:
            counts = self._selected(term, task.namespace)
            scored |= self._spread(raw, term.get("topologyKey") or "", float(sign * weight), counts)
        if self.groups:
            labels = _labels(task.pod)
            for group in self.groups.values():
                if not group.counts.any():
                    continue
                for weight, sign, term in group.terms:
                    if _matches(term, group.namespace, task.namespace, labels):
                        scored |= self._spread(raw, term.get("topologyKey") or "", float(sign * weight),
                                               group.counts)
        return raw if scored or own else None


def normalize_min_max(raw: np.ndarray) -> np.ndarray:
    """InterPodAffinity's NormalizeScore: 100 x (score - min) / (max - min), truncated; 0 when all equal."""
    if not len(raw):
        return raw
    low, high = raw.min(), raw.max()
    if high == low:
        return np.zeros(len(raw))
    out: np.ndarray = np.trunc(MAX_NODE_SCORE * ((raw - low) / (high - low)))
    return out
