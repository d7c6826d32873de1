"""The host's own control plane when pumice hosts the federation (``pumice up --federation``, ``pumice sim``).

The host takes Volcano Jobs and Queues through Volcano's admission rules, but runs none of them: no job
controller, scheduler or nodes (the members do). It keeps what a user of the host still expects: the
``root`` and ``default`` queues, and the Queue controller (Open/Closed and the queue Commands of ``vcctl``).
"""

from __future__ import annotations

from pumice.clock import Clock
from pumice.controllers.mirror import Mirror
from pumice.controllers.queue import QueueController, ensure_default_queues
from pumice.store import Store

__all__ = ["HostControlPlane"]


class HostControlPlane:
    def __init__(self, store: Store, clock: Clock) -> None:
        ensure_default_queues(store)
        self.queues = QueueController(store, clock)

    def sync(self) -> bool:
        return self.queues.sync()

    def next_wakeup(self) -> float | None:
        return self.queues.next_wakeup()

    def close(self) -> None:
        for part in vars(self.queues).values():  # the controller's watches
            if isinstance(part, Mirror):
                part.close()
