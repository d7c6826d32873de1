"""``WatchHub``: the watches of an embedded store, the event log they resume from, and the fan-out of writes.

The store calls every method with its lock held (a watch's ``close`` takes it through ``unregister``).
Events are published once committed; each reaches every watch whose resource, namespace and selectors it
matches, with selector transitions turned into ADDED / DELETED as Kubernetes does. Watches of every object of
a resource share one ``Feed`` (one append per write, however many read it); the others get their own queue.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pumice.api.labels import Selector

from .backend import StoredEvent
from .protocol import WatchEvent
from .selectors import FieldSelector
from .watch import Feed, FeedWatcher, Watcher

__all__ = ["WatchEntry", "WatchHub"]


@dataclass(slots=True)
class WatchEntry:
    """One open watch: what it asked for and from which resourceVersion on."""

    watcher: Watcher
    resource: str
    namespace: str | None
    labels: Selector
    fields: FieldSelector
    allow_bookmarks: bool
    start: int
    everything: bool = False  # no selector: every object of the resource (and namespace) matches
    labels_only: bool = False  # no field selector: only labels decide

    def matches(self, obj: dict[str, Any]) -> bool:
        if self.everything:
            return True
        if self.labels_only:
            return self.labels.matches(obj["metadata"].get("labels"))
        return self.labels.matches(obj["metadata"].get("labels")) and self.fields.matches(obj)

    def matches_after(self, obj: dict[str, Any], previous: dict[str, Any], matched: bool) -> bool:
        """``matches(obj)``, knowing that ``previous`` (the state before) ``matched``: the same answer when the
        selector only reads labels and ``obj`` shares its labels with ``previous`` (stored objects share what a
        write left alone)."""
        if self.labels_only and obj["metadata"].get("labels") is previous["metadata"].get("labels"):
            return matched
        return self.matches(obj)

    def deliver(self, event: StoredEvent) -> None:
        """Send ``event`` to this watch if it concerns it; selector transitions become ADDED / DELETED."""
        if event.resource_version <= self.start or event.resource != self.resource:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        previous = event.previous
        was = previous is not None and self.matches(previous)
        if event.type == "DELETED":
            if was:
                self.watcher.put("DELETED", event.object, str(event.resource_version))
            return
        now = self.matches(event.object) if previous is None else self.matches_after(event.object, previous, was)
        if now:
            self.watcher.put("MODIFIED" if was else "ADDED", event.object, str(event.resource_version))
        elif was:
            assert previous is not None
            self.watcher.put("DELETED", previous, str(event.resource_version))


@dataclass(frozen=True, slots=True)
class _Fanout:
    """The watches of one resource, sorted for ``WatchHub.publish``: the resource's ``feed`` (if any watch reads
    it), the other watches that take every event (``plain``, with their ``pushes`` and the latest ``start``
    among them) and those that filter (``selective``)."""

    feed: Feed | None
    start: int
    plain: tuple[WatchEntry, ...]
    pushes: tuple[Callable[[WatchEvent], None], ...]
    selective: tuple[WatchEntry, ...]

    @classmethod
    def of(cls, entries: Iterable[WatchEntry], feed: Feed | None) -> _Fanout:
        entries = [e for e in entries if type(e.watcher) is not FeedWatcher]  # those read ``feed``
        plain = tuple(e for e in entries if e.everything and e.namespace is None)
        selective = tuple(e for e in entries if not (e.everything and e.namespace is None))
        return cls(feed, max((e.start for e in plain), default=0), plain, tuple(e.watcher.push for e in plain),
                   selective)


class WatchHub:
    """Who watches what, the bounded log of recent events, and publishing each event to its watches."""

    def __init__(self, lock: threading.RLock, history: int, events: Iterable[StoredEvent] = ()) -> None:
        self._lock = lock  # the store's: ``unregister`` is called from any thread
        self.log: deque[StoredEvent] = deque(events, maxlen=history)
        self._watchers: dict[str, dict[Watcher, WatchEntry]] = {}
        self._fanouts: dict[str, _Fanout] = {}  # by resource, derived from ``_watchers`` (cleared when it changes)
        self._feeds: dict[str, Feed] = {}  # by resource: the events its ``FeedWatcher``s read

    def oldest_watchable(self, current: int) -> int:
        """The oldest resourceVersion a watch can start from: every later event is still in the log."""
        return self.log[0].resource_version - 1 if self.log else current

    def open(
        self,
        resource: str,
        namespace: str | None,
        labels: Selector,
        fields: FieldSelector,
        *,
        start: int,
        allow_bookmarks: bool,
        copy: bool,
        fed: bool,
        current: Iterable[dict[str, Any]] | None,
    ) -> Watcher:
        """Register a watch from ``start``: first an ``ADDED`` for each object of ``current`` it matches (a watch
        from a listing), or else the logged events after ``start``.

        ``fed``: it may read the resource's shared ``Feed`` (the caller checked that every event published from
        now on is one this watch wants).
        """
        everything = labels.empty and fields.empty
        fed = fed and everything and namespace is None and not copy and not allow_bookmarks
        watcher = FeedWatcher(on_close=self.unregister) if fed else Watcher(on_close=self.unregister, copy=copy)
        entry = WatchEntry(watcher, resource, namespace, labels, fields, allow_bookmarks, start, everything,
                           fields.empty)
        if current is not None:
            for obj in current:
                if entry.matches(obj):
                    watcher.put("ADDED", obj, obj["metadata"]["resourceVersion"])
        else:
            for event in self.log:
                entry.deliver(event)
        if type(watcher) is FeedWatcher:
            feed = self._feeds.get(resource)
            if feed is None:
                feed = self._feeds[resource] = Feed()
            feed.join(watcher)
        self._watchers.setdefault(resource, {})[watcher] = entry
        self._fanouts.pop(resource, None)
        return watcher

    def _fanout(self, resource: str) -> _Fanout:
        fanout = self._fanouts.get(resource)
        if fanout is None:
            fanout = self._fanouts[resource] = _Fanout.of(self._watchers.get(resource, {}).values(),
                                                          self._feeds.get(resource))
        return fanout

    def publish(self, event: StoredEvent) -> None:
        """Log a committed event and hand it to every watch it concerns."""
        self.log.append(event)
        fanout = self._fanouts.get(event.resource) or self._fanout(event.resource)
        feed = fanout.feed
        if feed is not None or fanout.pushes:
            # what every watch without a selector gets (``deliver``'s answer when all objects match): one shared
            # event, whose object already carries this resourceVersion (set when it was committed)
            if event.type != "DELETED":
                shared = WatchEvent("MODIFIED" if event.previous is not None else "ADDED", event.object)
            elif event.previous is not None:
                shared = WatchEvent("DELETED", event.object)
            else:
                shared = None
            if shared is not None:
                if feed is not None:  # its watches started outside any batch: every event published is theirs
                    feed.append(shared)
                version = event.resource_version
                if not fanout.pushes:
                    pass
                elif version > fanout.start:  # nothing below (un)registers a watch: the store's lock is held
                    for push in fanout.pushes:
                        push(shared)
                else:  # a batch's event, older than a watch started during the batch
                    for entry in fanout.plain:
                        if version > entry.start:
                            entry.watcher.push(shared)
        for entry in fanout.selective:
            entry.deliver(event)

    def unregister(self, watcher: Watcher) -> None:
        """Forget a watch (its ``close`` calls this)."""
        with self._lock:
            for resource, entries in self._watchers.items():
                if entries.pop(watcher, None) is not None and type(watcher) is FeedWatcher:
                    feed = self._feeds.get(resource)
                    if feed is not None:
                        feed.leave(watcher)
                        if not feed.watchers:
                            del self._feeds[resource]
            self._fanouts.clear()

    def bookmark(self, version: int) -> None:
        """Send a BOOKMARK at ``version`` to every watch that allows bookmarks and started at or before it."""
        for entries in self._watchers.values():
            for entry in entries.values():
                if entry.allow_bookmarks and version >= entry.start:
                    entry.watcher.put("BOOKMARK", None, str(version))

    def close(self) -> None:
        """Close every watch."""
        watchers = [w for entries in self._watchers.values() for w in entries]
        self._watchers.clear()
        self._fanouts.clear()
        self._feeds.clear()
        for watcher in watchers:
            watcher.close()
