"""``KubeStore``: the store protocol over a real Kubernetes API server.

The scheduler, the controllers and the simulated kubelets run on it unchanged. Its shape:

* **Reads** of a resource come from its ``Informer`` (list + watch, a cache as client-go's listers): the first
  ``list``/``watch`` of a resource starts one and waits for its first list; after that, the polling of the
  scheduler and the controllers costs no request. A ``get`` that misses the cache asks the server.
* **resourceVersions** handed out by ``list``, ``resource_version`` and accepted by ``watch`` are the store's
  own growing sequence over every change its informers saw (objects keep the server's resourceVersions): a
  ``list`` then a ``watch`` from its answer never misses a change, also across a relist after ``410 Gone``.
* **Writes** are requests, rate-limited (``qps``/``burst``) and retried (see ``ApiClient``); what a write
  returns goes through the cache at once, so a component reads its own writes. Custom resources are
  merge-patched (strategic merge is refused for them); ``update`` is a PUT with the object's
  resourceVersion (optimistic concurrency: a stale one raises ``Conflict``); status goes to ``/status``.
* **Binds** are pipelined, as kube-scheduler's and Volcano's are: ``bind`` checks the pod in the cache, puts the
  pod *assumed* bound in it (watches see it bound at once) and returns; ``bind_workers`` POST the
  ``pods/binding`` requests concurrently. A binding the server refuses undoes the assumption (the watches see
  the pod as the server has it), as kube-scheduler forgets an assumed pod.
* **Bindings first.** Status writes of custom resources (PodGroup and Queue status) wait until the queued
  binds are sent (up to ``BINDS_FIRST`` s), and **events** (``events``) are written best effort in the background
  after pending binds, as client-go's event broadcaster writes them asynchronously: a cycle's binds are not
  slowed down by its bookkeeping.

Everything asynchronous runs on one asyncio loop in a thread of its own; the protocol's methods are
synchronous and thread-safe.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from pumice.store.errors import BadRequest, Conflict, Gone, NotFound, StoreClosed, StoreError
from pumice.store.jsonutil import copy_json
from pumice.store.protocol import FieldSelectorArg, LabelSelectorArg, WatchEvent
from pumice.store.resources import DEFAULT_RESOURCES, ResourceInfo, ResourceRegistry
from pumice.store.selectors import parse_field_selector, parse_label_selector
from pumice.store.watch import Watcher

from .connection import Connection, ConnectionError_
from .http import JSON_PATCH, MERGE_PATCH, ApiClient
from .informer import WATCH_TIMEOUT, Informer, Ledger, LocalWatch, object_key
from .paths import collection_path, object_path

__all__ = ["KubeStore"]

log = logging.getLogger("pumice.kube")
T = TypeVar("T")
Obj = dict[str, Any]
Key = tuple[str, str]

EVENTS = "events"
#: How long the first list of a resource may take before the caller is told the server does not answer.
SYNC_TIMEOUT = 120.0
#: Longest wait of a status write of a custom resource (PodGroup, Queue, ...) for the binds sent before it.
BINDS_FIRST = 30.0
_ALREADY_ON = 'is already assigned to node "'


class KubeStore:
    """A ``Store`` backed by the API server of ``connection`` (see the module docstring)."""

    #: binds return at once (see ``bind``): the scheduler sends each as its session commits it
    pipelines_binds = True

    def __init__(self, connection: Connection, *, qps: float = 2000.0, burst: int = 2000, bind_workers: int = 32,
                 resources: Iterable[ResourceInfo] | None = None, watch_timeout: tuple[int, int] = WATCH_TIMEOUT,
                 retry_deadline: float = 60.0) -> None:
        self.connection = connection
        self._registry = ResourceRegistry(DEFAULT_RESOURCES if resources is None else resources)
        self._ledger = Ledger()
        self._watch_timeout = watch_timeout
        self._informers: dict[str, Informer] = {}
        self._assumed: dict[Key, tuple[Obj, Obj]] = {}  # pod key -> (assumed object, the object before)
        self._bind_workers = max(1, bind_workers)
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pumice-kube", daemon=True)
        self._thread.start()
        self.api = ApiClient(connection, qps=qps, burst=burst, retry_deadline=retry_deadline)
        self._binds: asyncio.Queue[tuple[str, str, str, str]] | None = None
        self._binds_idle: asyncio.Event | None = None  # set while no bind is queued or in flight
        self._background: asyncio.Queue[tuple[Key, Callable[[], Coroutine[Any, Any, Any]]]] | None = None
        self._binding: dict[Key, asyncio.Future[None]] = {}  # pod key -> done when its binding request ended
        self._incoming: deque[tuple[str, str, str, str]] = deque()  # binds from other threads, not yet queued
        self._incoming_wake = False
        self._later_items: deque[tuple[Key, Callable[[], Coroutine[Any, Any, Any]]]] = deque()
        self._later_wake = False
        self._idle = threading.Condition()
        self._outstanding = 0  # binds and background writes queued or in flight
        self._tasks: list[asyncio.Task[None]] = []
        self.bind_failures = 0
        self.binds_posted = 0
        self._call(self._start_workers())

    # --- the event loop ---------------------------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("KubeStore's synchronous methods cannot be called from its own event loop")
        if self._closed:
            coro.close()
            raise StoreClosed("the store is closed")
        try:
            return asyncio.run_coroutine_threadsafe(coro, self._loop).result()
        except concurrent.futures.CancelledError:  # close() cancelled it: the server never answered
            raise StoreClosed("the store is closed") from None

    async def _start_workers(self) -> None:
        self._binds_idle = asyncio.Event()
        self._binds_idle.set()
        self._binds = asyncio.Queue()
        self._background = asyncio.Queue()
        for _ in range(self._bind_workers):
            self._tasks.append(asyncio.create_task(self._bind_worker()))
        for _ in range(4):
            self._tasks.append(asyncio.create_task(self._background_worker()))

    # --- checks -----------------------------------------------------------------------------------------

    def check(self, required: Iterable[str] = ()) -> str:
        """Reach the server and check that it serves ``required`` resources; its version string.

        Raises ``ConnectionError_`` (unreachable, refused credentials) or ``NotFound`` naming the first missing
        resource (a CRD not applied).
        """
        return self._call(self._check(list(required)))

    async def _check(self, required: list[str]) -> str:
        try:
            version = await self.api.request("GET", "/version", what="GET /version", deadline=0)
        except ConnectionError_:
            raise
        except StoreError as err:
            raise ConnectionError_(f"{self.connection.server}: {err.message}") from None
        groups: dict[str, set[str]] = {}
        for resource in required:
            info = self._registry.info(resource)
            group, _, ver = info.api_version.rpartition("/")
            path = f"/apis/{group}/{ver}" if group else f"/api/{ver}"
            if path not in groups:
                try:
                    doc = await self.api.request("GET", path, what=f"discovery {path}", deadline=0)
                    groups[path] = {str(r.get("name")) for r in doc.get("resources") or []}
                except NotFound:
                    groups[path] = set()
            if resource.split(".", 1)[0] not in groups[path]:
                raise NotFound(f"the API server does not serve {resource} ({info.api_version} {info.kind}): "
                               "apply the CRDs first (pumice crds | kubectl apply -f -)")
        return str(version.get("gitVersion") or "")

    # --- informers --------------------------------------------------------------------------------------

    def _info(self, resource: str) -> ResourceInfo:
        return self._registry.info(resource)

    @property
    def resources(self) -> ResourceRegistry:
        return self._registry

    def informer(self, resource: str, timeout: float = SYNC_TIMEOUT) -> Informer:
        """The informer of ``resource``, started (and its first list waited for) on first use."""
        informer = self._informers.get(resource)
        if informer is None:
            with self._ledger.lock:
                self.start_informers((resource,))
                informer = self._informers[resource]
        if not informer.synced.is_set() and not informer.synced.wait(timeout):
            raise ConnectionError_(f"{self.connection.server}: no answer to the list of {resource} in {timeout:.0f} s")
        if informer.error is not None:
            with self._ledger.lock:
                if self._informers.get(resource) is informer:
                    del self._informers[resource]
            err = informer.error
            if isinstance(err, NotFound):
                raise NotFound(f"the API server does not serve {resource}: {err.message}")
            raise err
        return informer

    def start_informers(self, resources: Iterable[str]) -> None:
        """Start the informers of ``resources`` without waiting: their first lists are under way (a read of one
        waits for its list; a list that fails is that read's error)."""
        with self._ledger.lock:
            for resource in dict.fromkeys(resources):
                if resource not in self._informers:
                    informer = Informer(self._info(resource), self.api, self._ledger,
                                        watch_timeout=self._watch_timeout)
                    self._informers[resource] = informer
                    self._loop.call_soon_threadsafe(self._spawn, informer)

    def prefetch(self, resources: Iterable[str], timeout: float = SYNC_TIMEOUT) -> None:
        """Start the informers of ``resources`` together and wait for all their first lists (faster than one by
        one); raises as ``informer`` does."""
        names = list(dict.fromkeys(resources))
        self.start_informers(names)
        for resource in names:
            self.informer(resource, timeout)

    def _spawn(self, informer: Informer) -> None:
        informer.task = asyncio.create_task(informer.run())

    def watching(self, resource: str) -> bool:
        informer = self._informers.get(resource)
        return informer is not None and informer.synced.is_set() and informer.error is None

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (on the store's thread, keep it short) after every change its informers see."""
        with self._ledger.lock:
            self._ledger.listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        with self._ledger.lock, contextlib.suppress(ValueError):
            self._ledger.listeners.remove(listener)

    # --- protocol: reads --------------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        return str(self._ledger.seq)

    def writes(self) -> int:
        """Grows with every change the informers saw (the store's change marker)."""
        return self._ledger.seq

    def change_marker(self) -> object:
        """A value that moves whenever a watch of this store would see a change (the informers' sequence)."""
        return self._ledger.seq

    def get(self, resource: str, namespace: str | None, name: str, *, copy: bool = True) -> Obj:
        info = self._info(resource)
        ns = (namespace or "default") if info.namespaced else ""
        informer = self._informers.get(resource)
        if informer is not None and informer.synced.is_set() and informer.error is None:
            obj = informer.objects.get((ns, name))
            if obj is not None:
                return copy_json(obj) if copy else obj
        obj = self._call(self.api.request("GET", object_path(info, ns or None, name),
                                          what=f"get {resource} {name}"))
        return obj

    def list(self, resource: str, namespace: str | None = None, label_selector: LabelSelectorArg = None,
             field_selector: FieldSelectorArg = None, *, copy: bool = True) -> tuple[list[Obj], str]:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector)
        informer = self.informer(resource)
        with self._ledger.lock:
            version = str(self._ledger.seq)
            found = [o for (ns, _), o in informer.objects.items()
                     if (not namespace or ns == namespace) and labels.matches((o.get("metadata") or {}).get("labels"))
                     and fields.matches(o)]
        found.sort(key=object_key)
        return ([copy_json(o) for o in found] if copy else found), version

    def watch(self, resource: str, namespace: str | None = None, resource_version: str | None = None,
              label_selector: LabelSelectorArg = None, field_selector: FieldSelectorArg = None,
              allow_bookmarks: bool = False, *, copy: bool = False) -> Watcher:
        entry = LocalWatch(Watcher(on_close=self._unwatch, copy=copy), namespace or None,
                           parse_label_selector(label_selector), parse_field_selector(field_selector), allow_bookmarks)
        informer = self.informer(resource)
        with self._ledger.lock:
            if resource_version in (None, "", "0"):
                for _, obj in sorted(informer.objects.items()):
                    if entry.matches(obj):
                        entry.watcher.push(WatchEvent("ADDED", obj))
            else:
                if not str(resource_version).isdigit():
                    raise BadRequest(f"invalid resourceVersion {resource_version!r}")
                start = int(str(resource_version))
                if start < informer.floor:
                    raise Gone(f"too old resource version: {start} ({informer.floor})")
                for seq, kind, obj, previous in informer.log:
                    if seq > start:
                        entry.deliver(kind, obj, previous)
            informer.watches[entry.watcher] = entry
        return entry.watcher

    def _unwatch(self, watcher: Watcher) -> None:
        with self._ledger.lock:
            for informer in self._informers.values():
                informer.watches.pop(watcher, None)

    def bookmark(self) -> None:
        with self._ledger.lock:
            marker = {"metadata": {"resourceVersion": str(self._ledger.seq)}}
            for informer in self._informers.values():
                for entry in informer.watches.values():
                    if entry.bookmarks:
                        entry.watcher.push(WatchEvent("BOOKMARK", marker))

    # --- protocol: writes -------------------------------------------------------------------------------

    def _through(self, resource: str, obj: Obj) -> None:
        informer = self._informers.get(resource)
        if informer is not None and informer.synced.is_set() and obj.get("metadata"):
            with self._ledger.lock:
                informer.apply("MODIFIED", obj)

    def _result(self, resource: str, obj: Obj, copy: bool) -> Obj:
        obj.setdefault("apiVersion", self._info(resource).api_version)
        obj.setdefault("kind", self._info(resource).kind)
        self._through(resource, obj)
        return copy_json(obj) if copy else obj

    def create(self, resource: str, obj: Mapping[str, Any], *, copy: bool = True, **_: Any) -> Obj:
        info = self._info(resource)
        body = dict(obj)
        meta = dict(body.get("metadata") or {})
        if info.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        meta.pop("resourceVersion", None)
        body["metadata"] = meta
        body.setdefault("apiVersion", info.api_version)
        body.setdefault("kind", info.kind)
        path = collection_path(info, meta.get("namespace"))
        if resource == EVENTS:
            self._later((meta.get("namespace", ""), str(meta.get("name") or "")),
                        lambda: self.api.request("POST", path, body, what=f"create event {meta.get('name')}",
                                                 answer=False))
            return body
        created = self._call(self._write("POST", path, body, what=f"create {resource} {meta.get('name') or ''}"))
        return self._result(resource, created, copy)

    def update(self, resource: str, obj: Mapping[str, Any], *, subresource: str | None = None,
               copy: bool = True, **_: Any) -> Obj:
        info = self._info(resource)
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        ns = (meta.get("namespace") or "default") if info.namespaced else None
        if subresource not in (None, "status"):
            raise BadRequest(f"unsupported subresource {subresource!r} (only 'status'; use bind() for binding)")
        path = object_path(info, ns, name, subresource)
        body: Obj = {**obj, "apiVersion": obj.get("apiVersion") or info.api_version,
                     "kind": obj.get("kind") or info.kind}
        if meta.get("resourceVersion"):
            updated = self._call(self._write("PUT", path, body, what=f"update {resource} {name}"))
            return self._result(resource, updated, copy)
        # no resourceVersion: replace whatever is there (read the current one, retried on a concurrent write)
        for _attempt in range(10):
            current = self._call(self.api.request("GET", object_path(info, ns, name), what=f"get {resource} {name}"))
            body["metadata"] = {**meta, "resourceVersion": (current.get("metadata") or {}).get("resourceVersion")}
            try:
                updated = self._call(self._write("PUT", path, body, what=f"update {resource} {name}"))
            except Conflict:
                continue
            return self._result(resource, updated, copy)
        raise Conflict(f"{resource} {name}: kept changing while being replaced")

    def patch(self, resource: str, namespace: str | None, name: str, patch: Any, *, patch_type: str = "merge",
              subresource: str | None = None, copy: bool = True, **_: Any) -> Obj:
        info = self._info(resource)
        ns = (namespace or "default") if info.namespaced else None
        if subresource not in (None, "status"):
            raise BadRequest(f"unsupported subresource {subresource!r} (only 'status')")
        kinds = {"merge": MERGE_PATCH, MERGE_PATCH: MERGE_PATCH, "json": JSON_PATCH, JSON_PATCH: JSON_PATCH}
        content_type = kinds.get(patch_type)
        if content_type is None:
            raise BadRequest(f"unsupported patch type {patch_type!r} (merge or json; strategic merge is refused "
                             "for custom resources)")
        pinned = isinstance(patch, dict) and "resourceVersion" in (patch.get("metadata") or {})
        path = object_path(info, ns, name, subresource)
        what = f"patch {resource} {name}"
        if resource == EVENTS:
            self._later((ns or "", name), lambda: self.api.request("PATCH", path, patch, content_type=content_type,
                                                                   redo_conflict=True, what=what, answer=False))
            return {"metadata": {"name": name, "namespace": ns}}
        patched = self._call(self._write("PATCH", path, patch, content_type=content_type,
                                         redo_conflict=content_type == MERGE_PATCH and not pinned, what=what,
                                         key=(ns or "", name) if resource == "pods" else None,
                                         after_binds=subresource == "status" and resource != "pods"))
        return self._result(resource, patched, copy)

    def delete(self, resource: str, namespace: str | None, name: str, *, resource_version: str | None = None,
               grace_period_seconds: int | None = None, copy: bool = True, **_: Any) -> Obj:
        info = self._info(resource)
        ns = (namespace or "default") if info.namespaced else None
        options: Obj = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if resource_version:
            options["preconditions"] = {"resourceVersion": resource_version}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = int(grace_period_seconds)
        answer = self._call(self._write("DELETE", object_path(info, ns, name), options,
                                        what=f"delete {resource} {name}",
                                        key=(ns or "", name) if resource == "pods" else None))
        if answer.get("kind") == "Status":  # some resources answer a deletion with a Status
            answer = {"apiVersion": info.api_version, "kind": info.kind,
                      "metadata": {"name": name, **({"namespace": ns} if ns else {})}}
        answer.setdefault("apiVersion", info.api_version)
        answer.setdefault("kind", info.kind)
        informer = self._informers.get(resource)
        meta = answer.get("metadata") or {}
        pending = bool(meta.get("finalizers")) or (bool(meta.get("deletionTimestamp"))
                                                   and int(meta.get("deletionGracePeriodSeconds") or 0) > 0)
        if informer is not None and informer.synced.is_set():
            with self._ledger.lock:
                if pending:
                    informer.apply("MODIFIED", answer)
                else:
                    informer.deleted(answer)
        return copy_json(answer) if copy else answer

    async def _write(self, method: str, path: str, body: Any, *, what: str, content_type: str = "application/json",
                     redo_conflict: bool = False, key: Key | None = None, after_binds: bool = False) -> Obj:
        if key is not None:  # a pod write waits for the binding request of that pod (in order, as written)
            pending = self._binding.get(key)
            if pending is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(pending)
        if after_binds and self._binding:  # status of custom resources: once the queued binds are sent
            assert self._binds_idle is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._binds_idle.wait(), BINDS_FIRST)
        answer: Obj = await self.api.request(method, path, body, content_type=content_type,
                                             redo_conflict=redo_conflict, what=what)
        return answer

    # --- binds ------------------------------------------------------------------------------------------

    def bind(self, namespace: str, pod_name: str, node_name: str, *, copy: bool = True, **_: Any) -> Obj:
        """Assume the pod bound and post its ``pods/binding`` in the background (see the module docstring)."""
        if not node_name or not isinstance(node_name, str):
            raise BadRequest("a binding needs a target node name")
        ns = namespace or "default"
        key = (ns, pod_name)
        informer = self._informers.get("pods")
        with self._ledger.lock:
            pod = None if informer is None or not informer.synced.is_set() else informer.objects.get(key)
            if pod is not None:
                current = (pod.get("spec") or {}).get("nodeName")
                if current:
                    raise Conflict(f'pod {pod_name} is already assigned to node "{current}"')
                if (pod.get("metadata") or {}).get("deletionTimestamp"):
                    raise Conflict(f"pod {pod_name} is being deleted, cannot be assigned to a host")
                assumed = _assumed_bound(pod, node_name)
                self._assumed[key] = (assumed, pod)
                assert informer is not None
                informer.replace(assumed, dirty=True)
                uid = str((pod.get("metadata") or {}).get("uid") or "")
                with self._idle:
                    self._outstanding += 1
        if pod is None:  # not in the cache (pods not watched, or not seen yet): bind and wait for the answer
            self._call(self._post_binding(ns, pod_name, node_name, ""))
            return self.get("pods", ns, pod_name, copy=copy)
        self._incoming.append((ns, pod_name, node_name, uid))
        if not self._incoming_wake:  # one wake-up of the loop for a burst of binds
            self._incoming_wake = True
            self._loop.call_soon_threadsafe(self._queue_binds)
        return copy_json(assumed) if copy else assumed

    def _queue_binds(self) -> None:
        assert self._binds is not None
        self._incoming_wake = False
        incoming = self._incoming
        if incoming and self._binds_idle is not None:
            self._binds_idle.clear()
        while incoming:
            item = incoming.popleft()
            self._binding[(item[0], item[1])] = self._loop.create_future()
            self._binds.put_nowait(item)

    async def _post_binding(self, ns: str, name: str, node: str, uid: str) -> None:
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": ns, **({"uid": uid} if uid else {})},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        path = object_path(self._info("pods"), ns, name, "binding")
        try:
            await self.api.request("POST", path, body, what=f"bind pod {ns}/{name} to {node}", answer=False)
        except Conflict as err:
            if f'{_ALREADY_ON}{node}"' not in err.message:  # our own earlier attempt landed: done
                raise

    async def _bind_worker(self) -> None:
        assert self._binds is not None
        while True:
            ns, name, node, uid = await self._binds.get()
            key = (ns, name)
            try:
                await self._post_binding(ns, name, node, uid)
                self.binds_posted += 1
                with self._ledger.lock:
                    self._assumed.pop(key, None)
            except Exception as err:
                self.bind_failures += 1
                if self.bind_failures <= 20 or self.bind_failures % 1000 == 0:
                    log.warning("binding %s/%s to %s failed: %s", ns, name, node, getattr(err, "message", err))
                self._forget(key)
            finally:
                done = self._binding.pop(key, None)
                if done is not None and not done.done():
                    done.set_result(None)
                if not self._binding and self._binds_idle is not None:
                    self._binds_idle.set()
                self._done_one()

    def _forget(self, key: Key) -> None:
        """Undo an assumed binding: the cache (and every watch) gets the pod back as the server has it."""
        with self._ledger.lock:
            entry = self._assumed.pop(key, None)
            informer = self._informers.get("pods")
            if entry is None or informer is None:
                return
            assumed, before = entry
            if informer.objects.get(key) is assumed:  # no server event replaced it meanwhile
                informer.replace(before, dirty=False)

    def _done_one(self) -> None:
        with self._idle:
            self._outstanding -= 1
            if self._outstanding <= 0:
                self._idle.notify_all()

    # --- background writes (events) ---------------------------------------------------------------------

    def _later(self, key: Key, make: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        if self._closed:
            return
        with self._idle:
            self._outstanding += 1
        self._later_items.append((key, make))
        if not self._later_wake:  # one wake-up of the loop for a burst of them
            self._later_wake = True
            self._loop.call_soon_threadsafe(self._queue_background)

    def _queue_background(self) -> None:
        assert self._background is not None
        self._later_wake = False
        items = self._later_items
        while items:
            self._background.put_nowait(items.popleft())

    async def _background_worker(self) -> None:
        assert self._background is not None and self._binds is not None
        chains: dict[Key, asyncio.Future[None]] = {}
        while True:
            key, make = await self._background.get()
            while self._binding:  # bindings first
                await asyncio.sleep(0.02)
            previous = chains.get(key)
            if previous is not None and not previous.done():
                with contextlib.suppress(Exception):
                    await previous
            done: asyncio.Future[None] = self._loop.create_future()
            chains[key] = done
            try:
                await make()
            except Exception as err:
                log.debug("background write %s failed: %s", key, getattr(err, "message", err))
            finally:
                done.set_result(None)
                if chains.get(key) is done:
                    del chains[key]
                self._done_one()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued binding and background write has been answered; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._outstanding > 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    # --- lifecycle --------------------------------------------------------------------------------------

    def close(self, flush_timeout: float = 10.0) -> None:
        """Post what is queued (up to ``flush_timeout`` s), stop the informers, close every watch."""
        if self._closed:
            return
        self.flush(flush_timeout)
        with self._ledger.lock:
            watches = [w for inf in self._informers.values() for w in inf.watches]
        for watcher in watches:
            watcher.close()

        async def stop() -> None:
            for informer in self._informers.values():
                informer.stop()
            # every request still waiting (a synchronous caller's too: it gets StoreClosed, never hangs on a loop
            # that has stopped), the workers and the informers
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            await self.api.close()

        self._closed = True  # from here, calls are refused; those still waiting are cancelled by stop()
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        with contextlib.suppress(Exception):
            self._loop.close()

    def __enter__(self) -> KubeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<KubeStore {self.connection.server} seq={self._ledger.seq}>"


def _assumed_bound(pod: Obj, node: str) -> Obj:
    """The pod as its binding will make it: ``spec.nodeName`` and ``PodScheduled=True`` (a fresh object)."""
    status = dict(pod.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None})
    status["conditions"] = conditions
    return {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}, "status": status}
