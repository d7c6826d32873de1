"""predicates: kube-scheduler's filters — unschedulable nodes, node selector and affinity, taints,
host ports, inter-pod affinity and anti-affinity, and the node's pod limit."""

from __future__ import annotations

from typing import Any

import numpy as np

from pumice.api.arguments import Arguments
from pumice.api.labels import label_selector_or_nothing, node_selector_term
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import PREDICATE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import NodeTable, Shape, TaskInfo
from pumice.scheduler.plugins.matching import tolerates, untolerated

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_POD_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_TOO_MANY_PODS = "Too many pods"


def _spec(task: TaskInfo) -> dict[str, Any]:
    return task.pod.get("spec") or {}


def _labels(task: TaskInfo) -> dict[str, str]:
    return (task.pod.get("metadata") or {}).get("labels") or {}


def required_terms(task: TaskInfo, kind: str) -> list[dict[str, Any]]:
    aff = (_spec(task).get("affinity") or {}).get(kind) or {}
    return aff.get("requiredDuringSchedulingIgnoredDuringExecution") or []


def host_ports(task: TaskInfo) -> set[tuple[str, int, str]]:
    ports = set()
    for c in _spec(task).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                ports.add((p.get("hostIP") or "0.0.0.0", int(p["hostPort"]), p.get("protocol") or "TCP"))
    return ports


def _term_namespaces(term: dict[str, Any], owner: TaskInfo) -> set[str] | None:
    """Namespaces a pod-affinity term looks at; None = all of them."""
    if term.get("namespaceSelector") == {}:
        return None
    return set(term.get("namespaces") or [owner.namespace])


def _term_matches(term: dict[str, Any], owner: TaskInfo, other: TaskInfo) -> bool:
    namespaces = _term_namespaces(term, owner)
    if namespaces is not None and other.namespace not in namespaces:
        return False
    return label_selector_or_nothing(term.get("labelSelector")).matches(_labels(other))


class PredicatesPlugin(Plugin):
    name = "predicates"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.node_affinity = arguments.get_bool("predicate.NodeAffinityEnable", True)
        self.node_ports = arguments.get_bool("predicate.NodePortsEnable", True)
        self.taint_toleration = arguments.get_bool("predicate.TaintTolerationEnable", True)
        self.pod_affinity = arguments.get_bool("predicate.PodAffinityEnable", True)

    def on_session_open(self, ssn: Session) -> None:
        self.nodes: NodeTable = ssn.nodes
        #: Node selector and required node affinity -> passing mask.
        self.affinity_masks: dict[str, np.ndarray] = {}
        #: Per shape: (host ports, has required pod affinity terms).
        self.shape_needs: dict[Shape, tuple[set[tuple[str, int, str]], bool]] = {}
        # placed pods are counted by the node table; the others that may be placed are the waiting jobs'
        self.any_anti_affinity = self.nodes.anti_affinity_tasks > 0 or any(
            t.anti_affinity for job in ssn.waiting for t in job.tasks.values()
        )
        ssn.add(PREDICATE, self.name, self)

    # --- static ---------------------------------------------------------------------------------
    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        nodes = self.nodes
        n = len(nodes)
        spec = _spec(task)
        tolerations = spec.get("tolerations") or []
        checks: list[tuple[str, np.ndarray]] = []
        if nodes.unschedulable.any() and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations):
            checks.append((REASON_UNSCHEDULABLE, ~nodes.unschedulable))
        if self.node_affinity:
            mask = self._node_affinity(spec)
            if mask is not None:
                checks.append((REASON_AFFINITY, mask))
        if self.taint_toleration:
            by_reason: dict[str, np.ndarray] = {}
            for j, taints in enumerate(nodes.taints):
                if not taints:
                    continue
                bad = untolerated(taints, tolerations, ("NoSchedule", "NoExecute"))
                if bad:
                    reason = f"node(s) had untolerated taint {{{bad[0].get('key')}: {bad[0].get('value', '')}}}"
                    by_reason.setdefault(reason, np.ones(n, dtype=bool))[j] = False
            checks.extend(by_reason.items())
        return checks

    def _node_affinity(self, spec: dict[str, Any]) -> np.ndarray | None:
        selector = spec.get("nodeSelector") or {}
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = required.get("nodeSelectorTerms")
        if not selector and terms is None:
            return None
        key = repr((sorted(selector.items()), terms))
        mask = self.affinity_masks.get(key)
        if mask is None:
            nodes = self.nodes
            compiled = None if terms is None else [node_selector_term(t) for t in terms]
            mask = np.array([
                all(labels.get(k) == v for k, v in selector.items())
                and (compiled is None or any(t.matches(labels, name) for t in compiled))
                for labels, name in zip(nodes.labels, nodes.names, strict=True)
            ], dtype=bool)
            self.affinity_masks[key] = mask
        return mask

    # --- dynamic --------------------------------------------------------------------------------
    def _needs(self, task: TaskInfo) -> tuple[set[tuple[str, int, str]], bool]:
        """(host ports, has required pod affinity terms) of a shape: the same for its replicas."""
        needs = self.shape_needs.get(task.shape)
        if needs is None:
            needs = self.shape_needs[task.shape] = (
                host_ports(task),
                bool(required_terms(task, "podAffinity") or required_terms(task, "podAntiAffinity")),
            )
        return needs

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        checks = [(REASON_TOO_MANY_PODS, view.task_count < view.max_tasks)]
        wanted, affinity = self._needs(task)
        if self.node_ports and wanted:
            checks.append((REASON_PORTS, np.array([
                not any(host_ports(t) & wanted for t in self.nodes.tasks[j].values() if t is not task)
                for j in view.idx.tolist()
            ], dtype=bool)))
        if self.pod_affinity and (self.any_anti_affinity or affinity):
            checks.extend(self._pod_affinity(task, view))
        return checks

    def _placed(self) -> list[tuple[int, TaskInfo]]:
        return [(j, t) for j, tasks in enumerate(self.nodes.tasks) for t in tasks.values()]

    def _pod_affinity(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        labels = self.nodes.labels
        placed = [(j, t) for j, t in self._placed() if t is not task]
        idx = view.idx.tolist()
        checks = []
        aff = required_terms(task, "podAffinity")
        if aff:
            ok = np.ones(len(idx), dtype=bool)
            for term in aff:
                key = term.get("topologyKey", "")
                values = {labels[j].get(key) for j, t in placed if _term_matches(term, task, t)} - {None}
                if not values and _term_matches(term, task, task):
                    continue  # the first pod of a group that affines to itself may go anywhere
                ok &= np.array([labels[j].get(key) in values for j in idx], dtype=bool)
            checks.append((REASON_POD_AFFINITY, ok))
        anti = required_terms(task, "podAntiAffinity")
        if anti:
            ok = np.ones(len(idx), dtype=bool)
            for term in anti:
                key = term.get("topologyKey", "")
                values = {labels[j].get(key) for j, t in placed if _term_matches(term, task, t)} - {None}
                ok &= np.array([labels[j].get(key) not in values for j in idx], dtype=bool)
            checks.append((REASON_POD_ANTI_AFFINITY, ok))
        if self.any_anti_affinity:
            blocked: set[tuple[str, str]] = set()
            for j, t in placed:
                for term in required_terms(t, "podAntiAffinity"):
                    if _term_matches(term, t, task):
                        key = term.get("topologyKey", "")
                        value = labels[j].get(key)
                        if value is not None:
                            blocked.add((key, value))
            if blocked:
                ok = np.array([not any(labels[j].get(k) == v for k, v in blocked) for j in idx], dtype=bool)
                checks.append((REASON_EXISTING_ANTI_AFFINITY, ok))
        return checks

    def replica_safe(self, task: TaskInfo) -> bool:
        ports, affinity = self._needs(task)
        return not (self.any_anti_affinity or affinity or ports)

