"""``BaseStore``: the Kubernetes storage semantics of the embedded stores, once, over an in-memory index and a
``Backend`` (``MemoryStore``: none; ``SqliteStore``: one SQLite file).

The parts, each in its module: the writes (``writes.WritePath``) with the object rules they apply
(``rules``), the admission hook (``hooks.AdmissionGate``) and the watches with their event log
(``fanout.WatchHub``). This class sets them up and adds reads, watches and the lifecycle.

``get``/``list`` and write results are copies the caller owns (with ``copy=False`` the stored objects,
read-only); watch events hand out the stored objects themselves, read-only (see ``watch``), so a write costs
no copy per watcher.
"""

from __future__ import annotations

import builtins
import random
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, Self

from .backend import Backend, NullBackend
from .errors import BadRequest, Gone
from .fanout import WatchHub
from .hooks import AdmissionGate
from .jsonutil import copy_json
from .protocol import Admission, FieldSelectorArg, LabelSelectorArg
from .resources import DEFAULT_RESOURCES, ResourceInfo, ResourceRegistry
from .selectors import parse_field_selector, parse_label_selector
from .watch import Watcher
from .writes import WritePath

__all__ = ["DEFAULT_HISTORY", "BaseStore"]

DEFAULT_HISTORY = 10_000


def _utcnow() -> datetime:
    return datetime.now(UTC)


class BaseStore(WritePath):
    """Store semantics shared by ``MemoryStore`` and ``SqliteStore`` (see ``pumice.store.protocol.Store``).

    ``clock`` stamps creation/deletion times (a datetime; a clock with an ``rfc3339()`` method gives the text of
    ``format_timestamp(clock())`` directly); ``admission`` vets every write; ``history`` bounds the event
    log that watches can resume from; ``rng`` makes generated uids and names reproducible; ``resources``
    replaces the built-in resource registry.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        clock: Callable[[], datetime] | None = None,
        admission: Admission | None = None,
        history: int = DEFAULT_HISTORY,
        rng: random.Random | None = None,
        resources: Iterable[ResourceInfo] | None = None,
    ) -> None:
        if history < 1:
            raise ValueError("history must keep at least one event")
        self._backend = backend
        self._durable = not isinstance(backend, NullBackend)
        self._clock = clock or _utcnow
        self._clock_text = getattr(clock, "rfc3339", None)
        self._stamp = None
        self._gate = AdmissionGate(admission)
        self._history = history
        self._rng = rng
        self._names_rng = rng or random.Random()
        self._registry = ResourceRegistry(DEFAULT_RESOURCES if resources is None else resources)
        self._lock = threading.RLock()
        self._objects = {}
        self._routes = {}
        self._batch = None
        self._closed = False
        state = backend.load()
        self._rv = state.resource_version
        self._rv_text = str(self._rv)
        self._writes = 0
        for resource, namespace, name, obj in state.objects:
            self._objects.setdefault(resource, {}).setdefault(namespace, {})[name] = obj
        self._define_custom()  # the kinds of the stored CRDs are served again
        self._hub = WatchHub(self._lock, history, state.events[-history:])

    # --- what the store is --------------------------------------------------------------------------------

    @property
    def resources(self) -> ResourceRegistry:
        """The resource types this store accepts."""
        return self._registry

    @property
    def admission(self) -> Admission | None:
        """The hook that vets every write (``None``: none)."""
        return self._gate.hook

    @property
    def history(self) -> int:
        """How many events the log keeps for resuming watches."""
        return self._history

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the latest write ("0" for an empty store)."""
        with self._lock:
            return self._rv_text

    def change_marker(self) -> int:
        """How many writes this store applied (rolled-back ones included), read without the lock: an equal count
        means nothing was written in between, and a moved one that every watch has the events up to it."""
        return self._writes

    # --- reads --------------------------------------------------------------------------------------------

    def get(self, resource: str, namespace: str | None, name: str, *, copy: bool = True) -> dict[str, Any]:
        """A copy of one object (with ``copy=False`` the stored object, read-only); ``NotFound`` if absent."""
        with self._lock:
            self._check_open()
            info = self._registry.info(resource)
            obj = self._require(resource, self._scope(info, namespace), name)
            return copy_json(obj) if copy else obj

    def _iter_objects(self, resource: str, namespace: str | None) -> Iterator[dict[str, Any]]:
        by_namespace = self._objects.get(resource, {})
        namespaces = [namespace] if namespace is not None else sorted(by_namespace)
        for ns in namespaces:
            objects = by_namespace.get(ns, {})
            for name in sorted(objects):
                yield objects[name]

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        label_selector: LabelSelectorArg = None,
        field_selector: FieldSelectorArg = None,
        *,
        copy: bool = True,
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """Copies of the matching objects (with ``copy=False`` the stored ones, read-only) sorted by
        namespace/name, and the current resourceVersion."""
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector)
        with self._lock:
            self._check_open()
            info = self._registry.info(resource)
            ns = self._scope(info, namespace) if namespace else None
            objects = self._iter_objects(resource, ns if info.namespaced else "")
            if labels.empty and fields.empty:
                items = list(objects)
            else:
                items = [obj for obj in objects if labels.matches_object(obj) and fields.matches(obj)]
            return [copy_json(obj) for obj in items] if copy else items, str(self._rv)

    # --- watches ------------------------------------------------------------------------------------------

    def watch(
        self,
        resource: str,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: LabelSelectorArg = None,
        field_selector: FieldSelectorArg = None,
        allow_bookmarks: bool = False,
        *,
        copy: bool = False,
    ) -> Watcher:
        """Events after ``resource_version`` then live ones (see ``Store.watch``); ``Gone`` if compacted.

        Event objects are the store's own, shared by every watch and read-only; ``copy=True`` gives this
        watch private deep copies instead (for a caller that modifies what it receives).

        A watch of every object of a resource (no namespace, no selector, no copies, no bookmarks) reads the
        resource's shared ``Feed`` (a ``FeedWatcher``); any other gets its own queue.
        """
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector)
        with self._lock:
            self._check_open()
            info = self._registry.info(resource)
            ns = self._scope(info, namespace) if namespace else None
            listed = resource_version in (None, "", "0")
            start = self._rv
            if not listed:
                if not isinstance(resource_version, str) or not resource_version.isdigit():
                    raise BadRequest(f"invalid resourceVersion {resource_version!r}")
                start = int(resource_version)
                oldest = self._hub.oldest_watchable(self._rv)
                if start < oldest:
                    raise Gone(f"too old resource version: {start} ({oldest})")
            # the feed carries every event published from now on: not for a watch from a later version, nor
            # for one started inside a batch (whose events, published at its end, are older than the watch)
            fed = start <= self._rv and self._batch is None
            current = self._iter_objects(resource, ns if info.namespaced else "") if listed else None
            return self._hub.open(resource, ns, labels, fields, start=start, allow_bookmarks=allow_bookmarks,
                                  copy=copy, fed=fed, current=current)

    def bookmark(self) -> None:
        """Send a BOOKMARK with the latest committed resourceVersion to watches that allow bookmarks."""
        with self._lock:
            self._check_open()
            self._hub.bookmark(self._batch.start_rv if self._batch is not None else self._rv)

    # --- lifecycle ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every watch and the backend; later calls raise ``StoreClosed``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._hub.close()
            self._backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} rv={self._rv} closed={self._closed}>"
