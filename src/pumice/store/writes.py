"""``WritePath``: the writes of the embedded stores (create, update, patch, delete, bind), once.

Every write runs the same steps under the store's re-entrant lock: validate against the current object
(``rules``), run admission (``AdmissionGate``), detect no-ops, take the next resourceVersion, let the backend
make it durable, then apply it to the index and publish it (``WatchHub``). Nothing is visible (to readers or
watches) before the backend has committed it, and a refused or failed write changes nothing.

Stored objects are never mutated in place: every write builds a new dict, so events and the index can share
them. Results are copies the caller owns, or with ``copy=False`` the stored objects themselves, read-only.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Self

from .backend import Backend, StoredEvent
from .errors import AlreadyExists, BadRequest, Conflict, Invalid, NotFound, StoreClosed, StoreError
from .fanout import WatchHub
from .hooks import AdmissionGate
from .jsonutil import copy_json, is_plain_json, normalize_json
from .patch import PATCH_TYPES, apply_patch, merge_patch_shared, merge_status_shared, normalize_patch_type
from .resources import CRDS, ResourceInfo, ResourceRegistry, custom_resources
from .rules import (
    SYSTEM_CREATE_DROPS,
    body_changed,
    check_metadata,
    check_name,
    check_update,
    describe,
    finalized,
    format_timestamp,
    generated_name,
    metadata,
    prepare_update,
    qualified,
    set_condition,
    set_type,
    uuid4_text,
)

__all__ = ["WritePath"]

Index = dict[str, dict[str, dict[str, dict[str, Any]]]]
"""resource -> namespace ("" if cluster-scoped) -> name -> the stored object."""


@dataclass(slots=True)
class _Batch:
    start_rv: int
    undo: list[tuple[str, str, str, dict[str, Any] | None]] = field(default_factory=list)
    events: list[StoredEvent] = field(default_factory=list)
    failure: BaseException | None = None


class WritePath:
    """The write half of ``BaseStore`` (which sets up the state below and adds reads, watches, lifecycle)."""

    _lock: threading.RLock
    _registry: ResourceRegistry
    _objects: Index
    _backend: Backend
    _durable: bool  # False: the backend does nothing, its calls are skipped
    _gate: AdmissionGate
    _hub: WatchHub
    _clock: Callable[[], datetime]
    _clock_text: Callable[[], str] | None  # a clock that also writes the time as text saves the datetime
    _stamp: tuple[datetime, str] | None  # the last (time, timestamp) of ``_now``
    _rng: random.Random | None
    _names_rng: random.Random
    #: (resource, subresource) -> (its info, the subresource checked, both qualified): what ``patch`` checked once
    _routes: dict[tuple[str, str | None], tuple[ResourceInfo, str | None, str]]
    _batch: _Batch | None
    _closed: bool
    _rv: int
    _rv_text: str  # ``str(_rv)``, read far more often than it changes
    _writes: int  # every write applied, rolled back or not: only grows (see ``change_marker``)

    # --- what every operation checks ----------------------------------------------------------------------

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
            raise NotFound(f"{describe(resource, namespace, name)} not found")
        return obj

    def _check_subresource(self, info: ResourceInfo, subresource: str | None) -> str | None:
        if subresource is None:
            return None
        if subresource != "status":
            raise BadRequest(f"unsupported subresource {subresource!r} (only 'status'; use bind() for binding)")
        if not info.has_status:
            raise NotFound(f"{info.name} have no status subresource")
        return subresource

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

    # --- create -------------------------------------------------------------------------------------------

    def create(
        self, resource: str, obj: Mapping[str, Any], *, copy: bool = True, owned: bool = False
    ) -> dict[str, Any]:
        """Store a new object (see ``Store.create``).

        ``owned=True`` hands ``obj`` over: as long as it is plain JSON the store keeps it, and fills in its system
        fields, instead of a copy (anything else is copied and normalized as usual).
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
            meta = metadata(new)
            check_metadata(meta)
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
                target_meta = metadata(target)
                target_meta["name"] = name
                if info.namespaced:
                    target_meta["namespace"] = namespace
                else:
                    target_meta.pop("namespace", None)
                target_meta["uid"] = uid
                target_meta["creationTimestamp"] = stamp
                target_meta["generation"] = 1
                for key in SYSTEM_CREATE_DROPS:
                    target_meta.pop(key, None)
                set_type(info, target)
                return target

            new = system_fields(new)
            if self._gate.vets(resource):  # the hook's answer (changed or new): system fields again
                admitted = self._gate.admit("CREATE", resource, new, None)
                assert admitted is not None
                new = system_fields(admitted)
            return self._commit(resource, namespace, name, "ADDED", new, None, copy)

    def _resolve_name(self, resource: str, namespace: str, meta: dict[str, Any]) -> str:
        name = meta.get("name")
        if name:
            name = check_name(name)
            if self._find(resource, namespace, name) is not None:
                raise AlreadyExists(f"{describe(resource, namespace, name)} already exists")
            return name
        base = meta.get("generateName")
        if not base or not isinstance(base, str):
            raise Invalid("metadata.name: Required value: name or generateName is required")
        for _ in range(16):
            candidate = check_name(generated_name(base, self._names_rng))
            if self._find(resource, namespace, candidate) is None:
                return candidate
        raise AlreadyExists(f"{resource} with generateName {base!r}: could not find a free name, retry")

    # --- update and patch ---------------------------------------------------------------------------------

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
            meta = metadata(incoming)
            name = meta.get("name")
            if not name or not isinstance(name, str):
                raise BadRequest("metadata.name is required to update an object")
            namespace = (meta.get("namespace") or "default") if info.namespaced else ""
            return self._update(info, namespace, name, incoming, self._check_subresource(info, subresource), copy)

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
        meta = metadata(incoming)
        check_metadata(meta)
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
        target = qualified(resource, subresource)
        vetted = self._gate.vets_update(target)
        new = prepare_update(info, old, incoming, subresource, owned=vetted)
        if vetted:
            admitted = self._gate.admit("UPDATE", target, new, old)
            assert admitted is not None
            new = prepare_update(info, old, admitted, subresource, owned=True)
        check_update(info, old, new)
        if subresource is None and body_changed(info, old, new):
            new["metadata"]["generation"] = int(old_meta.get("generation") or 0) + 1
        if new == old:
            return copy_json(old) if copy else old  # a no-op write: no new resourceVersion, no event (as Kubernetes)
        return self._commit_changed(resource, namespace, name, new, old, copy)

    def _commit_changed(
        self, resource: str, namespace: str, name: str, new: dict[str, Any], old: dict[str, Any], copy: bool
    ) -> dict[str, Any]:
        """Commit an update whose ``new`` differs from ``old``: a deletion once its last finalizer is gone."""
        new_meta = new["metadata"]
        if new_meta.get("deletionTimestamp") and finalized(resource, new):
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
        and never touches it again, so its lists and numbers are stored as they are, unchecked and uncopied.
        """
        with self._lock:
            if self._closed:
                self._check_open()
            # the checks of every write, in their order, with what they look up kept once per (resource, subresource)
            try:
                info, sub, target = self._routes[(resource, subresource)]
            except (KeyError, TypeError):  # the first write of its kind, or a bad one (which raises below)
                info = self._registry.info(resource)
                ns = self._scope(info, namespace)
                sub = self._check_subresource(info, subresource)
                target = qualified(resource, sub)
                self._routes[(resource, subresource)] = (info, sub, target)
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
            vetted = self._gate.hook is not None and self._gate.vets_update(target)
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

    # --- delete and bind ----------------------------------------------------------------------------------

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
            self._gate.admit_delete(resource, old)
            if not finalized(resource, old):
                if old_meta.get("deletionTimestamp"):
                    return copy_json(old) if copy else old
                new = {**old, "metadata": dict(old_meta)}  # the rest is shared: stored objects are immutable
                new_meta = new["metadata"]
                new_meta["deletionTimestamp"] = self._now()
                new_meta["deletionGracePeriodSeconds"] = 0
                new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
                if resource == "namespaces":
                    status = old.get("status")
                    new["status"] = {**(status if isinstance(status, dict) else {}), "phase": "Terminating"}
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
            set_condition(new, {"type": "PodScheduled", "status": "True", "lastProbeTime": None}, self._now())
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1
            if self._gate.vets("pods/binding"):
                self._gate.admit("UPDATE", "pods/binding", copy_json(new), old)
            return self._commit("pods", ns, pod_name, "MODIFIED", new, old, copy)

    # --- commit and batches -------------------------------------------------------------------------------

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
        if resource == CRDS:
            self._define_custom()
        if batch is None:
            self._publish(event)
        else:
            batch.undo.append((resource, namespace, name, previous))
            batch.events.append(event)
        return copy_json(new) if copy else new

    def _define_custom(self) -> None:
        """Serve the custom resources of the stored CustomResourceDefinitions (after every write to them)."""
        if CRDS in self._registry:
            crds = self._objects.get(CRDS, {}).get("", {})
            self._registry.define_custom(custom_resources(crds[name] for name in sorted(crds)))

    def _publish(self, event: StoredEvent) -> None:
        self._hub.publish(event)
        # after the event reached every watch: a reader that sees the count move (without the lock, see
        # ``change_marker``) finds the event when it drains, even while another thread is writing
        self._writes += 1

    def _safe_rollback(self) -> None:
        with suppress(Exception):  # the error that made us roll back is the one worth raising
            self._backend.rollback()

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
        if any(resource == CRDS for resource, _, _, _ in batch.undo):
            self._define_custom()
        self._rv, self._rv_text = batch.start_rv, str(batch.start_rv)
        self._writes += 1  # readers polling the count look again
        self._batch = None
