"""``ControllerManager``: every controller of ``vc-controller-manager`` over one store and one clock.

``sync()`` runs the controllers in a fixed order until a whole round writes nothing (bounded, so a
controller that keeps writing cannot hang the caller); ``next_wakeup()`` is the earliest time any of
them needs to act again by the clock (TTLs, policy timeouts), or None.
"""

from __future__ import annotations

from typing import Any, Protocol

from pumice.clock import Clock
from pumice.store import Store, change_marker

from .gc import GarbageCollector
from .job import JobController
from .podgroup import PodGroupController
from .queue import QueueController, ensure_default_queues

__all__ = ["Controller", "ControllerManager"]

MAX_ROUNDS = 50


class Controller(Protocol):
    def sync(self) -> bool: ...

    def next_wakeup(self) -> float | None: ...


class ControllerManager:
    """Queue, PodGroup, Job and GC controllers; creates the ``root`` and ``default`` queues."""

    def __init__(self, store: Store, clock: Clock, *, max_rounds: int = MAX_ROUNDS) -> None:
        self.store = store
        self.clock = clock
        self.max_rounds = max_rounds
        ensure_default_queues(store)
        self.queues = QueueController(store, clock)
        self.podgroups = PodGroupController(store, clock)
        self.jobs = JobController(store, clock)
        self.gc = GarbageCollector(store, clock)
        self.controllers: tuple[Controller, ...] = (self.queues, self.podgroups, self.jobs, self.gc)
        self._checked: tuple[tuple[Controller, ...], list[tuple[Any, Any]]] | None = None  # (for, [(sync, pending)])
        self._changes = change_marker(store)  # moves with every store write
        self._quiet: object = None  # its value when a sync last left every controller idle

    def sync(self) -> bool:
        """Run every controller until none writes; True if anything was written.

        A controller that says it has nothing pending (no watch event, no queued work, no timer due: its
        ``pending()``) is not asked, since its ``sync`` would do nothing. None is asked when the store has
        not changed since a sync left them all idle and no timer is due: each would say so.
        """
        if self._checked is None or self._checked[0] is not self.controllers:
            self._checked = (self.controllers, [(c.sync, getattr(c, "pending", None)) for c in self.controllers])
            self._quiet = None
        version = self._changes()
        if version == self._quiet and not self._timer_due():
            return False
        self._quiet = None
        steps = self._checked[1]
        wrote = round_wrote = False
        for _ in range(self.max_rounds):
            round_wrote = False
            for sync, pending in steps:
                if pending is None or pending():
                    round_wrote |= sync()
            if not round_wrote:
                break
            wrote = True
            version = self._changes()  # as the next round starts
        if not round_wrote and self._changes() == version and all(p for _, p in steps):
            self._quiet = version  # the last round wrote nothing: every watch drained, every queue emptied
        return wrote

    def _timer_due(self) -> bool:
        now = None
        for controller in self.controllers:
            due = controller.next_wakeup()
            if due is not None:
                now = self.clock.now() if now is None else now
                if due <= now:
                    return True
        return False

    def next_wakeup(self) -> float | None:
        times = [t for t in (c.next_wakeup() for c in self.controllers) if t is not None]
        return min(times) if times else None
