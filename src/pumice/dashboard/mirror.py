"""``StoreMirror``: the dashboard's own copy of the objects it shows, kept current by store watches.

Listing a store copies every object on every call (and holds the store's lock meanwhile); a dashboard that
polls would do that every second per open page. The mirror lists once, then applies watch events, so a
read costs the changes since the last read. Nobody looking for ``idle`` seconds: the watches are closed
(a background timer does it, so unread events do not pile up) and the next read starts over.

Objects the dashboard's pages could not read (``pumice.api.wellformed``: a poisoned pod, say) are left out,
as the scheduler leaves them out (and reports them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from pumice.api.wellformed import problem
from pumice.store import Gone, NotFound, Store, StoreError, Watch

__all__ = ["DEFAULT_IDLE", "StoreMirror"]

Obj = dict[str, Any]
DEFAULT_IDLE = 60.0


def _readable(objects: list[Obj]) -> list[Obj]:
    return [o for o in objects if problem(o) is None]


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class _Resource:
    __slots__ = ("objects", "unknown", "watch")

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}
        self.watch: Watch | None = None
        self.unknown = False  # the store does not serve this resource


class StoreMirror:
    """Duck-types the read side of ``Store`` used by :mod:`pumice.dashboard.pages`: ``list`` and
    ``resource_version``. Objects handed out are shared: callers must not mutate them."""

    def __init__(self, store: Store, resources: Iterable[str], *, idle: float = DEFAULT_IDLE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.idle = idle
        self._clock = clock
        self._names = tuple(resources)
        self._resources: dict[str, _Resource] = {}
        self._lock = threading.RLock()
        self._last_used = 0.0
        self._timer: threading.Timer | None = None
        self._closed = False

    @property
    def resource_version(self) -> str:
        return self.store.resource_version

    @property
    def started(self) -> bool:
        return bool(self._resources)

    def _start(self, name: str, res: _Resource) -> None:
        if res.watch is not None:
            res.watch.close()
            res.watch = None
        for _ in range(5):
            try:
                items, rv = self.store.list(name)
            except StoreError as err:
                if getattr(err, "code", None) == 404:  # a resource type this store does not have
                    res.unknown = True
                    res.objects = {}
                    return
                raise
            try:
                res.watch = self.store.watch(name, resource_version=rv)
            except Gone:  # compacted between the list and the watch: list again
                continue
            res.objects = {_key(o): o for o in _readable(items)}
            return
        raise Gone(f"could not start watching {name}")

    def _sync(self, name: str) -> _Resource:
        res = self._resources.get(name)
        if res is None:
            res = self._resources[name] = _Resource()
            self._start(name, res)
            return res
        if res.unknown:
            return res
        watch = res.watch
        if watch is None:
            self._start(name, res)
            return res
        for event in watch.drain():
            if event.type in ("ADDED", "MODIFIED"):
                if problem(event.object) is None:  # else: the last readable version stays
                    res.objects[_key(event.object)] = event.object
            elif event.type == "DELETED":
                res.objects.pop(_key(event.object), None)
        if watch.closed:  # the store ended the watch (e.g. too far behind): start over
            self._start(name, res)
        return res

    def list(self, resource: str, namespace: str | None = None, **_: Any) -> tuple[list[Obj], str]:
        """Current objects of ``resource`` (in ``namespace`` if given), like ``Store.list``; unsorted."""
        with self._lock:
            if self._closed or resource not in self._names:
                items, rv = self.store.list(resource, namespace)
                return _readable(items), rv
            rv = self.store.resource_version
            self._touch()
            res = self._sync(resource)
            if res.unknown:
                raise NotFound(f"the server doesn't have a resource type {resource!r}")
            if namespace is None:
                return list(res.objects.values()), rv
            return [o for (ns, _), o in res.objects.items() if ns == namespace], rv

    # --- idleness ---------------------------------------------------------------------------------------------

    def _touch(self) -> None:
        self._last_used = self._clock()
        if self._timer is None and self.idle > 0:
            self._arm(self.idle)

    def _arm(self, delay: float) -> None:
        timer = threading.Timer(delay, self._check_idle)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _check_idle(self) -> None:
        with self._lock:
            self._timer = None
            if self._closed:
                return
            quiet = self._clock() - self._last_used
            if quiet >= self.idle:
                self._stop_watches()
            else:
                self._arm(self.idle - quiet)

    def _stop_watches(self) -> None:
        for res in self._resources.values():
            if res.watch is not None:
                res.watch.close()
        self._resources.clear()

    def close(self) -> None:
        """Close every watch and the idle timer; later reads go straight to the store."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._stop_watches()
