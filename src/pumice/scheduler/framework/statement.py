"""Statements: the transactions of a session (Volcano ``framework/statement.go``).

Allocate, pipeline and evict change the session's view at once (so later decisions see them) and
are recorded; ``commit`` turns them into binds and evictions, ``discard`` undoes them in reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pumice.scheduler.model import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session

ALLOCATE, PIPELINE, EVICT = "allocate", "pipeline", "evict"


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[tuple[str, TaskInfo, int, int]] = []
        ssn.statements.append(self)

    def __len__(self) -> int:
        return len(self.operations)

    # --- operations ---------------------------------------------------------------------------
    def allocate(self, task: TaskInfo, node: int) -> None:
        self._place(task, node, TaskStatus.ALLOCATED)
        self.operations.append((ALLOCATE, task, node, TaskStatus.PENDING))

    def pipeline(self, task: TaskInfo, node: int) -> None:
        self._place(task, node, TaskStatus.PIPELINED)
        self.operations.append((PIPELINE, task, node, TaskStatus.PENDING))

    def allocate_run(self, tasks: list[TaskInfo], pick: Callable[[], int | None]) -> int:
        """``allocate`` for replicas of one job in a row, each on the node ``pick()`` gives once the ones
        before it are placed (a ladder extends from the rows placed so far), until it gives None; the job's
        counts and the plugins' event handlers then take the run at once. The number placed."""
        ssn = self.ssn
        nodes = ssn.nodes
        names = nodes.names
        operations = self.operations
        placed = 0
        for task in tasks:
            node = pick()
            if node is None:
                break
            task.status = TaskStatus.ALLOCATED  # counted with the run below
            task.node = node
            task.node_name = names[node]
            nodes.add_task(node, task)
            operations.append((ALLOCATE, task, node, TaskStatus.PENDING))
            placed += 1
        if placed:
            run = tasks[:placed]
            job = run[0].job
            assert job is not None
            ssn.touch(job)
            job.placed_run(run)
            ssn.fire_allocate_run(run)
        return placed

    def evict(self, task: TaskInfo, reason: str) -> None:
        ssn = self.ssn
        node = task.node
        previous = task.status
        task.last_reason = reason
        if task.job is not None:
            ssn.touch(task.job)
        if node >= 0:
            ssn.nodes.remove_task(node, task)
        self._set_status(task, TaskStatus.RELEASING)
        if node >= 0:
            ssn.nodes.add_task(node, task)
        ssn.fire_deallocate(task)
        self.operations.append((EVICT, task, node, previous))

    def _place(self, task: TaskInfo, node: int, status: int) -> None:
        ssn = self.ssn
        job = task.job
        if job is not None:  # touch, then _set_status, inline: once per placement
            if job.uid not in ssn.touched:
                ssn.touch(job)
            job.update_task_status(task, status)
        else:
            task.status = status
        task.node = node
        task.node_name = ssn.nodes.names[node]
        ssn.nodes.add_task(node, task)
        ssn.fire_allocate(task)

    @staticmethod
    def _set_status(task: TaskInfo, status: int) -> None:
        if task.job is not None:
            task.job.update_task_status(task, status)
        else:
            task.status = status

    # --- undo ---------------------------------------------------------------------------------
    def _unplace(self, task: TaskInfo, node: int) -> None:
        ssn = self.ssn
        ssn.nodes.remove_task(node, task)
        self._set_status(task, TaskStatus.PENDING)
        task.gpu_ids = None
        task.node = -1
        task.node_name = ""
        ssn.fire_deallocate(task)

    def _unevict(self, task: TaskInfo, node: int, restore: int) -> None:
        ssn = self.ssn
        if node >= 0:
            ssn.nodes.remove_task(node, task)
        self._set_status(task, restore)
        if node >= 0:
            ssn.nodes.add_task(node, task)
        ssn.fire_allocate(task)

    def discard(self) -> None:
        for op, task, node, previous in reversed(self.operations):
            if op == EVICT:
                self._unevict(task, node, previous)
            else:
                self._unplace(task, node)
        self.operations.clear()

    def commit(self) -> None:
        """Evictions become pod deletions, allocations become binds; pipelines stay in the session.

        The pipelines stay recorded: they hold for this session only (Volcano's next session starts
        from a fresh snapshot, where the pod is pending), so ``Session.revert`` undoes them for a
        cache kept across sessions, and the next session places the pod on the room freed for it."""
        ssn = self.ssn
        for op, task, node, _ in self.operations:
            if op == EVICT:
                task.evicted = True
                ssn.record_eviction(task)
            elif op == ALLOCATE:
                job = task.job
                if job is not None:
                    job.update_task_status(task, TaskStatus.BINDING)
                else:
                    task.status = TaskStatus.BINDING
                ssn.record_bind(task, ssn.nodes.names[node])
        self.operations = [op for op in self.operations if op[0] == PIPELINE]

    def merge(self, other: Statement) -> None:
        self.operations.extend(other.operations)
        other.operations.clear()
