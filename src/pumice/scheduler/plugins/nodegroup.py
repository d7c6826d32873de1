"""nodegroup: a queue's pods go to the node groups its ``spec.affinity`` names (Volcano's nodegroup plugin).

A node's group is its label ``volcano.sh/nodegroup-name``. A queue's ``nodeGroupAffinity`` and
``nodeGroupAntiAffinity`` each list ``required...`` and ``preferred...`` groups:

* predicate: a node passes when its group is required or preferred by the affinity, unless it is
  anti-affinity-required; an anti-affinity-*preferred* group passes again (Volcano's order). A node
  without the label, or with the label while the queue names no group, fails; with ``strict: false``
  a node without the label passes for a queue that names none;
* score: 100 for a required group, + 50 for a preferred one (``enablePreferredOrder``: 50 x (n - i) / n
  for the i-th of n preferred groups), and -1 for an anti-affinity-preferred group;
* ``enableHierarchy``: a queue without affinity takes its nearest ancestor's (``spec.parent``, else
  ``root``);
* the queue annotation ``volcano.sh/nodegroup-resource-limits`` (JSON: group -> resource list) caps
  what the queue's pods hold in each group, on the named resources.

Everything a task's answer depends on is its queue (part of its shape) and the node labels, except
the resource limits, which depend on where the queue's other pods are (not replica-safe).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import NODE_ORDER, PREDICATE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import ALLOCATED_STATUS, MemoSlot, NodeTable, QueueInfo, TaskInfo
from pumice.scheduler.resources import EPS, ResourceSpace

GROUP_LABEL = "volcano.sh/nodegroup-name"
LIMITS_ANNOTATION = "volcano.sh/nodegroup-resource-limits"
ROOT_QUEUE = "root"
BASE_SCORE = 100.0

NOT_FOUND_JOB = "job not found in session"
LABEL_NOT_FOUND = "node group label not found"
AFFINITY_NOT_FOUND = "node group affinity not specified"
UNSATISFIED = "node does not satisfy the node group affinity"
LIMIT_INVALID = "node group resource limit annotation invalid"
LIMIT_EXCEEDED = "node group resource limit exceeded"


@dataclass(frozen=True)
class NodeGroups:
    """Every node's group as a code (-1: no label), and the group names by code."""

    code: np.ndarray
    names: tuple[str, ...]

    def mask(self, groups: set[str]) -> np.ndarray:
        """Nodes whose group is one of ``groups``."""
        hit = np.array([n in groups for n in self.names] + [False], dtype=bool)
        out: np.ndarray = hit[self.code]  # code -1 reads the trailing False
        return out


def _node_groups(nodes: NodeTable) -> NodeGroups:
    names: dict[str, int] = {}
    code = np.array([names.setdefault(lb[GROUP_LABEL], len(names)) if GROUP_LABEL in lb else -1
                     for lb in nodes.labels], dtype=np.int64)
    return NodeGroups(code, tuple(names))


NODE_GROUPS: MemoSlot[NodeGroups] = MemoSlot("nodegroup.groups")


@dataclass(frozen=True)
class GroupAffinity:
    """A queue's ``spec.affinity`` as sets of group names."""

    required: frozenset[str] = frozenset()
    preferred: tuple[str, ...] = ()
    anti_required: frozenset[str] = frozenset()
    anti_preferred: frozenset[str] = frozenset()

    @classmethod
    def of(cls, queue: QueueInfo) -> GroupAffinity | None:
        affinity = (queue.queue.get("spec") or {}).get("affinity")
        if affinity is None:
            return None
        pos = affinity.get("nodeGroupAffinity") or {}
        neg = affinity.get("nodeGroupAntiAffinity") or {}
        return cls(
            frozenset(pos.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
            tuple(dict.fromkeys(pos.get("preferredDuringSchedulingIgnoredDuringExecution") or ())),
            frozenset(neg.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
            frozenset(neg.get("preferredDuringSchedulingIgnoredDuringExecution") or ()),
        )

    def empty(self) -> bool:
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)

    def admits(self, group: str) -> bool:
        """Volcano's ``predicate``: anti-affinity-required overrides affinity; anti-preferred admits."""
        ok = group in self.required or group in self.preferred
        if group in self.anti_required:
            ok = False
        if group in self.anti_preferred:
            ok = True
        return ok

    def score(self, group: str, preferred_order: bool) -> float:
        score = BASE_SCORE if group in self.required else 0.0
        if group in self.preferred:
            n = len(self.preferred)
            score += 0.5 * BASE_SCORE * ((n - self.preferred.index(group)) / n if preferred_order else 1.0)
        if group in self.anti_preferred:
            score = -1.0
        return score


@dataclass
class QueueAttr:
    """One queue's affinity (own or inherited), node-group limits and what it holds per group."""

    affinity: GroupAffinity | None
    #: group -> (limit vector, the dimensions the limit names)
    limits: dict[str, tuple[np.ndarray, list[int]]] = field(default_factory=dict)
    limits_error: str = ""
    #: group code -> Σ resreq of the queue's allocated tasks on nodes of the group
    allocated: dict[int, np.ndarray] = field(default_factory=dict)
    #: per session: the static mask and reasons, and the score over all nodes
    checks: list[tuple[str, np.ndarray]] | None = None
    score: np.ndarray | None = None


def _limits(queue: QueueInfo, space: ResourceSpace) -> tuple[dict[str, tuple[np.ndarray, list[int]]], str]:
    raw = ((queue.queue.get("metadata") or {}).get("annotations") or {}).get(LIMITS_ANNOTATION)
    if not raw:
        return {}, ""
    try:
        parsed = json.loads(raw)
        if not isinstance(parsed, dict) or not all(isinstance(v, dict) for v in parsed.values()):
            raise ValueError("expected an object of group -> resource list")
        out: dict[str, tuple[np.ndarray, list[int]]] = {}
        for group, resources in parsed.items():
            vec = space.vector(resources)
            # a limit on a resource no node has: 0 of it (any request of it exceeds the limit)
            dims = [space.index[n] for n in resources if n in space.index]
            out[str(group)] = (vec, dims)
        return out, ""
    except (ValueError, TypeError) as exc:
        return {}, f"parse annotation {LIMITS_ANNOTATION}: {exc}"


class NodeGroupPlugin(Plugin):
    name = "nodegroup"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        #: ``strict`` (true): nodes without a group label are refused to every queue.
        self.strict = arguments.get_bool("strict", True)
        #: ``enablePreferredOrder``: earlier preferred groups score higher.
        self.preferred_order = arguments.get_bool("enablePreferredOrder", False)
        self.attrs: dict[str, QueueAttr] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.groups = ssn.nodes.memo.get(NODE_GROUPS, lambda: _node_groups(ssn.nodes))
        own = {name: GroupAffinity.of(q) for name, q in ssn.queues.items()}
        opt = ssn.conf.plugin(self.name)
        if opt is not None and opt.flags.get("enableHierarchy"):
            own = {name: self._inherited(name, own, ssn.queues) for name in own}
        for name, q in ssn.queues.items():
            limits, error = _limits(q, ssn.space)
            self.attrs[name] = QueueAttr(own[name], limits, error)
        for job in ssn.jobs.values():
            attr = self.attrs.get(job.queue)
            if attr is not None and attr.limits:
                for t in job.tasks.values():
                    if t.status & ALLOCATED_STATUS:
                        self._add(attr, t, 1.0)
        ssn.add(PREDICATE, self.name, self)
        ssn.add(NODE_ORDER, self.name, self)
        ssn.add_event_handler(self.on_allocate, self.on_deallocate)

    @staticmethod
    def _inherited(name: str, own: dict[str, GroupAffinity | None],
                   queues: dict[str, QueueInfo]) -> GroupAffinity | None:
        """The queue's affinity, else its nearest ancestor's (a missing parent or a cycle ends the walk)."""
        seen = {name}
        current = name
        while own.get(current) is None and current != ROOT_QUEUE:
            parent = queues[current].parent or ROOT_QUEUE
            if parent not in queues or parent in seen:
                return None
            seen.add(parent)
            current = parent
        return own.get(current)

    def placement_inputs(self) -> object:
        """What the static masks and scores read besides shapes and labels: every queue's affinity."""
        return (self.strict, self.preferred_order,
                tuple(sorted((n, a.affinity, a.limits_error, tuple(sorted(a.limits)))
                             for n, a in self.attrs.items())))

    # --- bookkeeping for the limits ------------------------------------------------------------
    def _add(self, attr: QueueAttr, task: TaskInfo, sign: float) -> None:
        if task.node < 0:
            return
        code = int(self.groups.code[task.node])
        if code < 0:
            return
        held = attr.allocated.get(code)
        if held is None:
            held = attr.allocated[code] = self.ssn.space.zeros()
        held += sign * task.resreq

    def _queue_attr(self, task: TaskInfo) -> QueueAttr | None:
        job = task.job
        if job is None or job.uid not in self.ssn.jobs:
            return None
        return self.attrs.get(job.queue)

    def on_allocate(self, task: TaskInfo) -> None:
        attr = self._queue_attr(task)
        if attr is not None and attr.limits:
            self._add(attr, task, 1.0)

    def on_deallocate(self, task: TaskInfo) -> None:
        attr = self._queue_attr(task)
        if attr is not None and attr.limits:
            self._add(attr, task, -1.0)

    # --- NodeFilter ---------------------------------------------------------------------------------
    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        job = task.job
        n = len(self.groups.code)
        if job is None or job.uid not in self.ssn.jobs:
            return [(NOT_FOUND_JOB, np.zeros(n, dtype=bool))]
        attr = self.attrs.get(job.queue)
        if attr is None:
            attr = self.attrs[job.queue] = QueueAttr(None)
        if attr.checks is None:
            attr.checks = self._checks(attr)
        return attr.checks

    def _checks(self, attr: QueueAttr) -> list[tuple[str, np.ndarray]]:
        code = self.groups.code
        labelled = code >= 0
        if attr.limits_error:
            return [(LIMIT_INVALID, np.zeros(len(code), dtype=bool))]
        affinity = attr.affinity
        unset = affinity is None or affinity.empty()
        if unset:
            if not self.strict:
                return [(AFFINITY_NOT_FOUND, ~labelled)]
            return [(LABEL_NOT_FOUND, labelled), (AFFINITY_NOT_FOUND, ~labelled)]
        assert affinity is not None
        admitted = {g for g in self.groups.names if affinity.admits(g)}
        return [(LABEL_NOT_FOUND, labelled), (UNSATISFIED, self.groups.mask(admitted))]

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        attr = self._queue_attr(task)
        if attr is None or not attr.limits:
            return []
        over = np.zeros(len(self.groups.names) + 1, dtype=bool)
        for i, group in enumerate(self.groups.names):
            limit = attr.limits.get(group)
            if limit is None:
                continue
            vec, dims = limit
            held = attr.allocated.get(i)
            future = task.resreq[dims] if held is None else held[dims] + task.resreq[dims]
            over[i] = bool(((future > vec[dims]) & (future - vec[dims] >= EPS)).any())
        return [(LIMIT_EXCEEDED, ~over[self.groups.code[view.idx]])]

    def replica_safe(self, task: TaskInfo) -> bool:
        attr = self._queue_attr(task)
        return attr is None or not attr.limits

    # --- NodeScorer ---------------------------------------------------------------------------------
    def static_score(self, task: TaskInfo) -> np.ndarray | None:
        attr = self._queue_attr(task)
        if attr is None or attr.affinity is None:
            return None
        if attr.score is None:
            affinity = attr.affinity
            per_group = np.array([affinity.score(g, self.preferred_order) for g in self.groups.names] + [0.0])
            attr.score = per_group[self.groups.code]
        return attr.score

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        return None
