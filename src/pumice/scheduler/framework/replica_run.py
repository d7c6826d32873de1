"""Replicas placed in a row, at once.

The allocate walk places a job's tasks one by one: the queue admits the task (AllocatableFn), a node is
chosen, the task is placed (the job's counts, the node, the plugins' event handlers), and the job is
checked for readiness. While a score ladder answers the next replicas of one shape (``Placer.live_picks``),
the choice itself is a heap pop, and the rest is bookkeeping per pod. A *run* takes those steps once for
the replicas at the head of the worksheet: how many the queue admits in a row and how many the job still
needs to be ready are asked of the plugins (the capabilities below), the nodes are picked one after the
other, and the job's counts and the event handlers take the run at once — the same decisions and the same
state as the one-by-one walk, which goes on from there (a property test compares the two). A run is placed
only when every plugin involved offers its part; otherwise the walk does it all, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pumice.scheduler.framework.points import ALLOCATABLE, JOB_READY, PRE_PREDICATE
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session
    from pumice.scheduler.framework.statement import Statement
    from pumice.scheduler.topology.worksheet import TaskSheet


@runtime_checkable
class AllocatableRun(Protocol):
    """A plugin capability (optional): its AllocatableFn for replicas placed in a row."""

    def allocatable_run(self, queue: QueueInfo, task: TaskInfo, n: int) -> int | None:
        """How many of ``n`` replicas like ``task``, placed one after the other with the plugin's event handler
        run after each, its AllocatableFn admits before its first refusal; None: it cannot say."""
        ...


@runtime_checkable
class ReadyRun(Protocol):
    """A plugin capability (optional): when its JobReadyFn turns true as the job's pending tasks are placed."""

    def placements_to_ready(self, job: JobInfo) -> int | None:
        """How many more of the job's pending (not best-effort) tasks placed make its JobReadyFn true; None:
        it cannot say (e.g. per-role minimums)."""
        ...


@dataclass(slots=True)
class RunHooks:
    """The plugins that answer for a run: every AllocatableFn's and every JobReadyFn's."""

    allocatable: list[AllocatableRun]
    ready: list[ReadyRun]


def run_hooks(ssn: Session) -> RunHooks | None:
    """The session's run hooks, if runs can be placed at all: every AllocatableFn and JobReadyFn plugin offers
    its capability, every allocate event handler takes a run, and no PrePredicateFn is enabled."""
    if ssn.callbacks(PRE_PREDICATE) or not ssn.allocates_runs():
        return None
    allocatable = ssn.offers(ALLOCATABLE, AllocatableRun)
    ready = ssn.offers(JOB_READY, ReadyRun)
    if allocatable is None or ready is None:
        return None
    return RunHooks(allocatable, ready)


def place_run(hooks: RunHooks, stmt: Statement, job: JobInfo, queue: QueueInfo, sheet: TaskSheet,
              pick: Callable[[], int | None]) -> int:
    """Place the tasks at the head of ``sheet`` that share the first one's shape — as many as the queue admits
    in a row and the job needs to be ready — each on the node ``pick()`` gives; the number placed (taken from
    the sheet). 0: none, the one-by-one walk takes the next task."""
    n = sheet.left()
    for plugin in hooks.ready:
        more = plugin.placements_to_ready(job)
        if more is None:
            return 0
        n = min(n, more)
    # the queue first: once it refuses, each task left is refused one by one, and gathering the run for
    # each of them would walk the sheet again and again
    first = sheet.peek()
    for allocatable in hooks.allocatable:
        if n <= 0:
            return 0
        admitted = allocatable.allocatable_run(queue, first, n)
        if admitted is None:
            return 0
        n = min(n, admitted)
    if n <= 0:
        return 0
    placed = stmt.allocate_run(sheet.head_run(n), pick)
    sheet.skip(placed)
    return placed
