"""task-topology: affinity and anti-affinity between the tasks (roles) of one job, by bucket packing.

A PodGroup names which of its job's tasks should share nodes and which should not::

    volcano.sh/task-topology-affinity: "ps,worker;chief"      # ps with worker; chief with chief
    volcano.sh/task-topology-anti-affinity: "ps"              # ps pods apart from each other
    volcano.sh/task-topology-task-order: "ps,worker"          # ps placed first

At session open the job's pods of the named tasks are packed into *buckets* (Volcano's
``JobManager.buildBucket``): a pod joins the bucket it has the most affinity with (ties: the bucket
asking for less), or a new one when it would repel every bucket; pods already running make one
bucket per node. TaskOrderFn places bucketed pods first, larger buckets first; NodeOrderFn scores a
node by how many of the pod's bucket already sit there, plus the bucket's pending pods, less one per
pod of the bucket that would not fit there too, less the pods of repelled tasks placed on it this
session; ``× task-topology.weight × 100 / largest bucket``.

The score depends on the pod (its bucket), not on its shape alone, so it is given as a
BatchNodeOrderFn over the candidate nodes (Volcano sums NodeOrderFn and BatchNodeOrderFn alike).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import BATCH_NODE_ORDER, TASK_ORDER
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, TaskInfo, TaskStatus
from pumice.scheduler.resources import EPS

log = logging.getLogger("pumice.scheduler")

AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER_KEY = "volcano.sh/task-topology-task-order"
WEIGHT = "task-topology.weight"
MAX_NODE_SCORE = 100.0

# Volcano's affinityPriority of a task by the strongest kind of topology it is named in.
SELF_ANTI, INTER_AFFINITY, SELF_AFFINITY, INTER_ANTI = 4, 3, 2, 1
_PLACED = TaskStatus.ALLOCATED | TaskStatus.PIPELINED


class TopologyError(ValueError):
    """A malformed task-topology annotation (Volcano then ignores the job's topology)."""


@dataclass(eq=False)
class Bucket:
    index: int
    nodes: int
    #: pending pods of the bucket (uid -> task), in the order they joined
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    names: dict[str, int] = field(default_factory=dict)
    req_score: float = 0.0
    request: np.ndarray | None = None
    bound: int = 0
    #: pods of the bucket per node
    on_node: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.on_node = np.zeros(self.nodes)

    def add(self, name: str, task: TaskInfo) -> None:
        self.names[name] = self.names.get(name, 0) + 1
        if task.node >= 0:
            self.on_node[task.node] += 1
            self.bound += 1
            return
        self._pending(task, 1)

    def _pending(self, task: TaskInfo, sign: int) -> None:
        if sign > 0:
            self.tasks[task.uid] = task
        else:
            self.tasks.pop(task.uid, None)
        req = task.resreq
        self.request = req * sign if self.request is None else self.request + req * sign
        # Volcano's reqScore: milli-CPU + memory in MiB + scalars (milli-units)
        score = float(req[0]) + float(req[1]) / 1024 / 1024 + float(req[2:].sum())
        self.req_score += score * sign

    def placed(self, task: TaskInfo, node: int, sign: int) -> None:
        self.on_node[node] += sign
        self.bound += sign
        self._pending(task, -sign)


@dataclass(eq=False)
class JobTopology:
    """Volcano's ``JobManager``: a job's task topology, its buckets and what this session placed."""

    nodes: int
    priority: dict[str, int] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)
    inter_affinity: dict[str, set[str]] = field(default_factory=dict)
    self_affinity: set[str] = field(default_factory=set)
    inter_anti: dict[str, set[str]] = field(default_factory=dict)
    self_anti: set[str] = field(default_factory=set)
    buckets: list[Bucket] = field(default_factory=list)
    bucket_of: dict[str, int] = field(default_factory=dict)
    task_name: dict[str, str] = field(default_factory=dict)
    max_size: int = 0
    #: pods of each task name placed this session, per node (Volcano's nodeTaskSet)
    placed: dict[str, np.ndarray] = field(default_factory=dict)
    #: uid -> node of the pods counted in ``placed`` (a placement undone has lost its node already)
    counted: dict[str, int] = field(default_factory=dict)

    def _mark(self, name: str, kind: int) -> None:
        if kind > self.priority.get(name, 0):
            self.priority[name] = kind

    def apply(self, affinity: list[list[str]], anti: list[list[str]], order: list[str]) -> None:
        for group in affinity:
            if len(group) == 1:
                self.self_affinity.add(group[0])
                self._mark(group[0], SELF_AFFINITY)
                continue
            for i, src in enumerate(group):
                for dst in group[:i]:
                    self.inter_affinity.setdefault(src, set()).add(dst)
                    self.inter_affinity.setdefault(dst, set()).add(src)
                self._mark(src, INTER_AFFINITY)
        for group in anti:
            if len(group) == 1:
                self.self_anti.add(group[0])
                self._mark(group[0], SELF_ANTI)
                continue
            for i, src in enumerate(group):
                for dst in group[:i]:
                    self.inter_anti.setdefault(src, set()).add(dst)
                    self.inter_anti.setdefault(dst, set()).add(src)
                self._mark(src, INTER_ANTI)
        for i, name in enumerate(order):
            self.order[name] = len(order) - i

    def affinity_order(self, left: TaskInfo, right: TaskInfo) -> int:
        """Volcano's ``taskAffinityOrder``: 1 when ``left`` is to go first (task order, then priority)."""
        ln, rn = self.task_name.get(left.uid, ""), self.task_name.get(right.uid, "")
        if ln == rn:
            return 0
        lo, ro = self.order.get(ln, 0), self.order.get(rn, 0)
        if lo != ro:
            return 1 if lo > ro else -1
        lp, rp = self.priority.get(ln, 0), self.priority.get(rn, 0)
        if lp != rp:
            return 1 if lp > rp else -1
        return 0

    def affinity_with(self, name: str, counts: dict[str, int], only_anti: bool) -> int:
        """Volcano's ``checkTaskSetAffinity``: +count per attracting pod, -count per repelling one."""
        total = 0
        for other, count in counts.items():
            same = other == name
            if not only_anti and (name in self.self_affinity if same else other in self.inter_affinity.get(name, ())):
                total += count
            if name in self.self_anti if same else other in self.inter_anti.get(name, ()):
                total -= count
        return total

    def repelled(self, name: str) -> list[str]:
        """The task names whose placed pods repel a pod of ``name``."""
        out = list(self.inter_anti.get(name, ()))
        if name in self.self_anti:
            out.append(name)
        return out

    def build(self, tasks: list[TaskInfo]) -> None:
        """Volcano's ``ConstructBucket``: sort the named pods, then pack them into buckets."""
        named = []
        for t in tasks:
            name = t.role
            if name and name in self.priority:
                self.task_name[t.uid] = name
                named.append(t)

        def key(t: TaskInfo) -> tuple[int, str, int, int, str]:
            if t.node >= 0:
                return (0, t.node_name, 0, 0, t.name)
            name = self.task_name[t.uid]
            return (1, "", -self.order.get(name, 0), -self.priority.get(name, 0), t.name)

        by_node: dict[int, Bucket] = {}
        for t in sorted(named, key=key):
            name = self.task_name[t.uid]
            chosen: Bucket | None = None
            best = -(2**31)
            if t.node >= 0:
                best = 0
                chosen = by_node.get(t.node)
            else:
                for bucket in self.buckets:
                    aff = self.affinity_with(name, bucket.names, only_anti=False)
                    if aff > best:
                        best, chosen = aff, bucket
                    elif aff == best and chosen is not None and bucket.req_score < chosen.req_score:
                        chosen = bucket
            if best < 0 or chosen is None:
                chosen = Bucket(len(self.buckets), self.nodes)
                self.buckets.append(chosen)
                if t.node >= 0:
                    by_node[t.node] = chosen
            self.bucket_of[t.uid] = chosen.index
            chosen.add(name, t)
            self.max_size = max(self.max_size, len(chosen.tasks) + chosen.bound)

    def bucket(self, task: TaskInfo) -> Bucket | None:
        i = self.bucket_of.get(task.uid)
        return None if i is None else self.buckets[i]

    def moved(self, task: TaskInfo, node: int, sign: int) -> None:
        """A pod of the job placed on ``node`` (+1) this session, or that placement undone (-1)."""
        name = task.role
        if name:
            row = self.placed.get(name)
            if row is None:
                row = self.placed[name] = np.zeros(self.nodes)
            row[node] += sign
        bucket = self.bucket(task)
        if bucket is not None:
            bucket.placed(task, node, sign)


def parse_groups(text: str, roles: set[str], what: str) -> list[list[str]]:
    """``a,b;c`` -> [[a, b], [c]]; every name a task of the job, none twice in a group (Volcano's check)."""
    groups = [part.split(",") for part in text.split(";")]
    for group in groups:
        seen: set[str] = set()
        for name in group:
            if not name:
                continue
            if name not in roles:
                raise TopologyError(f"{what}: task {name!r} does not exist in the job")
            if name in seen:
                raise TopologyError(f"{what}: task {name!r} is named twice in one group")
            seen.add(name)
    return groups


def read_topology(job: JobInfo) -> tuple[list[list[str]], list[list[str]], list[str]] | None:
    """The job's task topology from its PodGroup's annotations, None if it has none; TopologyError if malformed."""
    annotations = (job.pod_group.get("metadata") or {}).get("annotations") or {}
    if not any(k in annotations for k in (AFFINITY, ANTI_AFFINITY, TASK_ORDER_KEY)):
        return None
    roles = {t.role for t in job.tasks.values()}
    affinity = parse_groups(annotations[AFFINITY], roles, AFFINITY) if AFFINITY in annotations else []
    anti = parse_groups(annotations[ANTI_AFFINITY], roles, ANTI_AFFINITY) if ANTI_AFFINITY in annotations else []
    order: list[str] = []
    if TASK_ORDER_KEY in annotations:
        order = annotations[TASK_ORDER_KEY].split(",")
        parse_groups(annotations[TASK_ORDER_KEY], roles, TASK_ORDER_KEY)
    return affinity, anti, order


class TaskTopologyPlugin(Plugin):
    name = "task-topology"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.get_int(WEIGHT, 1)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.managers: dict[str, JobTopology] = {}
        n = len(ssn.nodes)
        for job in ssn.jobs.values():
            if not job.count(TaskStatus.PENDING):
                continue
            try:
                topology = read_topology(job)
            except TopologyError as err:
                log.warning("task-topology: PodGroup %s: %s; its task topology is ignored", job.uid, err)
                continue
            if topology is None:
                continue
            manager = JobTopology(n)
            manager.apply(*topology)
            manager.build(list(job.tasks.values()))
            self.managers[job.uid] = manager
        ssn.add(TASK_ORDER, self.name, self.task_order)
        ssn.add(BATCH_NODE_ORDER, self.name, self.node_scores)
        if self.managers:
            ssn.add_event_handler(self.on_allocate, self.on_deallocate)

    def _manager(self, task: TaskInfo) -> JobTopology | None:
        return self.managers.get(task.job.uid) if task.job is not None else None

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        if not self.managers:
            return 0
        lm, rm = self._manager(left), self._manager(right)
        if lm is None or rm is None:
            return 0
        lb, rb = lm.bucket(left), rm.bucket(right)
        if (lb is None) != (rb is None):
            return -1 if lb is not None else 1
        if lm is not rm or lb is None or rb is None:
            return 0
        if len(lb.tasks) != len(rb.tasks):
            return -1 if len(lb.tasks) > len(rb.tasks) else 1
        if lb.index == rb.index:
            return -lm.affinity_order(left, right)
        return -1 if lb.index < rb.index else 1

    def node_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        if not self.managers:
            return None
        manager = self._manager(task)
        bucket = manager.bucket(task) if manager is not None else None
        if manager is None or bucket is None or manager.max_size == 0:
            return None
        nodes = self.ssn.nodes
        room = (nodes.allocatable[:, idx] - nodes.used[:, idx]) + nodes.releasing[:, idx]
        fits = np.all(task.resreq[:, None] - room < EPS, axis=0)
        score = bucket.on_node[idx].copy()
        for other in manager.repelled(task.role):
            row = manager.placed.get(other)
            if row is not None:
                score -= row[idx]
        score += len(bucket.tasks)
        if bucket.request is not None:
            # one point less per other pending pod of the bucket that would not fit beside it
            others = [t.resreq for uid, t in bucket.tasks.items() if uid != task.uid]
            steps = np.vstack([np.zeros_like(bucket.request), np.cumsum(others, axis=0)]) if others else \
                np.zeros((1, len(bucket.request)))
            remains = bucket.request[None, :] - steps  # (m+1) x R
            ok = np.all(remains[:, :, None] - room[None, :, :] < EPS, axis=1)  # (m+1) x k
            first = np.where(ok.any(axis=0), np.argmax(ok, axis=0), len(others))
            score -= first
        score = np.where(fits, score, 0.0)
        out: np.ndarray = score * self.weight * MAX_NODE_SCORE / manager.max_size
        return out

    def on_allocate(self, task: TaskInfo) -> None:
        manager = self._manager(task)
        if manager is not None and task.status & _PLACED and task.uid not in manager.counted and task.node >= 0:
            manager.counted[task.uid] = task.node
            manager.moved(task, task.node, 1)

    def on_deallocate(self, task: TaskInfo) -> None:
        manager = self._manager(task)
        node = manager.counted.pop(task.uid, -1) if manager is not None else -1
        if manager is not None and node >= 0:
            manager.moved(task, node, -1)
