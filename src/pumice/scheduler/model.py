"""Session objects: tasks (pods), jobs (PodGroups), queues, and the columnar node table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import numpy as np

from pumice.api.quantity import int_value
from pumice.scheduler.gpus import VGPU, GpuRequest, GpuSlots, assigned_ids, assigned_vgpu, gpu_request
from pumice.scheduler.resources import ResourceSpace

if TYPE_CHECKING:
    from pumice.scheduler.framework.placement import PlacementCache

T = TypeVar("T")


def run_request(tasks: list[TaskInfo]) -> np.ndarray:
    """Σ resreq of ``tasks``, as adding them one by one would give: requests are whole milli-units and bytes
    (exact in any order), and replicas usually share one request array."""
    first = tasks[0].resreq
    if all(t.resreq is first for t in tasks):
        return first * len(tasks)
    total: np.ndarray = np.add.reduce([t.resreq for t in tasks], axis=0)
    return total


class TaskStatus:
    """Volcano's task status bit flags (plain ints: enum flag arithmetic is slow on hot paths)."""

    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 4
    BINDING = 8
    BOUND = 16
    RUNNING = 32
    RELEASING = 64
    SUCCEEDED = 128
    FAILED = 256
    UNKNOWN = 512


ALLOCATED_STATUS = TaskStatus.BOUND | TaskStatus.BINDING | TaskStatus.RUNNING | TaskStatus.ALLOCATED
SCHEDULED_STATUS = TaskStatus.RUNNING | TaskStatus.BOUND | TaskStatus.FAILED | TaskStatus.SUCCEEDED
PREEMPTABLE_STATUS = TaskStatus.BOUND | TaskStatus.RUNNING
COMPLETED_STATUS = TaskStatus.FAILED | TaskStatus.SUCCEEDED
READY_STATUS = ALLOCATED_STATUS | TaskStatus.SUCCEEDED
VALID_STATUS = ALLOCATED_STATUS | TaskStatus.SUCCEEDED | TaskStatus.PIPELINED | TaskStatus.PENDING

#: The static scheduling constraints of a pod (namespace, requests, selectors, affinity, ...), as
#: interned by :class:`pumice.scheduler.snapshot.ShapeTable`: replicas of one task share one.
Shape = tuple[str | bytes, ...]


@dataclass(eq=False, slots=True)
class TaskInfo:
    """One pod as the scheduler sees it."""

    uid: str
    namespace: str
    name: str
    job: JobInfo | None
    status: int
    resreq: np.ndarray
    init_resreq: np.ndarray
    #: kube-scheduler's non-zero cpu/memory request, for scoring.
    nonzero: tuple[float, float]
    priority: int
    preemptable: bool
    role: str
    #: Index under its task (pod-name suffix), or None; the default task order uses it.
    index: int | None
    creation: float
    pod: dict[str, Any]
    #: Key of the static scheduling constraints; replicas of one task share it.
    shape: Shape
    node: int = -1
    node_name: str = ""
    evicted: bool = False
    preemption_never: bool = False
    nominated_node: str = ""
    #: Free-form annotations the scheduler leaves for people (fit errors).
    last_reason: str = ""
    #: No resource request at all (left to backfill); set from init_resreq.
    best_effort: bool = False
    #: (dimension, amount) of every resource the task requests, for quick per-task quota checks.
    requested: tuple[tuple[int, float], ...] = ()
    #: ``namespace/name``.
    key: str = ""
    #: The pod has required pod anti-affinity terms (other pods' placement then depends on it).
    anti_affinity: bool = False
    #: What the task adds to its node's row when it runs there: resreq, non-zero cpu/memory, one pod.
    row: np.ndarray = None  # type: ignore[assignment]
    #: What it asks of single GPUs (``pumice.scheduler.gpus``), or None; parsed with the requests.
    gpu: GpuRequest | None = None
    #: The GPUs of its node it holds while placed (slot indices), or None.
    gpu_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        self.key = f"{self.namespace}/{self.name}"
        if self.row is not None:
            return  # derived fields handed over from an earlier parse of the same pod
        self.gpu = gpu_request(self.pod)
        self.best_effort = not bool((self.init_resreq > 0).any())
        affinity = (self.pod.get("spec") or {}).get("affinity")
        self.anti_affinity = bool(affinity and (affinity.get("podAntiAffinity") or {})
                                  .get("requiredDuringSchedulingIgnoredDuringExecution"))
        self.row = np.concatenate([self.resreq, self.nonzero, (1.0,)])
        self.requested = tuple((d, float(self.resreq[d])) for d in np.flatnonzero(self.resreq > 0).tolist())

    def derived(self) -> dict[str, Any]:
        """What ``__post_init__`` works out from the requests (to hand to a re-made TaskInfo)."""
        return {"best_effort": self.best_effort, "anti_affinity": self.anti_affinity, "row": self.row,
                "requested": self.requested, "gpu": self.gpu}


@dataclass(eq=False)
class JobInfo:
    """A PodGroup and its pods."""

    uid: str  # "<namespace>/<podgroup>"
    namespace: str
    name: str
    queue: str
    priority: int
    min_available: int
    min_task_member: dict[str, int]
    creation: float
    pod_group: dict[str, Any]
    phase: str
    min_resources: np.ndarray | None
    preemptable: bool
    resources: ResourceSpace
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    status_count: dict[int, int] = field(default_factory=dict)
    #: status -> role (``volcano.sh/task-spec``) -> tasks, kept as statuses change: the per-role
    #: gang checks run for every placed task and must not walk the job's tasks.
    role_count: dict[int, dict[str, int]] = field(default_factory=dict)
    #: Pending tasks with an empty request (they count as ready for the gang).
    pending_best_effort: int = 0
    #: Tasks in READY_STATUS / PIPELINED, kept as statuses change (gang checks read them per task).
    ready: int = 0
    waiting: int = 0
    #: Σ resreq of tasks in ALLOCATED_STATUS.
    allocated: np.ndarray = field(init=False)
    #: Per-task fit errors of this session: task uid -> reason text.
    fit_errors: dict[str, str] = field(default_factory=dict)
    #: Why a queue refused the job's tasks this session (quota), for people.
    quota_reason: str = ""
    #: Why the job as a whole did not get scheduled (gang / queue / enqueue), for people.
    pending_reason: str = ""
    network_topology: dict[str, Any] | None = None
    #: Set at session close when the gang could not be placed (Volcano's Unschedulable condition).
    unschedulable: bool = False
    _min_total: int = -1
    #: count() answers until the next status change (sessions ask the same questions often).
    _counts: dict[int, int] = field(default_factory=dict)
    #: ``total_request`` / ``pending_request`` until the next change (None: to be summed).
    _total: np.ndarray | None = None
    _pending: np.ndarray | None = None
    schedule_start: float = 0.0
    #: Neither network topology nor a subGroupPolicy (Volcano: not ``ContainsNetworkTopology()`` and
    #: not ``ContainsSubJobPolicy()``): all its pods are in one SubJob without topology. Both are
    #: PodGroup spec fields: a PodGroup whose spec changes makes a new JobInfo.
    plain: bool = field(init=False)

    def __post_init__(self) -> None:
        self.plain = self.network_topology is None and not (self.pod_group.get("spec") or {}).get("subGroupPolicy")
        self.allocated = self.resources.zeros()

    @property
    def total_request(self) -> np.ndarray:
        """Σ resreq of all tasks (pending ones included); read-only."""
        if self._total is None:
            self._total = self._sum(list(self.tasks.values()))
        return self._total

    @property
    def pending_request(self) -> np.ndarray:
        """Σ resreq of the Pending tasks; read-only.

        Summed when asked (at a session's open), not kept per move like ``allocated``: a dry run's
        snapshot and placements then skip an array update per pod. Requests are whole numbers
        (milli-units, bytes), so the sum is exact in any order."""
        if self._pending is None:
            self._pending = self._sum([t for t in self.tasks.values() if t.status == TaskStatus.PENDING])
        return self._pending

    def _sum(self, tasks: list[TaskInfo]) -> np.ndarray:
        return run_request(tasks) if tasks else self.resources.zeros()

    # --- task bookkeeping -------------------------------------------------------------------
    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self._count(task.status, 1, task)
        self._total = None
        if task.status & ALLOCATED_STATUS:
            self.allocated += task.resreq

    def remove_task(self, task: TaskInfo) -> None:
        if self.tasks.pop(task.uid, None) is None:
            return
        self._count(task.status, -1, task)
        self._total = None
        if task.status & ALLOCATED_STATUS:
            self.allocated -= task.resreq
        self.fit_errors.pop(task.uid, None)

    def reset_session_notes(self) -> None:
        """Forget what the previous session said about this job (live caches keep jobs across sessions)."""
        self.fit_errors.clear()
        self.pending_reason = ""
        self.quota_reason = ""
        self.unschedulable = False

    def _count(self, status: int, delta: int, task: TaskInfo) -> None:
        self._counts.clear()
        if status == TaskStatus.PENDING:
            self._pending = None
        self.status_count[status] = self.status_count.get(status, 0) + delta
        roles = self.role_count.get(status)
        if roles is None:
            roles = self.role_count[status] = {}
        roles[task.role] = roles.get(task.role, 0) + delta
        if status & READY_STATUS:
            self.ready += delta
        elif status == TaskStatus.PIPELINED:
            self.waiting += delta
        elif status == TaskStatus.PENDING and task.best_effort:
            self.pending_best_effort += delta

    def update_task_status(self, task: TaskInfo, status: int) -> None:
        old = task.status
        if old == status:
            return
        if old & ALLOCATED_STATUS and status & ALLOCATED_STATUS:
            # e.g. Allocated -> Binding at commit: only the per-status count moves
            self._counts.clear()
            counts = self.status_count
            counts[old] -= 1
            counts[status] = counts.get(status, 0) + 1
            self.role_count[old][task.role] -= 1
            roles = self.role_count.setdefault(status, {})
            roles[task.role] = roles.get(task.role, 0) + 1
            task.status = status
            return
        if old == TaskStatus.PENDING and status == TaskStatus.ALLOCATED:
            # a placement (once per pod in a session): both counts at once, as _count(old, -1) and
            # _count(status, 1) would move them
            self._counts.clear()
            self._pending = None
            counts = self.status_count
            counts[old] -= 1
            counts[status] = counts.get(status, 0) + 1
            role = task.role
            self.role_count[old][role] -= 1
            placed = self.role_count.get(status)
            if placed is None:
                placed = self.role_count[status] = {}
            placed[role] = placed.get(role, 0) + 1
            if task.best_effort:
                self.pending_best_effort -= 1
            self.ready += 1
            self.allocated += task.resreq
            task.status = status
            return
        self._count(old, -1, task)
        self._count(status, 1, task)
        was = bool(old & ALLOCATED_STATUS)
        now = bool(status & ALLOCATED_STATUS)
        if was and not now:
            self.allocated -= task.resreq
        elif now and not was:
            self.allocated += task.resreq
        task.status = status

    def placed_run(self, tasks: list[TaskInfo]) -> None:
        """Count ``tasks``, Pending until a statement set them Allocated one after the other (a run of
        replicas placed at once): the counts ``update_task_status`` would have moved for each."""
        self._counts.clear()
        self._pending = None
        n = len(tasks)
        counts = self.status_count
        counts[TaskStatus.PENDING] -= n
        counts[TaskStatus.ALLOCATED] = counts.get(TaskStatus.ALLOCATED, 0) + n
        pending = self.role_count[TaskStatus.PENDING]
        placed = self.role_count.get(TaskStatus.ALLOCATED)
        if placed is None:
            placed = self.role_count[TaskStatus.ALLOCATED] = {}
        for task in tasks:
            pending[task.role] -= 1
            placed[task.role] = placed.get(task.role, 0) + 1
            if task.best_effort:
                self.pending_best_effort -= 1
        self.ready += n
        self.allocated += run_request(tasks)

    def finished(self) -> bool:
        """Completed and every pod done: nothing left for a session to decide or report."""
        if self.phase != "Completed":
            return False
        return self.count(COMPLETED_STATUS) == len(self.tasks)

    def count(self, statuses: int) -> int:
        memo = self._counts
        n = memo.get(statuses)
        if n is None:
            n = memo[statuses] = sum(c for s, c in self.status_count.items() if s & statuses)
        return n

    def tasks_in(self, statuses: int) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.status & statuses]

    # --- gang predicates (Volcano job_info.go) ---------------------------------------------
    def ready_task_num(self) -> int:
        return self.ready

    def waiting_task_num(self) -> int:
        return self.waiting

    def pending_best_effort_num(self) -> int:
        return self.pending_best_effort

    def valid_task_num(self) -> int:
        return self.count(VALID_STATUS)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (
            self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_num()
            >= self.min_available
        )

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return self.phase in ("", "Pending")

    def task_min_available_total(self) -> int:
        total = self._min_total
        if total < 0:
            total = self._min_total = sum(self.min_task_member.values())
        return total

    def _role_counts(self, statuses: int, best_effort_pending: bool = False) -> dict[str, int]:
        counts: dict[str, int] = {}
        for status, roles in self.role_count.items():
            if status & statuses:
                for role, n in roles.items():
                    counts[role] = counts.get(role, 0) + n
        if best_effort_pending and self.pending_best_effort:
            for t in self.tasks.values():
                if t.status == TaskStatus.PENDING and t.best_effort:
                    counts[t.role] = counts.get(t.role, 0) + 1
        return counts

    def _roles_below_min(self, counts: dict[str, int]) -> bool:
        return any(counts.get(role, 0) < need for role, need in self.min_task_member.items() if need > 0)

    def _role_check_skipped(self) -> bool:
        return not self.min_task_member or self.min_available < self.task_min_available_total()

    def placements_to_ready(self) -> int | None:
        """How many more pending (not best-effort) tasks placed make ``is_ready() and check_task_ready()``
        true; None when per-role minimums decide (which roles are placed matters, not how many)."""
        if not self._role_check_skipped():
            return None
        return max(self.min_available - self.ready - self.pending_best_effort, 0)

    def check_task_valid(self) -> bool:
        return self._role_check_skipped() or not self._roles_below_min(self._role_counts(VALID_STATUS))

    def check_task_ready(self) -> bool:
        return self._role_check_skipped() or not self._roles_below_min(
            self._role_counts(READY_STATUS, best_effort_pending=True)
        )

    def check_task_pipelined(self) -> bool:
        return self._role_check_skipped() or not self._roles_below_min(
            self._role_counts(READY_STATUS | TaskStatus.PIPELINED, best_effort_pending=True)
        )

    def failed_roles(self) -> set[str]:
        return {self.tasks[uid].role for uid in self.fit_errors if uid in self.tasks}

    def need_continue_allocating(self) -> bool:
        """After a task found no node: may the job's other tasks still be tried (Volcano)?"""
        if self.min_available == len(self.tasks):
            return False
        failed = self.failed_roles()
        if self.min_available < self.task_min_available_total():
            left = sum(1 for t in self.tasks.values()
                       if t.status == TaskStatus.PENDING and t.role not in failed)
            return self.ready_task_num() + left >= self.min_available
        allocated = self._role_counts(READY_STATUS, best_effort_pending=True)
        for role in failed:
            need = self.min_task_member.get(role, 0)
            if need and allocated.get(role, 0) < need:
                return False
        return True

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        """The predicate-error cache: a role that failed once is not retried this session."""
        return bool(self.fit_errors) and bool(task.role) and task.role in self.failed_roles()


@dataclass(eq=False)
class QueueInfo:
    uid: str
    name: str
    weight: int
    priority: int
    parent: str
    state: str
    reclaimable: bool
    capability: dict[str, Any] | None
    guarantee: dict[str, Any] | None
    deserved: dict[str, Any] | None
    creation: float
    queue: dict[str, Any]


class MemoSlot(Generic[T]):
    """A typed key of :class:`NodeMemo` (compared by identity: define one per kind of value)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"MemoSlot({self.name!r})"


class NodeMemo:
    """Values kept for a node table's life, each under its own typed slot."""

    def __init__(self) -> None:
        self._values: dict[MemoSlot[Any], Any] = {}

    def get(self, slot: MemoSlot[T], make: Callable[[], T]) -> T:
        """The slot's value, made by ``make`` the first time."""
        found = self._values.get(slot)
        if found is None:
            found = self._values[slot] = make()
        return cast(T, found)


class NodeTable:
    """All schedulable nodes of a session, columnar: arrays are resources x nodes."""

    def __init__(self, space: ResourceSpace, nodes: list[dict[str, Any]]) -> None:
        n = len(nodes)
        r = space.size
        self.space = space
        self.objects = nodes
        self.names: list[str] = [nd["metadata"]["name"] for nd in nodes]
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.labels: list[dict[str, str]] = [nd["metadata"].get("labels") or {} for nd in nodes]
        spec = [nd.get("spec") or {} for nd in nodes]
        self.taints: list[list[dict[str, Any]]] = [s.get("taints") or [] for s in spec]
        self.unschedulable = np.array([bool(s.get("unschedulable")) for s in spec], dtype=bool)
        self.allocatable = np.zeros((r, n))
        self.max_tasks = np.zeros(n)
        for j, nd in enumerate(nodes):
            alloc = (nd.get("status") or {}).get("allocatable") or {}
            self.allocatable[:, j] = space.vector(alloc)
            pods = alloc.get("pods")
            self.max_tasks[j] = float(int_value(pods)) if pods is not None else 0.0
        # One matrix for everything a placed task adds to its node (one write per placement):
        # used resources, cpu/memory with kube-scheduler's non-zero defaults (for scoring), pods.
        self._rows = np.zeros((r + 3, n))
        self.used = self._rows[:r]
        self.nonzero_used = self._rows[r : r + 2]
        self.task_count = self._rows[r + 2]
        self.releasing = np.zeros((r, n))
        self.pipelined = np.zeros((r, n))
        self.tasks: list[dict[str, TaskInfo]] = [{} for _ in range(n)]
        #: How many placed tasks are pipelined / releasing: while both are 0, FutureIdle == Idle.
        self.pipelined_tasks = 0
        self.releasing_tasks = 0
        #: Placed tasks with required pod anti-affinity (while 0, no placed pod repels a new one).
        self.anti_affinity_tasks = 0
        #: Σ allocatable: fixed for the table's life.
        self.total = self.allocatable.sum(axis=1)
        #: Per resource row: every node has some of it (fixed too; scorers then have no zero to leave out).
        self.held_by_all: list[bool] = [n > 0 and bool(self.allocatable[d].all()) for d in range(r)]
        #: Node indices in the order their rows changed; placement caches replay it.
        self.changes: list[int] = []
        #: Per node, ``len(changes)`` right after its last change (0: none since the log was cleared).
        self.changed_at = np.zeros(n, dtype=np.int64)
        #: What the placement engine keeps across sessions for this table.
        self.placement_cache: PlacementCache | None = None
        #: Bumped whenever a task leaves a node: only then can a task that fitted nowhere fit somewhere.
        self.freed = 0
        #: Values that depend only on the nodes' fixed fields (labels, taints) and a task shape, kept
        #: for the table's life by whoever computes them (see :class:`NodeMemo`).
        self.memo = NodeMemo()
        self.any_taints = any(self.taints)
        #: Every GPU of every node (per-GPU slots; empty when no node has GPUs).
        self.gpus = GpuSlots(nodes)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def idle(self) -> np.ndarray:
        """Volcano keeps Idle = Allocatable - Used as a field; here it is derived (one write less per pod)."""
        return self.allocatable - self.used

    def placed_rows(self, idx: np.ndarray) -> np.ndarray:
        """Columns ``idx`` of used (resources), non-zero cpu/memory used and task count, stacked."""
        return self._rows.take(idx, axis=1)

    def future_idle(self) -> np.ndarray:
        return self.idle + self.releasing - self.pipelined

    def future_idle_at(self, j: int) -> np.ndarray:
        return self.allocatable[:, j] - self.used[:, j] + self.releasing[:, j] - self.pipelined[:, j]

    def add_task(self, j: int, task: TaskInfo) -> None:
        status = task.status
        if status & TaskStatus.PIPELINED:
            self.pipelined[:, j] += task.resreq
            self.task_count[j] += 1
            self.pipelined_tasks += 1
        else:
            self._rows[:, j] += task.row
            if status & TaskStatus.RELEASING:
                self.releasing[:, j] += task.resreq
                self.releasing_tasks += 1
        self.tasks[j][task.uid] = task
        self.anti_affinity_tasks += task.anti_affinity
        if task.gpu is not None:
            self._add_gpus(j, task)
        self.changes.append(j)
        self.changed_at[j] = len(self.changes)

    def remove_task(self, j: int, task: TaskInfo) -> None:
        status = task.status
        if status & TaskStatus.PIPELINED:
            self.pipelined[:, j] -= task.resreq
            self.task_count[j] -= 1
            self.pipelined_tasks -= 1
        else:
            self._rows[:, j] -= task.row
            if status & TaskStatus.RELEASING:
                self.releasing[:, j] -= task.resreq
                self.releasing_tasks -= 1
        self.tasks[j].pop(task.uid, None)
        self.anti_affinity_tasks -= task.anti_affinity
        if task.gpu is not None and task.gpu_ids:
            self.gpus.remove(j, task.gpu, task.gpu_ids, float(task.resreq[0]))
        self.freed += 1
        self.changes.append(j)
        self.changed_at[j] = len(self.changes)

    def _add_gpus(self, j: int, task: TaskInfo) -> None:
        """Account the task's GPUs on node ``j``: the ones its annotations name, else the ones the
        slots' policy chooses (a placement by the scheduler)."""
        req = task.gpu
        gpus = self.gpus
        if req is None or gpus.family[j] != req.family:
            return
        ids = task.gpu_ids
        if ids is None:
            ids = (gpus.vgpu_ids_of(j, assigned_vgpu(task.pod)) or None) if req.family == VGPU \
                else assigned_ids(task.pod)
            if ids is None:
                ids = gpus.choose(req, j)
            task.gpu_ids = ids
        if ids:
            gpus.add(j, req, ids, float(task.resreq[0]))

    def changed_since(self, cursor: int) -> np.ndarray:
        """Indices (ascending) of the nodes whose rows changed after ``cursor`` entries of the log."""
        return (self.changed_at > cursor).nonzero()[0]  # 1-D: flatnonzero without its wrappers

    def clear_changes(self) -> None:
        self.changes.clear()
        self.changed_at[:] = 0
