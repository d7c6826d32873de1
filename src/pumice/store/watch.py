"""``Watcher``: a thread-safe queue of watch events with blocking, non-blocking and asyncio readers.

The store pushes events while holding its own lock; a watcher only ever takes its private condition lock,
so a slow reader never blocks writers.

Event objects are shared, not copied: every watcher hands out the very dict the store keeps (stored
objects are never mutated in place, so that is safe), and readers must treat it as read-only. A
watcher created with ``copy=True`` hands out private deep copies instead, for callers that want to
modify what they receive. Either way the resourceVersion handed out is the event's.

A ``FeedWatcher`` is a ``Watcher`` that takes every event of its resource: instead of one queue per watch,
the store appends each event once to the resource's ``Feed``, and every such watch reads it from its own
cursor. A write then costs the same however many of these watches there are, and "anything new?" is a
comparison of two counters, read without a lock.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import suppress
from typing import Any

from .jsonutil import copy_json
from .protocol import EventType, WatchEvent

__all__ = ["Feed", "FeedWatcher", "Watcher"]

#: A feed keeps at least this many events before it drops those every reader is past (soon: the objects of
#: events nobody reads any more are best freed while they are still in the CPU's caches).
TRIM_MIN = 64


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Watcher:
    """A stream of ``WatchEvent``s for one watch request (see ``pumice.store.protocol.Watch``)."""

    def __init__(self, on_close: Callable[[Watcher], None] | None = None, *, copy: bool = False) -> None:
        self._copy = copy
        self._lock = threading.Lock()  # taken directly where nobody waits: cheaper than the condition's methods
        self._cond = threading.Condition(self._lock)
        self._queue: deque[WatchEvent] = deque()
        self._closed = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._blocked = 0  # threads waiting in next(): only then does a put need to notify
        self._on_close = on_close

    # --- producer side ------------------------------------------------------------------------------------

    def put(self, event_type: EventType, obj: dict[str, Any] | None, resource_version: str) -> None:
        """Queue an event. ``obj`` is handed out as is (or copied, with ``copy=True``): never mutate it.

        The handed-out object has ``metadata.resourceVersion = resource_version`` (a shallow copy with a new
        ``metadata`` when ``obj`` carries another one); a ``BOOKMARK`` carries only that field.
        """
        if obj is None:
            obj = {"metadata": {"resourceVersion": resource_version}}
        else:
            meta = obj.get("metadata")
            if isinstance(meta, dict) and meta.get("resourceVersion") != resource_version:
                obj = {**obj, "metadata": {**meta, "resourceVersion": resource_version}}
        self.push(WatchEvent(event_type, obj))

    def push(self, event: WatchEvent) -> None:
        """Queue a ready event, which may be shared with other watches: its object already carries the
        event's resourceVersion, and nobody may mutate either (see ``put``)."""
        lock = self._lock
        lock.acquire()  # not ``with``: measurably cheaper on this path, taken for every watch of every write
        try:
            if self._closed:
                return
            self._queue.append(event)
            if self._blocked:
                self._cond.notify()
            if self._waiters:
                self._wake_async()
        finally:
            lock.release()

    def _wake_async(self) -> None:
        waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with suppress(RuntimeError):  # that event loop is closed: nobody is waiting any more
                loop.call_soon_threadsafe(_wake, future)

    # --- consumer side ------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once closed; events queued before closing can still be read."""
        return self._closed

    @property
    def pending(self) -> int:
        """Number of queued, unread events."""
        return len(self._queue)

    def _materialize(self, event: WatchEvent) -> WatchEvent:
        return WatchEvent(event.type, copy_json(event.object)) if self._copy else event

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event, waiting up to ``timeout`` seconds (``None``: until one arrives or closed)."""
        with self._cond:
            if not self._queue and not self._closed:
                self._blocked += 1
                try:
                    self._cond.wait_for(lambda: bool(self._queue) or self._closed, timeout)
                finally:
                    self._blocked -= 1
            if not self._queue:
                return None
            entry = self._queue.popleft()
        return self._materialize(entry)

    def drain(self) -> list[WatchEvent]:
        """Every queued event, without waiting."""
        if not self._queue:  # the common case of a polled watch; a racing put is seen by the next call
            return []
        with self._lock:
            events = list(self._queue)
            self._queue.clear()
        return [self._materialize(event) for event in events] if self._copy else events

    def __iter__(self) -> Iterator[WatchEvent]:
        """Blocking iteration that ends when the watch is closed and drained."""
        while True:
            event = self.next()
            if event is None:
                return
            yield event

    async def anext(self, timeout: float | None = None) -> WatchEvent | None:
        """Like ``next`` but awaits on the running event loop instead of blocking a thread."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            future: asyncio.Future[None] = loop.create_future()
            with self._cond:
                if self._queue:
                    entry = self._queue.popleft()
                    break
                if self._closed:
                    return None
                waiter = (loop, future)
                self._waiters.append(waiter)
            remaining = None if deadline is None else deadline - loop.time()
            try:
                if remaining is not None and remaining <= 0:
                    return None
                await asyncio.wait_for(future, remaining)
            except TimeoutError:
                return None
            finally:
                with self._cond:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)
        return self._materialize(entry)

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        event = await self.anext()
        if event is None:
            raise StopAsyncIteration
        return event

    def close(self) -> None:
        """Stop the watch: no more events are queued and every waiting reader wakes up."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            self._wake_async()
        if self._on_close is not None:
            self._on_close(self)

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Feed:
    """The events of one resource, in order, for every ``FeedWatcher`` of it; appended by the store only.

    Readers never take a lock to read it: ``count`` moves only after its event was appended, and a trim
    replaces ``segment`` (the events with the absolute index of the first) as a whole, so a reader holding
    the old one still finds everything it held. Events every reader is past are dropped now and then.
    """

    __slots__ = ("async_waiters", "cond", "count", "events", "segment", "trim_at", "waiting", "watchers")

    def __init__(self) -> None:
        self.events: list[WatchEvent] = []  # where the store appends (``segment[1]``)
        self.segment: tuple[int, list[WatchEvent]] = (0, self.events)
        self.count = 0  # events appended so far: the index the next one gets
        self.watchers: dict[FeedWatcher, None] = {}  # the readers, whose cursors bound a trim
        self.cond = threading.Condition(threading.Lock())
        self.waiting = 0  # threads blocked in ``FeedWatcher.next``
        self.async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.trim_at = TRIM_MIN

    def join(self, watcher: FeedWatcher) -> None:
        """Start ``watcher`` at the next event (under the store's lock, as every producer call)."""
        watcher._feed, watcher._cursor = self, self.count
        self.watchers[watcher] = None

    def leave(self, watcher: FeedWatcher) -> None:
        self.watchers.pop(watcher, None)

    def append(self, event: WatchEvent) -> None:
        """Publish ``event`` to every reader (its object carries its resourceVersion; nobody mutates either)."""
        events = self.events
        events.append(event)
        self.count += 1  # after the append: a reader that sees the count move finds the event
        if self.waiting or self.async_waiters:
            self.wake()
        if len(events) >= self.trim_at:
            self._trim()

    def _trim(self) -> None:
        """Drop the events every reader is past (a reader's cursor only grows: a stale read is a safe one)."""
        low = min((w._cursor for w in self.watchers), default=self.count)
        base, events = self.segment
        if low > base:
            self.events = events[low - base:]
            self.segment = (low, self.events)
        self.trim_at = max(TRIM_MIN, 2 * len(self.events))

    def wake(self) -> None:
        """Wake every reader waiting for an event (each looks again whether one is for it)."""
        with self.cond:
            self.cond.notify_all()
            waiters, self.async_waiters = self.async_waiters, []
        for loop, future in waiters:
            with suppress(RuntimeError):  # that event loop is closed: nobody is waiting any more
                loop.call_soon_threadsafe(_wake, future)


_DETACHED = Feed()  # what a closed (or not yet joined) ``FeedWatcher`` reads: nothing, ever


class FeedWatcher(Watcher):
    """A ``Watcher`` of every event of one resource, read from the resource's shared ``Feed``.

    Its own queue holds what came before it joined the feed (the initial ADDED events, or the replay from
    the store's log), and what the feed still held for it when it was closed.
    """

    def __init__(self, on_close: Callable[[Watcher], None] | None = None) -> None:
        super().__init__(on_close)
        self._feed = _DETACHED
        self._cursor = 0  # the index in ``_feed`` of the next event to hand out

    def _take(self) -> list[WatchEvent]:
        """The feed's events past the cursor, which moves past them (``_lock`` held)."""
        base, events = self._feed.segment
        fresh = events[self._cursor - base:]
        self._cursor += len(fresh)
        return fresh

    def _pop(self) -> WatchEvent | None:
        """The next event, or None, without waiting."""
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            base, events = self._feed.segment
            index = self._cursor - base
            if index >= len(events):
                return None
            self._cursor += 1
            return events[index]

    @property
    def pending(self) -> int:
        """Number of unread events (read without a lock: an event counted here is there to read)."""
        unread = self._feed.count - self._cursor  # below 0 for a moment when a drain took an uncounted event
        return len(self._queue) + unread if unread > 0 else len(self._queue)

    def drain(self) -> list[WatchEvent]:
        """Every unread event, without waiting."""
        queue = self._queue
        if not queue and self._cursor >= self._feed.count:  # the common case of a polled watch
            return []
        lock = self._lock
        lock.acquire()  # not ``with``: measurably cheaper on this path, taken by every consumer of every write
        try:
            base, events = self._feed.segment
            fresh = events[self._cursor - base:]
            self._cursor += len(fresh)
            if not queue:
                return fresh
            queued = list(queue)
            queue.clear()
        finally:
            lock.release()
        return queued + fresh

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event, waiting up to ``timeout`` seconds (``None``: until one arrives or closed)."""
        event = self._pop()
        if event is not None or self._closed:
            return event
        feed = self._feed
        with feed.cond:
            feed.waiting += 1  # before looking: a write after the look sees it and wakes us
            try:
                feed.cond.wait_for(lambda: self.pending > 0 or self._closed, timeout)
            finally:
                feed.waiting -= 1
        return self._pop()

    async def anext(self, timeout: float | None = None) -> WatchEvent | None:
        """Like ``next`` but awaits on the running event loop instead of blocking a thread."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            event = self._pop()
            if event is not None:
                return event
            if self._closed:
                return None
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return None
            feed = self._feed
            future: asyncio.Future[None] = loop.create_future()
            waiter = (loop, future)
            with feed.cond:
                feed.async_waiters.append(waiter)
            try:
                if self.pending > 0 or self._closed:  # came after the look above, maybe before we waited
                    continue
                await asyncio.wait_for(future, remaining)
            except TimeoutError:
                return None
            finally:
                with feed.cond:
                    if waiter in feed.async_waiters:
                        feed.async_waiters.remove(waiter)

    def close(self) -> None:
        """Stop the watch: what the feed still held for it stays readable, nothing later arrives."""
        with self._lock:
            if self._closed:
                return
            self._queue.extend(self._take())
            feed = self._feed
            self._feed, self._cursor = _DETACHED, 0
            self._closed = True
        feed.wake()
        if self._on_close is not None:
            self._on_close(self)
