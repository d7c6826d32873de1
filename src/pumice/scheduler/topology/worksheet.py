"""Allocate worksheets: a SubJob's pending tasks in task order (a plain job has one SubJob) and a
topology job's SubJobs in order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cmp_to_key
from typing import TYPE_CHECKING, Any

from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.model import JobInfo, Shape, TaskInfo, TaskStatus
from pumice.scheduler.topology.subjobs import JobTopology, SubJob

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session

SubJobLess = Callable[[SubJob, SubJob], bool]


class TaskSheet:
    """One SubJob's pending tasks (task order) and how many of each shape remain.

    Tasks are only taken from the front and task order is total (UIDs break ties), so a sorted
    list and a cursor serve as Volcano's task queue; a clone (a dry run) shares the list.
    """

    def __init__(self, tasks: list[TaskInfo], shapes: Counter[Shape], start: int = 0) -> None:
        self.tasks = tasks
        self.shapes = shapes
        self.next = start

    def pop(self) -> TaskInfo:
        task = self.tasks[self.next]
        self.next += 1
        self.shapes[task.shape] -= 1
        return task

    def empty(self) -> bool:
        return self.next >= len(self.tasks)

    def peek(self) -> TaskInfo:
        """The next task, not taken."""
        return self.tasks[self.next]

    def left(self) -> int:
        return len(self.tasks) - self.next

    def head_run(self, limit: int) -> list[TaskInfo]:
        """The next tasks (at most ``limit``, without taking them) that share the next one's shape."""
        tasks, start = self.tasks, self.next
        end = min(len(tasks), start + limit)
        shape = tasks[start].shape
        stop = start + 1
        while stop < end and tasks[stop].shape is shape:
            stop += 1
        return tasks[start:stop]

    def skip(self, n: int) -> None:
        """Take the next ``n`` tasks (of one shape: a run placed at once)."""
        if n:
            self.shapes[self.tasks[self.next].shape] -= n
            self.next += n

    def clone(self) -> TaskSheet:
        return TaskSheet(self.tasks, Counter(self.shapes), self.next)

    def take(self, other: TaskSheet) -> None:
        """Volcano ``ShallowCopyFrom``: continue from another (dry-run) copy."""
        self.tasks = other.tasks
        self.shapes = other.shapes
        self.next = other.next


class JobSheet:
    def __init__(self, subjobs: PriorityQueue[SubJob], sheets: dict[str, TaskSheet]) -> None:
        self.subjobs = subjobs
        self.sheets = sheets

    def empty(self) -> bool:
        return self.subjobs.empty()

    def clone(self) -> JobSheet:
        return JobSheet(self.subjobs.clone(), {k: s.clone() for k, s in self.sheets.items()})

    def take(self, other: JobSheet) -> None:
        self.subjobs = other.subjobs
        self.sheets = other.sheets


def schedulable(task: TaskInfo) -> bool:
    """What allocate places: pending, not best-effort (left to backfill), not gated."""
    return (task.status == TaskStatus.PENDING and not task.best_effort
            and not (task.pod.get("spec") or {}).get("schedulingGates"))


def job_sheet(ssn: Session, job: JobInfo) -> TaskSheet | None:
    """The job's schedulable tasks in task order (usually in index order already, which the sort
    then only verifies), or None if it has none. (``schedulable``, inline: this runs for every pod.)"""
    tasks: list[TaskInfo] = []
    shapes: Counter[Shape] = Counter()
    for t in job.tasks.values():
        if t.status != TaskStatus.PENDING or t.best_effort or (t.pod.get("spec") or {}).get("schedulingGates"):
            continue
        tasks.append(t)
        shapes[t.shape] += 1
    if not tasks:
        return None
    return TaskSheet(sort_tasks(ssn, tasks), shapes)


def sort_tasks(ssn: Session, tasks: list[TaskInfo]) -> list[TaskInfo]:
    """``tasks`` in task order: by the plugins' keys where they offer them and every task has an
    index (the usual case), else by the comparisons."""
    key = ssn.task_order_key()
    if key is not None and all(t.index is not None for t in tasks):
        return sorted(tasks, key=key)
    return sorted(tasks, key=cmp_to_key(ssn.task_order_cmp))


def build_job_sheet(ssn: Session, jt: JobTopology, ordered: list[TaskInfo] | None = None) -> JobSheet:
    """Volcano ``organizeJobWorksheet``: SubJobs needed for ``minSubGroups`` come first.

    ``ordered``: the job's tasks in task order, every schedulable one among them (the allocate
    action sorted them when the run began, as Volcano builds its worksheets): then kept as is.
    """
    less = ssn.subjob_order_less
    counts: dict[str, int] = {}
    waiting: list[SubJob] = []
    for sj in jt.subjobs.values():
        ready = ssn.subjob_ready(sj) if jt.has_policy else ssn.job_ready(jt.job)
        if ready:
            counts[sj.gid] = counts.get(sj.gid, 0) + 1
        else:
            waiting.append(sj)
    waiting.sort(key=_cmp_key(less))
    required: set[str] = set()
    for sj in waiting:
        if counts.get(sj.gid, 0) < jt.min_subjobs.get(sj.gid, 0):
            required.add(sj.uid)
            counts[sj.gid] = counts.get(sj.gid, 0) + 1

    def order(left: SubJob, right: SubJob) -> bool:
        lreq, rreq = left.uid in required, right.uid in required
        if lreq != rreq:
            return lreq
        return less(left, right)

    subjobs: PriorityQueue[SubJob] = PriorityQueue(order)
    sheets: dict[str, TaskSheet] = {}
    # Each SubJob's tasks in task order: taken from ``ordered``, or sorted from the job's list
    # (usually in index order already, which the sort then only verifies; task order is total,
    # so the result does not depend on the list's order).
    listed: dict[str, list[TaskInfo]] = {uid: [] for uid in jt.subjobs}
    for t in jt.job.tasks.values() if ordered is None else ordered:
        owner = jt.task_subjob.get(t.uid)
        if owner is not None and schedulable(t):
            listed[owner.uid].append(t)
    for sj in jt.subjobs.values():
        tasks = listed[sj.uid]
        if not tasks:
            continue
        if ordered is None:
            tasks = sort_tasks(ssn, tasks)
        sheets[sj.uid] = TaskSheet(tasks, Counter(t.shape for t in tasks))
        subjobs.push(sj)
    return JobSheet(subjobs, sheets)


def _cmp_key(less: SubJobLess) -> Callable[[SubJob], Any]:
    def cmp(a: SubJob, b: SubJob) -> int:
        if less(a, b):
            return -1
        if less(b, a):
            return 1
        return 0

    return cmp_to_key(cmp)
