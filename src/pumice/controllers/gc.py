"""The garbage collector (``pkg/controllers/garbagecollector``): finished jobs go after their TTL.

A Job with ``ttlSecondsAfterFinished`` that is Completed, Failed or Terminated is deleted that many
seconds after its last transition, by the clock; its pods, PodGroup and plugin objects go with it
(there is no owner-reference garbage collection in the embedded store).
"""

from __future__ import annotations

import contextlib
import heapq
from datetime import datetime
from typing import Any

from pumice.clock import Clock
from pumice.store import NotFound, Store

from .job import cascade_delete
from .job_state import FINISHED
from .mirror import Mirror
from .names import JOBS

__all__ = ["GarbageCollector", "expires_at"]

Obj = dict[str, Any]
Key = tuple[str, str]


def expires_at(job: Obj) -> float | None:
    """When a finished job with a TTL is due for deletion (seconds since the epoch), else None."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    state = (job.get("status") or {}).get("state") or {}
    if ttl is None or state.get("phase") not in FINISHED:
        return None
    stamp = state.get("lastTransitionTime")
    if not stamp:
        return None
    finished = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    return finished + int(ttl)


class GarbageCollector:
    """Deletes finished jobs whose ``ttlSecondsAfterFinished`` has passed."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.jobs = Mirror(store, JOBS)
        self._due: dict[Key, float] = {}
        self._heap: list[tuple[float, Key]] = []
        for key, job in self.jobs.objects.items():
            self._track(key, job)
        self.jobs.drain()

    def _track(self, key: Key, job: Obj | None) -> None:
        due = None if job is None else expires_at(job)
        if due is None:
            self._due.pop(key, None)
            return
        if self._due.get(key) != due:
            self._due[key] = due
            heapq.heappush(self._heap, (due, key))

    def next_wakeup(self) -> float | None:
        while self._heap and self._due.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)  # stale entry
        return self._heap[0][0] if self._heap else None

    def pending(self) -> bool:
        """Whether ``sync`` has anything to do (see ``ControllerManager.sync``)."""
        if self.jobs.pending():
            return True
        due = self.next_wakeup()
        return due is not None and due <= self.clock.now()

    def sync(self) -> bool:
        for d in self.jobs.drain():
            self._track(d.key, d.new)
        wrote = False
        now = self.clock.now()
        while (due := self.next_wakeup()) is not None and due <= now:
            _, key = heapq.heappop(self._heap)
            del self._due[key]
            job = self.jobs.get(*key)
            if job is None:
                continue
            with contextlib.suppress(NotFound):
                self.jobs.forget(self.store.delete(JOBS, key[0], key[1]))
                wrote = True
            wrote |= cascade_delete(self.store, job)
        return wrote
