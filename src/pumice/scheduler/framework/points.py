"""The extension points of a session: one table of (name, the ``enable*`` flag that switches a
plugin's callback there, the callback's type), as Volcano's ``framework/session_plugins.go`` has them.

A plugin registers a callback with ``ssn.add(JOB_ORDER, self.name, self.job_order)``; the type
checker holds the callback to the point's type. The session evaluates each point by its own rule
(first answer, AND, vote, intersection, ...), documented on the session's method of that name. The
configuration parser takes the flags it accepts from this table (:data:`POINT_FLAGS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

if TYPE_CHECKING:
    from pumice.scheduler.framework.view import NodeView
    from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo
    from pumice.scheduler.topology.context import SearchRequest
    from pumice.scheduler.topology.subjobs import SubJob
    from pumice.scheduler.topology.tree import HyperNodeInfo

F = TypeVar("F")

#: Votes (JobPipelinedFn, JobEnqueueableFn, SubJobPipelinedFn) and victim answers.
PERMIT, ABSTAIN, REJECT = 1, 0, -1


@dataclass(frozen=True, eq=False)
class Point(Generic[F]):
    """An extension point whose callbacks have type ``F`` (compared and hashed by identity)."""

    name: str
    #: The plugin option that switches the plugin's callback here; None: always on.
    flag: str | None

    def __repr__(self) -> str:
        return f"Point({self.name!r})"


# --- callback types ------------------------------------------------------------------------------
#: Orders: negative when ``left`` goes first, 0 for no opinion.
JobOrderFn = Callable[["JobInfo", "JobInfo"], int]
QueueOrderFn = Callable[["QueueInfo", "QueueInfo"], int]
VictimQueueOrderFn = Callable[["QueueInfo", "QueueInfo", "TaskInfo"], int]
TaskOrderFn = Callable[["TaskInfo", "TaskInfo"], int]
SubJobOrderFn = Callable[["SubJob", "SubJob"], int]
#: An error message, or None.
PrePredicateFn = Callable[["TaskInfo"], "str | None"]
JobValidFn = Callable[["JobInfo"], "str | None"]
#: (victims among the candidates, PERMIT; or anything, ABSTAIN: no opinion).
VictimsFn = Callable[["TaskInfo", "list[TaskInfo]"], "tuple[list[TaskInfo], int]"]
VictimTasksFn = Callable[["list[TaskInfo]"], "list[TaskInfo]"]
QueueFn = Callable[["QueueInfo"], bool]
QueueTaskFn = Callable[["QueueInfo", "TaskInfo"], bool]
JobFn = Callable[["JobInfo"], bool]
#: PERMIT, ABSTAIN or REJECT.
JobVoteFn = Callable[["JobInfo"], int]
JobEventFn = Callable[["JobInfo"], None]
SubJobFn = Callable[["SubJob"], bool]
SubJobVoteFn = Callable[["SubJob"], int]
#: BatchNodeOrderFn: scores over the candidate nodes ``idx``; None when the plugin has nothing to
#: say for this task (a constant would not change the choice).
BatchScorer = Callable[["TaskInfo", np.ndarray], "np.ndarray | None"]
#: HyperNodeGradientFn(request, search root, purpose) -> HyperNodes grouped by tier, lowest first.
HyperNodeGradientFn = Callable[["SearchRequest", "HyperNodeInfo", str], "list[list[HyperNodeInfo]] | None"]
#: HyperNodeOrderFn(SubJob, candidates) -> score per HyperNode name.
HyperNodeOrderFn = Callable[["SubJob", "list[HyperNodeInfo]"], "dict[str, float]"]


#: Kinds of :class:`EvictionContext` (Volcano's ``EvictionKindGangPreempt`` / ``...GangReclaim``).
GANG_PREEMPT, GANG_RECLAIM = "gangpreempt", "gangreclaim"


@dataclass(frozen=True, eq=False)
class EvictionContext:
    """What a UnifiedEvictableFn is asked about: who evicts (``job``), why (``kind``), and where."""

    kind: str
    job: JobInfo
    hypernode: str


#: UnifiedEvictableFn(context, candidates) -> (victims, PERMIT) or (anything, ABSTAIN).
UnifiedEvictableFn = Callable[[EvictionContext, "list[TaskInfo]"], "tuple[list[TaskInfo], int]"]


class NodeFilter(Protocol):
    """A predicate, columnar: it answers for many nodes at once.

    ``static_checks`` depends only on the task's shape and the nodes' fixed attributes (labels,
    taints), so the framework caches it per shape. ``dynamic_checks`` depends on node usage; it is
    evaluated on a :class:`NodeView`, possibly a hypothetical one (rows after *m* more replicas).
    """

    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        """(reason, passing mask over all nodes) checks, in evaluation order."""
        ...

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        """(reason, passing mask over the view) checks, in evaluation order."""
        ...

    def replica_safe(self, task: TaskInfo) -> bool:
        """True if the dynamic answer for a node depends only on that node's usage rows
        (not, e.g., on where other pods are: inter-pod affinity)."""
        ...


class NodeScorer(Protocol):
    """A NodeOrderFn, columnar, split like :class:`NodeFilter`; None: nothing to add."""

    def static_score(self, task: TaskInfo) -> np.ndarray | None: ...

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None: ...


# --- the table (Volcano's PluginOption order) -----------------------------------------------------
JOB_ORDER: Point[JobOrderFn] = Point("job_order", "enableJobOrder")
JOB_READY: Point[JobFn] = Point("job_ready", "enableJobReady")
JOB_PIPELINED: Point[JobVoteFn] = Point("job_pipelined", "enableJobPipelined")
TASK_ORDER: Point[TaskOrderFn] = Point("task_order", "enableTaskOrder")
PREEMPTABLE: Point[VictimsFn] = Point("preemptable", "enablePreemptable")
RECLAIMABLE: Point[VictimsFn] = Point("reclaimable", "enableReclaimable")
PREEMPTIVE: Point[QueueTaskFn] = Point("preemptive", "enablePreemptive")
QUEUE_ORDER: Point[QueueOrderFn] = Point("queue_order", "enableQueueOrder")
VICTIM_QUEUE_ORDER: Point[VictimQueueOrderFn] = Point("victim_queue_order", None)
PREDICATE: Point[NodeFilter] = Point("predicate", "enablePredicate")
PRE_PREDICATE: Point[PrePredicateFn] = Point("pre_predicate", "enablePredicate")
NODE_ORDER: Point[NodeScorer] = Point("node_order", "enableNodeOrder")
BATCH_NODE_ORDER: Point[BatchScorer] = Point("batch_node_order", "enableNodeOrder")
JOB_ENQUEUEABLE: Point[JobVoteFn] = Point("job_enqueueable", "enableJobEnqueued")
JOB_ENQUEUED: Point[JobEventFn] = Point("job_enqueued", "enableJobEnqueued")
VICTIM_TASKS: Point[VictimTasksFn] = Point("victim_tasks", "enabledVictim")
#: pumice: which of the VictimTasks answer may really go (pdb); every filter applies (see the README).
VICTIM_FILTER: Point[VictimTasksFn] = Point("victim_filter", "enabledVictim")
JOB_STARVING: Point[JobFn] = Point("job_starving", "enableJobStarving")
OVERUSED: Point[QueueFn] = Point("overused", "enabledOverused")
ALLOCATABLE: Point[QueueTaskFn] = Point("allocatable", "enabledAllocatable")
JOB_VALID: Point[JobValidFn] = Point("job_valid", None)
HYPERNODE_ORDER: Point[HyperNodeOrderFn] = Point("hypernode_order", "enabledHyperNodeOrder")
SUBJOB_READY: Point[SubJobFn] = Point("subjob_ready", "enabledSubJobReady")
SUBJOB_PIPELINED: Point[SubJobVoteFn] = Point("subjob_pipelined", "enabledSubJobPipelined")
SUBJOB_ORDER: Point[SubJobOrderFn] = Point("subjob_order", "enabledSubJobOrder")
HYPERNODE_GRADIENT: Point[HyperNodeGradientFn] = Point("hypernode_gradient", "enabledHyperNodeGradient")
#: Victims of gangpreempt / gangreclaim (no flag: Volcano registers it unconditionally).
UNIFIED_EVICTABLE: Point[UnifiedEvictableFn] = Point("unified_evictable", None)

POINTS: tuple[Point[Any], ...] = (
    JOB_ORDER, JOB_READY, JOB_PIPELINED, TASK_ORDER, PREEMPTABLE, RECLAIMABLE, PREEMPTIVE, QUEUE_ORDER,
    VICTIM_QUEUE_ORDER, PREDICATE, PRE_PREDICATE, NODE_ORDER, BATCH_NODE_ORDER, JOB_ENQUEUEABLE, JOB_ENQUEUED,
    VICTIM_TASKS, VICTIM_FILTER, JOB_STARVING, OVERUSED, ALLOCATABLE, JOB_VALID, HYPERNODE_ORDER, SUBJOB_READY,
    SUBJOB_PIPELINED, SUBJOB_ORDER, HYPERNODE_GRADIENT, UNIFIED_EVICTABLE,
)

#: The flags that switch points, in table order.
POINT_FLAGS: tuple[str, ...] = tuple(dict.fromkeys(p.flag for p in POINTS if p.flag is not None))
