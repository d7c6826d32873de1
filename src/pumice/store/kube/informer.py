"""``Informer``: one resource of the API server mirrored in memory, as client-go's reflector + indexer.

List (paginated), then watch from the list's resourceVersion with bookmarks; a watch that ends is resumed
from the last resourceVersion seen (events or bookmarks); ``410 Gone`` (the server compacted past it) lists
again and emits what the watch missed: ``DELETED`` for every object gone, ``ADDED``/``MODIFIED`` for the rest
that changed. The cache serves the store's reads (as client-go listers do), and every change fans out to the
store's local watches, numbered by a store-wide sequence (the store's own resourceVersion, see ``KubeStore``).

The store's writes go *through* the cache: an object a write returned replaces the cached one at once (so a
component reads its own writes), and the watch event that follows with the same resourceVersion is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pumice.api.labels import Selector as LabelSelector
from pumice.store.errors import Gone
from pumice.store.protocol import EventType, WatchEvent
from pumice.store.resources import ResourceInfo
from pumice.store.selectors import FieldSelector
from pumice.store.watch import Watcher

from .http import ApiClient, status_error
from .paths import collection_path

__all__ = ["Informer", "Ledger", "LocalWatch", "object_key", "rv_int"]

log = logging.getLogger("pumice.kube")

Obj = dict[str, Any]
Key = tuple[str, str]
#: Objects per page of a list (client-go's reflector pages by 500).
PAGE = 500
#: Events each informer keeps for local watches that resume from a resourceVersion of the store.
HISTORY = 50_000
WATCH_TIMEOUT = (300, 600)  # seconds, picked at random per watch as client-go does


def object_key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def rv_int(obj: Obj | None) -> int:
    """The object's resourceVersion as a number (-1 when absent or not a number)."""
    if obj is None:
        return -1
    text = (obj.get("metadata") or {}).get("resourceVersion")
    return int(text) if isinstance(text, str) and text.isdigit() else -1


class Ledger:
    """What the informers of one store share: the lock of every cache, the store-wide event sequence, and the
    listeners called after each change (to wake the components that poll the store)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.seq = 0
        self.listeners: list[Callable[[], None]] = []

    def changed(self) -> None:
        for listener in self.listeners:
            listener()


@dataclass(slots=True)
class LocalWatch:
    """One ``KubeStore.watch``: its queue and what it selects."""

    watcher: Watcher
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    bookmarks: bool

    def matches(self, obj: Obj) -> bool:
        if self.namespace is not None and (obj.get("metadata") or {}).get("namespace") != self.namespace:
            return False
        return self.labels.matches((obj.get("metadata") or {}).get("labels")) and self.fields.matches(obj)

    def deliver(self, kind: EventType, obj: Obj, previous: Obj | None) -> None:
        """Send a change; selector transitions become ADDED / DELETED, as Kubernetes watches do."""
        was = previous is not None and self.matches(previous)
        if kind == "DELETED":
            if was or (previous is None and self.matches(obj)):
                self.watcher.push(WatchEvent("DELETED", obj))
            return
        if self.matches(obj):
            self.watcher.push(WatchEvent("MODIFIED" if was else "ADDED", obj))
        elif was:
            assert previous is not None
            self.watcher.push(WatchEvent("DELETED", previous))


class Informer:
    """List+watch of ``info`` through ``api``; cache and local fan-out under ``ledger.lock``."""

    def __init__(self, info: ResourceInfo, api: ApiClient, ledger: Ledger, *,
                 watch_timeout: tuple[int, int] = WATCH_TIMEOUT, history: int = HISTORY) -> None:
        self.info = info
        self.api = api
        self.ledger = ledger
        self.watch_timeout = watch_timeout
        self.objects: dict[Key, Obj] = {}
        self.dirty: set[Key] = set()  # cached objects that are no server state (an assumed binding)
        self.tombstones: dict[Key, int] = {}  # our own deletions: events up to this resourceVersion are old news
        self.server_rv = ""
        self.log: deque[tuple[int, EventType, Obj, Obj | None]] = deque()
        self.history = history
        self.floor = 0  # the sequence number below which the log dropped events
        self.watches: dict[Watcher, LocalWatch] = {}
        self.synced = threading.Event()
        self.error: BaseException | None = None
        self.relists = 0
        self.task: asyncio.Task[None] | None = None
        self._stopped = False

    # --- the cache (``ledger.lock`` held) ------------------------------------------------------------

    def emit(self, kind: EventType, obj: Obj, previous: Obj | None) -> None:
        ledger = self.ledger
        ledger.seq += 1
        log_ = self.log
        log_.append((ledger.seq, kind, obj, previous))
        if len(log_) > self.history:
            self.floor = log_.popleft()[0]
        for entry in self.watches.values():
            entry.deliver(kind, obj, previous)
        ledger.changed()

    def apply(self, kind: str, obj: Obj) -> None:
        """One server event (or a write's answer): newer than the cache, or dropped."""
        key = object_key(obj)
        old = self.objects.get(key)
        if kind == "DELETED":
            self.tombstones.pop(key, None)
            if old is None:
                return
            del self.objects[key]
            self.dirty.discard(key)
            self.emit("DELETED", obj, old)
            return
        tomb = self.tombstones.get(key) if self.tombstones else None
        if tomb is not None:
            if rv_int(obj) <= tomb:
                return
            del self.tombstones[key]
        if old is not None and rv_int(old) >= rv_int(obj):
            return  # seen already (a write's answer came first), or older than what we hold
        self.objects[key] = obj
        self.dirty.discard(key)
        self.emit("MODIFIED" if old is not None else "ADDED", obj, old)

    def replace(self, obj: Obj, *, dirty: bool) -> None:
        """Put ``obj`` in the cache whatever its resourceVersion (an assumed binding, or its undoing)."""
        key = object_key(obj)
        old = self.objects.get(key)
        self.objects[key] = obj
        if dirty:
            self.dirty.add(key)
        else:
            self.dirty.discard(key)
        self.emit("MODIFIED" if old is not None else "ADDED", obj, old)

    def deleted(self, obj: Obj) -> None:
        """Our own deletion of ``obj`` succeeded (``obj``: the server's answer, its last state)."""
        key = object_key(obj)
        self.tombstones[key] = max(rv_int(obj), rv_int(self.objects.get(key)))
        old = self.objects.pop(key, None)
        self.dirty.discard(key)
        if old is not None:
            self.emit("DELETED", obj if obj.get("metadata") else old, old)

    def _relisted(self, items: list[Obj], rv: str) -> None:
        fresh = {object_key(o): o for o in items}
        for key in [k for k in self.objects if k not in fresh]:
            old = self.objects.pop(key)
            self.emit("DELETED", old, old)
        for key, obj in fresh.items():
            before = self.objects.get(key)
            self.objects[key] = obj
            if before is None:
                self.emit("ADDED", obj, None)
            elif key in self.dirty or (before.get("metadata") or {}).get("resourceVersion") != \
                    (obj.get("metadata") or {}).get("resourceVersion"):
                self.emit("MODIFIED", obj, before)
        self.dirty.clear()
        self.tombstones.clear()
        self.server_rv = rv

    # --- list + watch ---------------------------------------------------------------------------------

    async def _list(self, any_version: bool = False) -> tuple[list[Obj], str]:
        """Every object and the list's resourceVersion. ``any_version``: as client-go's first list, served from the
        API server's watch cache (``resourceVersion=0``: maybe a little old, the watch from it catches up), else
        a consistent list from etcd, in pages."""
        path = collection_path(self.info, None)
        items: list[Obj] = []
        params: dict[str, str] = {"resourceVersion": "0"} if any_version else {"limit": str(PAGE)}
        kind = self.info.kind
        api_version = self.info.api_version
        while True:
            try:
                page = await self.api.request("GET", path, params=params, what=f"list {self.info.name}")
            except Gone:  # the continue token expired mid-way: one list without pages
                if "continue" not in params:
                    raise
                items, params = [], {}
                continue
            for item in page.get("items") or []:
                item.setdefault("apiVersion", api_version)  # list items come without their type
                item.setdefault("kind", kind)
                items.append(item)
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                return items, str(meta.get("resourceVersion") or "")
            params = {"limit": str(PAGE), "continue": token}

    async def _watch(self) -> None:
        low, high = self.watch_timeout
        timeout = random.randint(low, high) if high > low else low
        params = {"watch": "1", "resourceVersion": self.server_rv, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(timeout)}
        path = collection_path(self.info, None)
        lock = self.ledger.lock
        async for event in self.api.stream(path, params, read_timeout=timeout + 30):
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                raise status_error(int(obj.get("code") or 500), obj, f"watch {self.info.name}")
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.server_rv = str(rv)
            if kind == "BOOKMARK":
                with lock:
                    for entry in self.watches.values():
                        if entry.bookmarks:
                            entry.watcher.push(WatchEvent("BOOKMARK", {"metadata": {
                                "resourceVersion": str(self.ledger.seq)}}))
                continue
            if kind not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            with lock:
                self.apply(kind, obj)

    async def run(self) -> None:
        """List, then watch for ever (until ``stop``), relisting on ``410 Gone``."""
        need_list = True
        failures = 0
        while not self._stopped:
            try:
                if need_list:
                    items, rv = await self._list(any_version=not self.synced.is_set())
                    with self.ledger.lock:
                        self._relisted(items, rv)
                    if self.synced.is_set():
                        self.relists += 1
                        log.info("%s: listed again after the watch expired (%d objects)", self.info.name, len(items))
                    self.synced.set()
                    need_list = False
                await self._watch()
                failures = 0
            except asyncio.CancelledError:
                raise
            except Gone:
                need_list = True
            except Exception as err:  # a lost connection (aiohttp's errors), a refused request, a bad line: retry
                if not self.synced.is_set() and self.error is None:
                    self.error = err
                    self.synced.set()  # wake whoever waits for the first list: it fails
                    return
                failures += 1
                if failures in (1, 10) or failures % 100 == 0:
                    log.warning("%s: watch failed (%s); retrying", self.info.name, getattr(err, "message", err))
                await asyncio.sleep(min(5.0, 0.1 * 2 ** min(failures, 6)) * (0.5 + random.random() / 2))

    def stop(self) -> None:
        self._stopped = True
        if self.task is not None:
            self.task.cancel()
