"""``Dormant``: a group of controllers started only once an object they act on exists.

Most simulations never create a Deployment, a ReplicaSet, a StatefulSet, a batch/v1 Job, a ResourceQuota or a
Volcano CronJob; until one appears, the controllers of those kinds (and the pod watch they share) would only
cost every store write a few idle checks. ``Dormant`` holds one watch per resource instead and builds the
controllers on the first event (or at once when such objects are already stored): they list everything when
built, so nothing that happened before is missed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pumice.clock import Clock
from pumice.store import Store

__all__ = ["Dormant"]


class Dormant:
    """Runs ``build()``'s controllers, built once any object of ``resources`` exists."""

    def __init__(self, store: Store, clock: Clock, resources: Sequence[str],
                 build: Callable[[], Sequence[Any]]) -> None:
        self.store = store
        self.clock = clock
        self._build = build
        self.controllers: tuple[Any, ...] = ()
        self._watches: list[Any] = []
        for resource in resources:
            items, version = store.list(resource)
            watch = store.watch(resource, resource_version=version)
            self._watches.append(watch)
            if items or not isinstance(getattr(watch, "pending", None), int):
                self._wake()  # objects already there, or a watch that cannot tell cheaply whether events wait
                return

    @property
    def awake(self) -> bool:
        return bool(self.controllers)

    def _wake(self) -> None:
        for watch in self._watches:
            watch.close()
        self._watches = []
        self.controllers = tuple(self._build())

    def pending(self) -> bool:
        if self.controllers:
            return any(c.pending() for c in self.controllers)
        for watch in self._watches:  # noqa: SIM110 - called on every round of the manager: no generator
            if watch.pending:
                return True
        return False

    def sync(self) -> bool:
        if not self.controllers:
            if not any(watch.drain() for watch in self._watches):
                return False
            self._wake()
        wrote = False
        for controller in self.controllers:
            if controller.pending():
                wrote |= controller.sync()
        return wrote

    def next_wakeup(self) -> float | None:
        if not self.controllers:
            return None
        return min((due for c in self.controllers if (due := c.next_wakeup()) is not None), default=None)

    def close(self) -> None:
        for watch in self._watches:
            watch.close()
        for controller in self.controllers:
            close = getattr(controller, "close", None)
            if callable(close):
                close()
