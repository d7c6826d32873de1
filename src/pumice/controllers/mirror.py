"""A list+watch mirror of one resource, handing out per-object deltas.

Controllers react to changes, not to the whole world: ``drain`` returns ``(old, new)`` pairs for the
objects that moved since the last call (the first call: every listed object, as added), and keeps
``objects`` current. A controller that writes an object records the result with ``put``/``forget``
right away, so that its next decision in the same pass sees its own write; the watch event that
follows is then a no-op and is dropped.

A version of an object the controllers cannot read (``pumice.api.wellformed.problem``) is not handed out:
the mirror keeps the last version it could read (a new object stays absent), and a warning is logged once for
it, so that one poisoned object cannot stop a controller's work on every other one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pumice.api.wellformed import problem, screened
from pumice.store.errors import Gone

if TYPE_CHECKING:
    from pumice.store import Store
    from pumice.store.protocol import LabelSelectorArg

__all__ = ["Delta", "Mirror", "obj_key"]

Obj = dict[str, Any]
_NO_META: Obj = {}  # read-only

log = logging.getLogger("pumice.controllers")
_warned: dict[tuple[Any, ...], None] = {}  # (kind, key, problem) already logged, by any mirror


def _readable(obj: Obj) -> bool:
    """Whether the controllers can read ``obj``; the first time one cannot, a warning says why."""
    wrong = problem(obj)
    if wrong is None:
        return True
    meta = obj.get("metadata") or _NO_META
    said = (obj.get("kind"), meta.get("namespace"), meta.get("name"), wrong)
    if said not in _warned:
        if len(_warned) > 10_000:
            _warned.clear()
        _warned[said] = None
        log.warning("controllers skip %s %s/%s: %s", obj.get("kind"), meta.get("namespace") or "",
                    meta.get("name"), wrong)
    return False


def obj_key(obj: Obj) -> tuple[str, str]:
    """``(namespace, name)``; the namespace is "" for cluster-scoped objects."""
    meta = obj.get("metadata") or _NO_META
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return (namespace if type(namespace) is str else str(namespace), name if type(name) is str else str(name))


@dataclass(slots=True)
class Delta:
    """One object's change: ``old`` is None when it appeared, ``new`` is None when it went away (read-only;
    not frozen, whose constructor is several times slower)."""

    key: tuple[str, str]
    old: Obj | None
    new: Obj | None


class Mirror:
    """The current objects of ``resource`` (optionally label-filtered), kept in step by a watch."""

    def __init__(self, store: Store, resource: str, label_selector: LabelSelectorArg = None) -> None:
        self.store = store
        self.resource = resource
        self.label_selector = label_selector
        self.objects: dict[tuple[str, str], Obj] = {}
        self._tombstones: dict[tuple[str, str], int] = {}
        self._written: set[tuple[str, str]] = set()  # keys ``put`` since their last event (see ``drain``)
        self._pending: list[Delta] = []
        self._screen = screened(store)  # check what is read (see ``pumice.api.wellformed``)
        self._start()

    def _start(self) -> None:
        items, rv = self.store.list(self.resource, label_selector=self.label_selector)
        fresh = {obj_key(o): o for o in items if not self._screen or _readable(o)}
        for key in sorted(self.objects.keys() - fresh.keys()):
            self._pending.append(Delta(key, self.objects[key], None))
        for key, obj in fresh.items():
            old = self.objects.get(key)
            if old != obj:
                self._pending.append(Delta(key, old, obj))
        self.objects = fresh
        self._written.clear()
        self.watch = self.store.watch(self.resource, resource_version=rv, label_selector=self.label_selector)
        from pumice.store.watch import Watcher  # asyncio's import, for the components only (not pumice schedule)

        self._counted = isinstance(self.watch, Watcher)  # its ``pending`` counts what ``drain`` would hand out

    def drain(self) -> list[Delta]:
        """The changes since the last call (relisting after a compacted watch), in event order."""
        try:
            events = self.watch.drain()
        except Gone:
            self.watch.close()
            self._start()
            events = []
        if not events and not self._pending:
            return []
        deltas, self._pending = self._pending, []
        objects, tombstones, written, screen = self.objects, self._tombstones, self._written, self._screen
        for event in events:
            kind = event.type
            if kind == "BOOKMARK":
                continue
            obj = event.object
            meta = obj.get("metadata") or _NO_META  # obj_key's, inline: this runs for every event
            namespace, name = meta.get("namespace") or "", meta.get("name") or ""
            key = (namespace if type(namespace) is str else str(namespace), name if type(name) is str else str(name))
            tomb = tombstones.get(key) if tombstones else None
            if tomb is not None and _rv(obj) <= tomb:
                if _rv(obj) == tomb:
                    del tombstones[key]
                continue  # our own deletion (or an event from before it)
            old = objects.get(key)
            if old is obj:
                continue  # our own write, recorded with the store's own object (a read-only result)
            if screen and kind != "DELETED" and not _readable(obj):
                continue  # unreadable: the last readable version stays
            if kind == "DELETED":
                if old is None:
                    continue
                del objects[key]
                written.discard(key)
                deltas.append(Delta(key, old, None))
                continue
            if written and key in written:
                # only what we ``put`` can be newer than an event: anything else came from an earlier event
                if old is not None and _rv(old) >= _rv(obj):
                    continue  # already seen (recorded by our own write)
                written.discard(key)
            objects[key] = obj
            deltas.append(Delta(key, old, obj))
        return deltas

    def pending(self) -> bool:
        """Whether ``drain`` may have changes to hand out (True when the watch cannot tell)."""
        if self._pending:
            return True
        if self._counted:
            return self.watch.pending > 0  # type: ignore[attr-defined]
        queued = getattr(self.watch, "pending", None)
        return not isinstance(queued, int) or queued > 0

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.objects.get((namespace, name))

    def put(self, obj: Obj) -> None:
        """Record an object this controller just wrote (the store's answer)."""
        key = obj_key(obj)
        self.objects[key] = obj
        self._written.add(key)

    def forget(self, deleted: Obj) -> None:
        """Record that this controller just deleted an object (``deleted``: the store's answer)."""
        key = obj_key(deleted)
        self.objects.pop(key, None)
        self._written.discard(key)
        self._tombstones[key] = _rv(deleted)

    def close(self) -> None:
        self.watch.close()


def _rv(obj: Obj) -> int:
    value = (obj.get("metadata") or _NO_META).get("resourceVersion") or "0"
    text = value if type(value) is str else str(value)
    return int(text) if text.isdigit() else 0
