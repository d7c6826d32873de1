"""``BaseStore``: the Kubernetes storage semantics, once, over an in-memory index and a ``Backend``.

Every write runs the same steps under one re-entrant lock: validate against the current object, run
admission, detect no-ops, take the next resourceVersion, let the backend make it durable, then apply it to
the index, append it to the bounded event log and fan it out to watches. Nothing is visible (to readers or
watches) before the backend has committed it, and a refused or failed write changes nothing.

Stored objects are never mutated in place: every write builds a new dict, so events and the index can
share them. ``get``/``list`` and write results are copies the caller owns; watch events hand out the
stored objects themselves, read-only (see ``watch``), so a write costs no copy per watcher.
"""

from __future__ import annotations

import builtins
import random
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Self

from .backend import Backend, NullBackend, StoredEvent
from .errors import AlreadyExists, BadRequest, Conflict, Gone, Invalid, NotFound, StoreClosed, StoreError
from .jsonutil import copy_json, is_plain_json, normalize_json
from .patch import PATCH_TYPES, apply_patch, merge_patch_shared, merge_status_shared, normalize_patch_type
from .protocol import Admission, FieldSelectorArg, LabelSelectorArg, WatchEvent
from .resources import DEFAULT_RESOURCES, ResourceInfo, ResourceRegistry
from .selectors import FieldSelector, LabelSelector, parse_field_selector, parse_label_selector
from .watch import Feed, FeedWatcher, Watcher

__all__ = [
    "DEFAULT_HISTORY",
    "BaseStore",
    "change_marker",
    "format_timestamp",
    "owned_patch",
    "read_only_results",
]

DEFAULT_HISTORY = 10_000
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # as Kubernetes: no vowels, no look-alikes
_MAX_GENERATED_BASE = 58
_SYSTEM_CREATE_DROPS = ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds")
_SYSTEM_UPDATE_KEEPS = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes timestamps (naive means UTC)."""
    tz = moment.tzinfo
    if tz is None:
        moment = moment.replace(tzinfo=UTC)
    m = moment if tz is UTC else moment.astimezone(UTC)
    if m.year < 1000:  # how strftime writes such years depends on the platform
        return m.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{m.year}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}Z"  # strftime's, faster


def read_only_results(store: object) -> dict[str, Any]:
    """Keyword arguments for a store's writes and reads (``get``, ``list``) that skip the copy of the result:
    ``{"copy": False}`` for a ``BaseStore`` (the result is then the stored object, read-only), nothing for any
    other ``Store``.

    For callers that only read what a call returns, or ignore it: ``store.patch(..., **read_only)``.
    """
    return {"copy": False} if isinstance(store, BaseStore) else {}


def owned_patch(store: object) -> dict[str, Any]:
    """Keyword arguments for a store's ``patch`` that hand the patch over (see ``BaseStore.patch``):
    ``{"owned": True}`` for a ``BaseStore``, nothing for any other ``Store``.

    Only for a merge patch of plain JSON (no tuple, no NaN, no enum) built for the call and never touched
    again: the store may keep any part of it.
    """
    return {"owned": True} if isinstance(store, BaseStore) else {}


_UUID4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET = (0x8000 << 48) | (4 << 76)


def uuid4_text(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))``, without building the ``UUID`` (a store write makes many)."""
    bits = bits & _UUID4_CLEAR | _UUID4_SET  # RFC 4122 variant, version 4
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def change_marker(store: object) -> Callable[[], object]:
    """A cheap function whose value changes whenever ``store`` is written, for loops that poll until quiet: a
    ``BaseStore``'s count of writes (read without its lock), any other store's resourceVersion."""
    if isinstance(store, BaseStore):
        return store.writes
    return lambda: store.resource_version  # type: ignore[attr-defined]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    elif not isinstance(meta, dict):
        raise BadRequest("metadata must be an object")
    return meta


def _check_metadata(meta: dict[str, Any]) -> None:
    """The metadata fields the store itself reads (selectors, finalizers, owners) must have their types."""
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is not None and (type(value) is not dict or not all(type(v) is str for v in value.values())):
            raise BadRequest(f"metadata.{key}: expected a map of strings to strings, got {_shape(value, dict)}")
    finalizers = meta.get("finalizers")
    if finalizers is not None and (type(finalizers) is not list or not all(type(f) is str for f in finalizers)):
        raise BadRequest(f"metadata.finalizers: expected a list of strings, got {_shape(finalizers, list)}")
    owners = meta.get("ownerReferences")
    if owners is not None and (type(owners) is not list or not all(type(o) is dict for o in owners)):
        raise BadRequest(f"metadata.ownerReferences: expected a list of objects, got {_shape(owners, list)}")


def _shape(value: Any, expected: type) -> str:
    if type(value) is expected:
        return "an item of another type" if expected is list else "a value that is not a string"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def _qualified(resource: str, subresource: str | None) -> str:
    return resource if subresource is None else f"{resource}/{subresource}"


def _describe(resource: str, namespace: str, name: str) -> str:
    where = f' in namespace "{namespace}"' if namespace else ""
    return f'{resource} "{name}"{where}'


@dataclass(slots=True)
class _WatchEntry:
    watcher: Watcher
    resource: str
    namespace: str | None
    labels: LabelSelector
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


@dataclass(frozen=True, slots=True)
class _Fanout:
    """The watches of one resource, sorted for ``_publish``: the resource's ``feed`` (if any watch reads it),
    the other watches that take every event (``plain``, with their ``pushes`` and the latest ``start`` among
    them) and those that filter (``selective``)."""

    feed: Feed | None
    start: int
    plain: tuple[_WatchEntry, ...]
    pushes: tuple[Callable[[WatchEvent], None], ...]
    selective: tuple[_WatchEntry, ...]

    @classmethod
    def of(cls, entries: Iterable[_WatchEntry], feed: Feed | None) -> _Fanout:
        entries = [e for e in entries if type(e.watcher) is not FeedWatcher]  # those read ``feed``
        plain = tuple(e for e in entries if e.everything and e.namespace is None)
        selective = tuple(e for e in entries if not (e.everything and e.namespace is None))
        return cls(feed, max((e.start for e in plain), default=0), plain, tuple(e.watcher.push for e in plain),
                   selective)


@dataclass(slots=True)
class _Batch:
    start_rv: int
    undo: list[tuple[str, str, str, dict[str, Any] | None]] = field(default_factory=list)
    events: list[StoredEvent] = field(default_factory=list)
    failure: BaseException | None = None


class BaseStore:
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
        self._clock = clock or _utcnow
        #: a clock that also writes the time as text (``format_timestamp(clock())``) saves the store the datetime
        self._clock_text: Callable[[], str] | None = getattr(clock, "rfc3339", None)
        self._admission = admission
        self._history = history
        self._rng = rng
        self._names_rng = rng or random.Random()
        self._registry = ResourceRegistry(DEFAULT_RESOURCES if resources is None else resources)
        self._lock = threading.RLock()
        self._objects: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self._log: deque[StoredEvent] = deque(maxlen=history)
        self._watchers: dict[str, dict[Watcher, _WatchEntry]] = {}
        self._fanouts: dict[str, _Fanout] = {}  # by resource, derived from ``_watchers`` (cleared when it changes)
        self._feeds: dict[str, Feed] = {}  # by resource: the events its ``FeedWatcher``s read
        #: (resource, subresource) -> (its info, the subresource checked, both qualified): what ``patch`` checked once
        self._routes: dict[tuple[str, str | None], tuple[ResourceInfo, str | None, str]] = {}
        self._durable = not isinstance(backend, NullBackend)  # the null backend's calls can be skipped
        self._stamp: tuple[datetime, str] | None = None  # the last (time, timestamp) of ``_now``
        self._batch: _Batch | None = None
        self._closed = False
        state = backend.load()
        self._rv = state.resource_version
        self._rv_text = str(self._rv)  # ``resource_version``, read far more often than it changes
        self._writes = 0  # every write applied, rolled back or not: only grows (see ``writes``)
        for resource, namespace, name, obj in state.objects:
            self._objects.setdefault(resource, {}).setdefault(namespace, {})[name] = obj
        self._log.extend(state.events[-history:])

    # --- small helpers ------------------------------------------------------------------------------------

    @property
    def resources(self) -> ResourceRegistry:
        """The resource types this store accepts."""
        return self._registry

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the latest write ("0" for an empty store)."""
        with self._lock:
            return self._rv_text

    def writes(self) -> int:
        """How many writes this store applied (rolled-back ones included), read without the lock: an equal count
        means nothing was written in between. For change detection only; it is no resourceVersion."""
        return self._writes

    @property
    def history(self) -> int:
        """How many events the log keeps for resuming watches."""
        return self._history

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")

    def _scope(self, info: ResourceInfo, namespace: str | None) -> str:
        if info.namespaced:
            if not namespace or not isinstance(namespace, str):
                raise BadRequest(f"{info.name} are namespaced: a namespace is required")
            return namespace
        if namespace:
            raise BadRequest(f"{info.name} are cluster-scoped: got namespace {namespace!r}")
        return ""

    def _find(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        by_namespace = self._objects.get(resource)
        by_name = None if by_namespace is None else by_namespace.get(namespace)
        return None if by_name is None else by_name.get(name)

    def _require(self, resource: str, namespace: str, name: str) -> dict[str, Any]:
        obj = self._find(resource, namespace, name)
        if obj is None:
            raise NotFound(f"{_describe(resource, namespace, name)} not found")
        return obj

    def _now(self) -> str:
        if self._clock_text is not None:
            return self._clock_text()
        moment = self._clock()
        stamp = self._stamp
        if stamp is None or (stamp[0] is not moment and stamp[0] != moment):  # a virtual clock stands still
            stamp = self._stamp = (moment, format_timestamp(moment))
        return stamp[1]

    def _new_uid(self) -> str:
        if self._rng is None:
            return str(uuid.uuid4())
        return uuid4_text(self._rng.getrandbits(128))

    def _generated_name(self, base: str) -> str:
        suffix = "".join(self._names_rng.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))
        return base[:_MAX_GENERATED_BASE] + suffix

    @staticmethod
    def _set_type(info: ResourceInfo, obj: dict[str, Any]) -> None:
        if not obj.get("kind") or not obj.get("apiVersion"):  # fill in, keeping them first as on the wire
            rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
            head = {
                "apiVersion": obj.get("apiVersion") or info.api_version,
                "kind": obj.get("kind") or info.kind,
            }
            obj.clear()
            obj.update(head)
            obj.update(rest)
        kind = obj["kind"]
        if kind != info.kind:
            raise BadRequest(f"kind {kind!r} does not belong to resource {info.name!r} (expected {info.kind!r})")
        api_version = obj["apiVersion"]
        if not isinstance(api_version, str) or api_version.rpartition("/")[0] != info.group:
            raise BadRequest(
                f"apiVersion {api_version!r} does not belong to resource {info.name!r} (expected {info.api_version!r})"
            )

    @staticmethod
    def _check_name(name: Any) -> str:
        if not isinstance(name, str) or not name:
            raise Invalid("metadata.name: Required value: name or generateName is required")
        if len(name) > 253 or "/" in name or "%" in name or name in (".", ".."):
            raise Invalid(f"metadata.name: Invalid value: {name!r}: not a valid object name")
        return name

    def _check_subresource(self, info: ResourceInfo, subresource: str | None) -> str | None:
        if subresource is None:
            return None
        if subresource != "status":
            raise BadRequest(f"unsupported subresource {subresource!r} (only 'status'; use bind() for binding)")
        if not info.has_status:
            raise NotFound(f"{info.name} have no status subresource")
        return subresource

    def _vets(self, resource: str) -> bool:
        """Whether the admission hook wants to see writes to ``resource`` (qualified with a subresource).

        A hook may declare the resources it vets (``resources``); every other write skips it, and with it
        the copies that protect the stored objects from it.
        """
        hook = self._admission
        if hook is None:
            return False
        scope = getattr(hook, "resources", None)
        return scope is None or resource in scope

    def _vets_delete(self, resource: str) -> bool:
        """Whether the admission hook wants to see deletions of ``resource`` (its ``deletes``, if declared)."""
        scope = getattr(self._admission, "deletes", None)
        return self._vets(resource) if scope is None else resource in scope

    def _admit(
        self, operation: str, resource: str, new: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        if not self._vets(resource):
            return new
        assert self._admission is not None
        result = self._admission(operation, resource, new, None if old is None else copy_json(old))
        if operation == "DELETE":
            return None
        if result is None:
            result = new
        if not isinstance(result, dict):
            raise TypeError(f"admission returned {type(result).__name__}, expected a dict or None")
        if result is new and getattr(self._admission, "plain_results", False):
            return new  # plain JSON, changed in place at most, as the hook promises: no copy needed
        return normalize_json(result)

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

    # --- writes -------------------------------------------------------------------------------------------

    def create(
        self, resource: str, obj: Mapping[str, Any], *, copy: bool = True, owned: bool = False
    ) -> dict[str, Any]:
        """Store a new object (see ``Store.create``).

        Every write returns a copy the caller owns; with ``copy=False`` it returns the stored object itself,
        read-only like a watch event's, which saves a deep copy when the caller only reads it (or not at all).

        ``owned=True`` hands ``obj`` over: a caller that never touches it (nor any part of it) again lets the
        store keep it, and fill in its system fields, instead of a copy, as long as it is plain JSON (anything
        else is copied and normalized as usual).
        """
        with self._lock:
            self._check_open()
            info = self._registry.info(resource)
            if type(obj) is not dict and not isinstance(obj, Mapping):
                raise BadRequest(f"an object must be a JSON object, got {type(obj).__name__}")
            if owned and type(obj) is dict and is_plain_json(obj):
                new = obj
            else:
                new = normalize_json(obj if type(obj) is dict else dict(obj))
            meta = _metadata(new)
            _check_metadata(meta)
            if info.namespaced:
                namespace = meta.get("namespace") or "default"
                if not isinstance(namespace, str):
                    raise BadRequest(f"metadata.namespace must be a string, got {namespace!r}")
            else:
                namespace = ""
            name = self._resolve_name(resource, namespace, meta)
            uid = meta.get("uid") or self._new_uid()
            if not isinstance(uid, str):
                raise BadRequest(f"metadata.uid must be a string, got {uid!r}")
            stamp = self._now()

            def system_fields(target: dict[str, Any]) -> dict[str, Any]:
                target_meta = _metadata(target)
                target_meta["name"] = name
                if info.namespaced:
                    target_meta["namespace"] = namespace
                else:
                    target_meta.pop("namespace", None)
                target_meta["uid"] = uid
                target_meta["creationTimestamp"] = stamp
                target_meta["generation"] = 1
                for key in _SYSTEM_CREATE_DROPS:
                    target_meta.pop(key, None)
                self._set_type(info, target)
                return target

            new = system_fields(new)
            if self._vets(resource):  # the hook's answer (changed or new): system fields again
                admitted = self._admit("CREATE", resource, new, None)
                assert admitted is not None
                new = system_fields(admitted)
            return self._commit(resource, namespace, name, "ADDED", new, None, copy)

    def _resolve_name(self, resource: str, namespace: str, meta: dict[str, Any]) -> str:
        name = meta.get("name")
        if name:
            name = self._check_name(name)
            if self._find(resource, namespace, name) is not None:
                raise AlreadyExists(f"{_describe(resource, namespace, name)} already exists")
            return name
        base = meta.get("generateName")
        if not base or not isinstance(base, str):
            raise Invalid("metadata.name: Required value: name or generateName is required")
        for _ in range(16):
            candidate = self._check_name(self._generated_name(base))
            if self._find(resource, namespace, candidate) is None:
                return candidate
        raise AlreadyExists(f"{resource} with generateName {base!r}: could not find a free name, retry")

    def update(
        self, resource: str, obj: Mapping[str, Any], *, subresource: str | None = None, copy: bool = True
    ) -> dict[str, Any]:
        """Replace an object with optimistic concurrency (see ``Store.update``)."""
        with self._lock:
            self._check_open()
            info = self._registry.info(resource)
            if type(obj) is not dict and not isinstance(obj, Mapping):
                raise BadRequest(f"an object must be a JSON object, got {type(obj).__name__}")
            incoming = normalize_json(dict(obj))
            meta = _metadata(incoming)
            name = meta.get("name")
            if not name or not isinstance(name, str):
                raise BadRequest("metadata.name is required to update an object")
            namespace = (meta.get("namespace") or "default") if info.namespaced else ""
            return self._update(info, namespace, name, incoming, self._check_subresource(info, subresource), copy)

    def _prepare_update(
        self,
        info: ResourceInfo,
        old: dict[str, Any],
        incoming: dict[str, Any],
        subresource: str | None,
        *,
        owned: bool,
    ) -> dict[str, Any]:
        """Apply the rules of an update to ``incoming``: what the caller may and may not change.

        ``incoming``'s top level and its ``metadata`` are the caller's to modify; deeper parts may be shared
        with ``old`` (stored objects are immutable). With ``owned`` the result shares nothing with ``old``
        (it goes to an admission hook, which may modify it in place).
        """
        if subresource == "status":
            new = copy_json(old) if owned else {**old, "metadata": dict(old["metadata"])}
            if "status" in incoming:
                new["status"] = incoming["status"]
            else:
                new.pop("status", None)
            return new
        meta = _metadata(incoming)
        old_meta = old["metadata"]
        for key in _SYSTEM_UPDATE_KEEPS:
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        if info.has_status:
            if "status" in old:
                incoming["status"] = copy_json(old["status"]) if owned else old["status"]
            else:
                incoming.pop("status", None)
        self._set_type(info, incoming)
        return incoming

    def _check_update(self, info: ResourceInfo, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Invariants no update may break, checked after admission."""
        if info.name == "pods":
            old_spec = old.get("spec")
            old_node = (old_spec.get("nodeName") if isinstance(old_spec, dict) else None) or ""
            new_spec = new.get("spec")
            new_node = (new_spec.get("nodeName") if isinstance(new_spec, dict) else None) or ""
            if old_node != new_node:
                raise Invalid(
                    f"spec.nodeName: Forbidden: cannot change from {old_node!r} to {new_node!r} by update; "
                    "use bind() to assign an unbound pod"
                )
        old_meta = old["metadata"]
        if old_meta.get("deletionTimestamp"):
            added = set(new["metadata"].get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise Invalid(
                    f"metadata.finalizers: Forbidden: no new finalizers can be added if the object is "
                    f"being deleted, found new finalizers {sorted(added)}"
                )

    @staticmethod
    def _body_changed(info: ResourceInfo, old: dict[str, Any], new: dict[str, Any]) -> bool:
        skip = ("metadata", "status") if info.has_status else ("metadata",)
        keys = (old.keys() | new.keys()).difference(skip)
        return any(old.get(key) != new.get(key) for key in keys)

    def _update(
        self,
        info: ResourceInfo,
        namespace: str,
        name: str,
        incoming: dict[str, Any],
        subresource: str | None,
        copy: bool = True,
        old: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store ``incoming`` in place of ``old`` (looked up unless given) under the rules of an update."""
        resource = info.name
        if old is None:
            old = self._require(resource, namespace, name)
        old_meta = old["metadata"]
        meta = _metadata(incoming)
        _check_metadata(meta)
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv not in (None, "") and str(wanted_rv) != old_meta["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again"
            )
        wanted_uid = meta.get("uid")
        if wanted_uid and wanted_uid != old_meta.get("uid"):
            raise Conflict(
                f"Precondition failed: UID in precondition: {wanted_uid}, UID in object meta: {old_meta.get('uid')}"
            )
        qualified = _qualified(resource, subresource)
        vetted = self._vets(qualified)
        new = self._prepare_update(info, old, incoming, subresource, owned=vetted)
        if vetted:
            admitted = self._admit("UPDATE", qualified, new, old)
            assert admitted is not None
            new = self._prepare_update(info, old, admitted, subresource, owned=True)
        self._check_update(info, old, new)
        if subresource is None and self._body_changed(info, old, new):
            new["metadata"]["generation"] = int(old_meta.get("generation") or 0) + 1
        return self._commit_update(resource, namespace, name, new, old, copy)

    def _commit_update(
        self, resource: str, namespace: str, name: str, new: dict[str, Any], old: dict[str, Any], copy: bool
    ) -> dict[str, Any]:
        if new == old:
            return copy_json(old) if copy else old  # a no-op write: no new resourceVersion, no event (as Kubernetes)
        return self._commit_changed(resource, namespace, name, new, old, copy)

    def _commit_changed(
        self, resource: str, namespace: str, name: str, new: dict[str, Any], old: dict[str, Any], copy: bool
    ) -> dict[str, Any]:
        """``_commit_update`` for a ``new`` known to differ from ``old``."""
        new_meta = new["metadata"]
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            return self._commit(resource, namespace, name, "DELETED", new, old, copy)
        return self._commit(resource, namespace, name, "MODIFIED", new, old, copy)

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        copy: bool = True,
        owned: bool = False,
    ) -> dict[str, Any]:
        """Apply a merge patch or JSON patch to the current object, then store it as an update.

        ``owned=True`` hands a merge patch over to the store: the caller built it of plain JSON for this call
        and never touches it again, so its lists and numbers are stored as they are, unchecked and uncopied
        (``owned_patch`` gives the keyword for any store).
        """
        with self._lock:
            if self._closed:
                self._check_open()
            # the checks of every write, in their order, with what they look up kept once per (resource, subresource)
            try:
                info, sub, qualified = self._routes[(resource, subresource)]
            except (KeyError, TypeError):  # the first write of its kind, or a bad one (which raises below)
                info = self._registry.info(resource)
                ns = self._scope(info, namespace)
                sub = self._check_subresource(info, subresource)
                qualified = _qualified(resource, sub)
                self._routes[(resource, subresource)] = (info, sub, qualified)
            else:
                ns = namespace if info.namespaced and type(namespace) is str and namespace else \
                    self._scope(info, namespace)
            kind = PATCH_TYPES.get(patch_type) if type(patch_type) is str else None
            if kind is None:
                kind = normalize_patch_type(patch_type)
            if kind == "merge" and type(patch) is not dict and not isinstance(patch, Mapping):
                raise BadRequest("a merge patch must be a JSON object")
            by_namespace = self._objects.get(resource)
            by_name = None if by_namespace is None else by_namespace.get(ns)
            old = None if by_name is None else by_name.get(name)
            if old is None:
                old = self._require(resource, ns, name)
            vetted = self._admission is not None and self._vets(qualified)
            if kind == "merge" and sub == "status" and not vetted and len(patch) == 1 and "status" in patch:
                # the usual status write: only ``status`` changes, so no rule of an update has anything to check
                new = merge_status_shared(old, patch["status"], owned=owned)
                if new is None:  # a no-op write: no new resourceVersion, no event (as Kubernetes)
                    return copy_json(old) if copy else old
                return self._commit_changed(resource, ns, name, new, old, copy)
            if kind == "merge" and not vetted:
                # shares what the patch leaves alone with ``old``: nothing below modifies those parts
                patched = merge_patch_shared(old, dict(patch), owned=owned)
            else:
                patched = apply_patch(old, dict(patch) if isinstance(patch, Mapping) else patch, kind)
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise BadRequest("the patched document is not an object with metadata")
            meta = patched["metadata"]
            if meta.get("name") != name or (info.namespaced and meta.get("namespace") != ns):
                raise BadRequest("a patch cannot change metadata.name or metadata.namespace")
            return self._update(info, ns, name, patched, sub, copy, old)

    def delete(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        *,
        resource_version: str | None = None,
        copy: bool = True,
    ) -> dict[str, Any]:
        """Delete now, or set ``deletionTimestamp`` while finalizers remain; returns the object."""
        with self._lock:
            self._check_open()
            info = self._registry.info(resource)
            ns = self._scope(info, namespace)
            old = self._require(resource, ns, name)
            old_meta = old["metadata"]
            if resource_version not in (None, "") and str(resource_version) != old_meta["resourceVersion"]:
                raise Conflict(
                    f'Operation cannot be fulfilled on {resource} "{name}": the resourceVersion in the '
                    f"precondition ({resource_version}) does not match the object's "
                    f"({old_meta['resourceVersion']})"
                )
            if self._vets_delete(resource):
                assert self._admission is not None
                self._admission("DELETE", resource, None, copy_json(old))
            if old_meta.get("finalizers"):
                if old_meta.get("deletionTimestamp"):
                    return copy_json(old) if copy else old
                new = {**old, "metadata": dict(old_meta)}  # the rest is shared: stored objects are immutable
                new_meta = new["metadata"]
                new_meta["deletionTimestamp"] = self._now()
                new_meta["deletionGracePeriodSeconds"] = 0
                new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
                return self._commit(resource, ns, name, "MODIFIED", new, old, copy)
            return self._commit(resource, ns, name, "DELETED", {**old, "metadata": dict(old_meta)}, old, copy)

    def bind(self, namespace: str, pod_name: str, node_name: str, *, copy: bool = True) -> dict[str, Any]:
        """Assign an unbound pod to a node, exactly once (see ``Store.bind``)."""
        with self._lock:
            self._check_open()
            info = self._registry.info("pods")
            ns = self._scope(info, namespace)
            if not node_name or not isinstance(node_name, str):
                raise BadRequest("a binding needs a target node name")
            old = self._require("pods", ns, pod_name)
            spec = old.get("spec", {})
            if not isinstance(spec, dict):
                raise BadRequest("pod spec is not an object")
            current = spec.get("nodeName")
            if current:
                raise Conflict(f'pod {pod_name} is already assigned to node "{current}"')
            if old["metadata"].get("deletionTimestamp"):
                raise Conflict(f"pod {pod_name} is being deleted, cannot be assigned to a host")
            # fresh containers along what changes; the rest is shared with ``old`` (stored objects are immutable)
            new = {**old, "metadata": dict(old["metadata"]), "spec": {**spec, "nodeName": node_name}}
            status = old.get("status")
            if isinstance(status, dict):
                conditions = status.get("conditions")
                new["status"] = {**status, "conditions": list(conditions)} if isinstance(conditions, list) \
                    else dict(status)
            self._set_condition(new, {"type": "PodScheduled", "status": "True", "lastProbeTime": None})
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1
            if self._vets("pods/binding"):
                self._admit("UPDATE", "pods/binding", copy_json(new), old)
            return self._commit("pods", ns, pod_name, "MODIFIED", new, old, copy)

    def _set_condition(self, pod: dict[str, Any], condition: dict[str, Any]) -> None:
        status = pod.get("status")
        if not isinstance(status, dict):
            status = pod["status"] = {}
        conditions = status.get("conditions")
        if not isinstance(conditions, list):
            conditions = status["conditions"] = []
        condition = {**condition, "lastTransitionTime": self._now()}
        for index, existing in enumerate(conditions):
            if isinstance(existing, dict) and existing.get("type") == condition["type"]:
                if existing.get("status") == condition["status"]:
                    condition["lastTransitionTime"] = existing.get("lastTransitionTime")
                conditions[index] = condition  # replaced whole, as Kubernetes' UpdatePodCondition does
                return
        conditions.append(condition)

    # --- commit, batches ----------------------------------------------------------------------------------

    def _commit(
        self,
        resource: str,
        namespace: str,
        name: str,
        event_type: Literal["ADDED", "MODIFIED", "DELETED"],
        new: dict[str, Any],
        previous: dict[str, Any] | None,
        copy: bool = True,
    ) -> dict[str, Any]:
        """Persist one write (``new`` is owned and becomes immutable), then publish it."""
        rv = self._rv + 1
        text = new["metadata"]["resourceVersion"] = str(rv)
        event = StoredEvent(rv, event_type, resource, namespace, name, new, previous)
        batch = self._batch
        if not self._durable:
            pass
        elif batch is None:
            try:
                self._backend.record(event)
                self._backend.commit()
            except BaseException:
                self._safe_rollback()
                raise
        else:
            try:
                self._backend.record(event)
            except BaseException as exc:
                batch.failure = exc
                raise
        self._rv, self._rv_text = rv, text
        by_namespace = self._objects.get(resource)
        if by_namespace is None:
            by_namespace = self._objects[resource] = {}
        by_name = by_namespace.get(namespace)
        if by_name is None:
            by_name = by_namespace[namespace] = {}
        if event_type == "DELETED":
            del by_name[name]
        else:
            by_name[name] = new
        if batch is None:
            self._publish(event)
        else:
            batch.undo.append((resource, namespace, name, previous))
            batch.events.append(event)
        return copy_json(new) if copy else new

    def _safe_rollback(self) -> None:
        with suppress(Exception):  # the error that made us roll back is the one worth raising
            self._backend.rollback()

    def _fanout(self, resource: str) -> _Fanout:
        fanout = self._fanouts.get(resource)
        if fanout is None:
            fanout = self._fanouts[resource] = _Fanout.of(self._watchers.get(resource, {}).values(),
                                                          self._feeds.get(resource))
        return fanout

    def _publish(self, event: StoredEvent) -> None:
        self._log.append(event)
        fanout = self._fanouts.get(event.resource) or self._fanout(event.resource)
        feed = fanout.feed
        if feed is not None or fanout.pushes:
            # what every watch without a selector gets (``_deliver``'s answer when all objects match): one shared
            # event, whose object already carries this resourceVersion (set by ``_commit``)
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
            self._deliver(entry, event)
        # after the event reached every watch: a reader that sees the count move (without the lock, see
        # ``writes``) finds the event when it drains, even while another thread is writing
        self._writes += 1

    @contextmanager
    def batch(self) -> Iterator[Self]:
        """Group writes into one transaction, acknowledged (durable and visible) when the block exits.

        Other threads wait until then; watches see the writes only after the commit. If the block raises,
        every write in it is rolled back and no watch sees any of them. Nested batches join the outer one.
        """
        with self._lock:
            self._check_open()
            if self._batch is not None:
                yield self
                return
            batch = self._batch = _Batch(self._rv)
            try:
                yield self
                if batch.failure is not None:
                    raise StoreError(f"batch rolled back: a write failed to persist: {batch.failure}")
                if batch.events:
                    self._backend.commit()
            except BaseException:
                self._rollback_batch(batch)
                raise
            self._batch = None
            for event in batch.events:
                self._publish(event)

    def _rollback_batch(self, batch: _Batch) -> None:
        self._safe_rollback()
        for resource, namespace, name, previous in reversed(batch.undo):
            by_name = self._objects.setdefault(resource, {}).setdefault(namespace, {})
            if previous is None:
                by_name.pop(name, None)
            else:
                by_name[name] = previous
        self._rv, self._rv_text = batch.start_rv, str(batch.start_rv)
        self._writes += 1  # readers polling the count look again
        self._batch = None

    # --- watches ------------------------------------------------------------------------------------------

    def _oldest_watchable(self) -> int:
        """The oldest resourceVersion a watch can start from: every later event is still in the log."""
        return self._log[0].resource_version - 1 if self._log else self._rv

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
            everything = labels.empty and fields.empty
            listed = resource_version in (None, "", "0")
            start = self._rv
            if not listed:
                if not isinstance(resource_version, str) or not resource_version.isdigit():
                    raise BadRequest(f"invalid resourceVersion {resource_version!r}")
                start = int(resource_version)
                oldest = self._oldest_watchable()
                if start < oldest:
                    raise Gone(f"too old resource version: {start} ({oldest})")
            # the feed carries every event published from now on: not for a watch from a later version, nor
            # for one started inside a batch (whose events, published at its end, are older than the watch)
            fed = (everything and ns is None and not copy and not allow_bookmarks and start <= self._rv
                   and self._batch is None)
            watcher = FeedWatcher(on_close=self._unregister) if fed else Watcher(on_close=self._unregister, copy=copy)
            entry = _WatchEntry(watcher, resource, ns, labels, fields, allow_bookmarks, start, everything, fields.empty)
            if listed:
                for obj in self._iter_objects(resource, ns if info.namespaced else ""):
                    if entry.matches(obj):
                        watcher.put("ADDED", obj, obj["metadata"]["resourceVersion"])
            else:
                for event in self._log:
                    self._deliver(entry, event)
            if type(watcher) is FeedWatcher:
                feed = self._feeds.get(resource)
                if feed is None:
                    feed = self._feeds[resource] = Feed()
                feed.join(watcher)
            self._watchers.setdefault(resource, {})[watcher] = entry
            self._fanouts.pop(resource, None)
            return watcher

    @staticmethod
    def _deliver(entry: _WatchEntry, event: StoredEvent) -> None:
        """Send ``event`` to one watch; selector transitions become ADDED / DELETED, as in Kubernetes."""
        if event.resource_version <= entry.start or event.resource != entry.resource:
            return
        if entry.namespace is not None and event.namespace != entry.namespace:
            return
        previous = event.previous
        was = previous is not None and entry.matches(previous)
        if event.type == "DELETED":
            if was:
                entry.watcher.put("DELETED", event.object, str(event.resource_version))
            return
        now = entry.matches(event.object) if previous is None else entry.matches_after(event.object, previous, was)
        if now:
            entry.watcher.put("MODIFIED" if was else "ADDED", event.object, str(event.resource_version))
        elif was:
            assert previous is not None
            entry.watcher.put("DELETED", previous, str(event.resource_version))

    def _unregister(self, watcher: Watcher) -> None:
        with self._lock:
            for resource, entries in self._watchers.items():
                if entries.pop(watcher, None) is not None and type(watcher) is FeedWatcher:
                    feed = self._feeds.get(resource)
                    if feed is not None:
                        feed.leave(watcher)
                        if not feed.watchers:
                            del self._feeds[resource]
            self._fanouts.clear()

    def bookmark(self) -> None:
        """Send a BOOKMARK with the latest committed resourceVersion to watches that allow bookmarks."""
        with self._lock:
            self._check_open()
            rv = self._batch.start_rv if self._batch is not None else self._rv
            for entries in self._watchers.values():
                for entry in entries.values():
                    if entry.allow_bookmarks and rv >= entry.start:
                        entry.watcher.put("BOOKMARK", None, str(rv))

    # --- lifecycle ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every watch and the backend; later calls raise ``StoreClosed``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            watchers = [w for entries in self._watchers.values() for w in entries]
            self._watchers.clear()
            self._fanouts.clear()
            self._feeds.clear()
            for watcher in watchers:
                watcher.close()
            self._backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} rv={self._rv} closed={self._closed}>"
