"""``ControllerManager``: every controller of ``vc-controller-manager`` over one store and one clock.

``sync()`` runs the controllers in a fixed order until a whole round writes nothing (bounded, so a
controller that keeps writing cannot hang the caller); ``next_wakeup()`` is the earliest time any of
them needs to act again by the clock (TTLs, policy timeouts), or None.
"""

from __future__ import annotations

from typing import Any, Protocol

from pumice.clock import Clock
from pumice.store import Store

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

    def sync(self) -> bool:
        """Run every controller until none writes; True if anything was written.

        A controller that says it has nothing pending (no watch event, no queued work, no timer due: its
        ``pending()``) is not asked, since its ``sync`` would do nothing.
        """
        if self._checked is None or self._checked[0] is not self.controllers:
            self._checked = (self.controllers, [(c.sync, getattr(c, "pending", None)) for c in self.controllers])
        steps = self._checked[1]
        wrote = False
        for _ in range(self.max_rounds):
            round_wrote = False
            for sync, pending in steps:
                if pending is None or pending():
                    round_wrote |= sync()
            wrote |= round_wrote
            if not round_wrote:
                break
        return wrote

    def next_wakeup(self) -> float | None:
        times = [t for t in (c.next_wakeup() for c in self.controllers) if t is not None]
        return min(times) if times else None
