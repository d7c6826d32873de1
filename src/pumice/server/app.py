"""The Starlette application: Kubernetes REST paths mapped onto a ``Store``.

Paths: ``/api/v1/...`` (core) and ``/apis/{group}/{version}/...``, each as ``{resource}``,
``{resource}/{name}[/{sub}]`` (cluster-scoped) or ``namespaces/{ns}/{resource}[/{name}[/{sub}]]``. Verbs:
get, list (label/field selectors), watch (``?watch=1``), create, update (PUT), patch (merge, JSON, and
strategic merge for built-in kinds), delete, deletecollection, ``pods/binding`` and ``/status``. Failures are
``Status`` objects with the store error's code and reason. Writes run in a worker thread (SQLite commits
fsync); reads are served on the event loop.

No request may crash a handler: bodies are read up to ``max_body_bytes`` (413 past it, as kube-apiserver's
3 MiB) and decoded by :mod:`pumice.api.reader` (nesting and YAML alias limits, 400); every numeric query
parameter is checked (400 for NaN, infinities, negative or non-integer values); every field a handler reads
from a body (DeleteOptions, Binding, metadata) is checked for its type first (400 naming it).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from pumice.admission.crds import custom_schema
from pumice.api import reader
from pumice.api.validation import volcano_schema
from pumice.clock import rfc3339
from pumice.store import (
    DEFAULT_RESOURCES,
    AlreadyExists,
    BadRequest,
    Conflict,
    NotFound,
    ResourceRegistry,
    Store,
    StoreError,
    TooLarge,
)

from . import discovery
from .access import REVIEW_GROUPS, answer_review, review_discovery
from .auth import BearerTokenAuth
from .body import DrainBody, read_body
from .headers import SecurityHeaders
from .logs import pod_log
from .managed import FieldConflict, apply_configuration, manager_of, record_update
from .openapi import OPENAPI_V2_PROTOBUF, openapi_v2, openapi_v2_protobuf, openapi_v3_document, openapi_v3_index
from .paging import ListPager
from .patch import apply_strategic_merge_patch
from .protobuf import UnsupportedMediaType, decode_delete_options, decode_object
from .resources import ApiResource, ResourceIndex
from .strategy import prepare_for_create
from .tables import Column, partial_metadata, table_for, wants_metadata, wants_table
from .watch import error_event, stream_events

__all__ = ["DEFAULT_BOOKMARK_INTERVAL", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_WATCH_TIMEOUT", "create_app"]

log = logging.getLogger("pumice.server")

DEFAULT_BOOKMARK_INTERVAL = 60.0
DEFAULT_WATCH_TIMEOUT = 1800.0
#: Largest request body read (kube-apiserver's ``MaxRequestBodyBytes``, 3 MiB).
DEFAULT_MAX_BODY_BYTES = reader.DEFAULT_MAX_OBJECT_BYTES
#: Query parameters that are whole numbers of at least 0 (int64, as kube-apiserver parses them).
_COUNT_PARAMETERS = ("timeoutSeconds", "limit", "gracePeriodSeconds", "sinceSeconds", "tailLines", "limitBytes")
_INT64_MAX = (1 << 63) - 1
_JSON_TYPES = ("", "application/json", "*/*")
_YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
_PROTOBUF = "application/vnd.kubernetes.protobuf"

_MERGE = "application/merge-patch+json"
_JSON_PATCH = "application/json-patch+json"
_STRATEGIC = "application/strategic-merge-patch+json"
_APPLY = "application/apply-patch+yaml"


class _Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> _Json:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return _Json(body, status_code=code)


def _error(err: StoreError) -> _Json:
    return _Json(err.to_status(), status_code=err.code)


@dataclass(frozen=True, slots=True)
class _Target:
    resource: ApiResource
    namespace: str | None
    name: str | None
    sub: str | None


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes")


def _count(name: str, value: str | None) -> int | None:
    """A whole-number query parameter (``None`` when absent or empty); ``BadRequest`` for anything else."""
    if value is None or value == "":
        return None
    text = value.strip()
    digits = text[1:] if text[:1] == "+" else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 19 or int(digits) > _INT64_MAX:
        raise BadRequest(f"invalid {name} {value!r}: expected a whole number from 0 to {_INT64_MAX}")
    return int(digits)


def _seconds(name: str, value: str | None) -> float | None:
    """``timeoutSeconds``: a whole number as kube-apiserver takes it, or (a leniency kept from before) a finite
    decimal such as ``1.5``; never NaN, an infinity, a negative number or beyond int64."""
    if value is None or value == "":
        return None
    text = value.strip()
    whole, dot, fraction = text.partition(".")
    if dot and whole.isascii() and whole.isdigit() and fraction.isascii() and fraction.isdigit() and len(whole) < 19:
        return float(text)
    return float(_count(name, value) or 0)


def _check_query(request: Request) -> None:
    q = request.query_params
    for name in _COUNT_PARAMETERS:
        if name == "timeoutSeconds":
            _seconds(name, q.get(name))
        else:
            _count(name, q.get(name))


def _media_type(request: Request) -> str:
    return (request.headers.get("content-type") or "").split(";")[0].strip().lower()




class _Api:
    """Request handlers over one store (see ``create_app``)."""

    def __init__(
        self,
        store: Store,
        *,
        now: Callable[[], float],
        on_change: Callable[[], None] | None,
        bookmark_interval: float,
        watch_timeout: float,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        columns: Mapping[str, tuple[Column, ...]] | None = None,
    ) -> None:
        self.store = store
        self.max_body_bytes = max_body_bytes
        self.columns = columns
        self.now = now
        self.on_change = on_change
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.pager = ListPager()
        self._indexed: object = ()  # the registry generation ``_index`` was built for
        self._index = self._build_index()

    def _build_index(self) -> ResourceIndex:
        registry = getattr(self.store, "resources", None)
        infos = DEFAULT_RESOURCES if registry is None else tuple(registry[name] for name in registry)
        self._indexed = getattr(registry, "generation", None)
        index = ResourceIndex(infos)
        self._openapi = openapi_v2(index, self._schema_of)
        self._openapi_pb = openapi_v2_protobuf(self._openapi)
        self._openapi_v3: dict[tuple[str, str], dict[str, Any] | None] = {}
        return index

    def _schema_of(self, api_version: str, kind: str) -> dict[str, Any] | None:
        """A custom kind's schema: Volcano's (``pumice crds``), or the one its CustomResourceDefinition gives."""
        schema = volcano_schema(api_version, kind)
        if schema is not None:
            return schema
        registry = getattr(self.store, "resources", None)
        info = registry.for_type(api_version, kind) if isinstance(registry, ResourceRegistry) else None
        if info is None or not info.custom:
            return None
        try:
            return custom_schema(self.store, info, api_version)
        except StoreError:
            return None

    @property
    def index(self) -> ResourceIndex:
        """The served resources, rebuilt when a CustomResourceDefinition changed what the store serves."""
        if getattr(getattr(self.store, "resources", None), "generation", None) != self._indexed:
            self._index = self._build_index()
        return self._index

    # --- discovery ----------------------------------------------------------------------------------------

    async def version(self, request: Request) -> Response:
        return _Json(discovery.version_info())

    async def health(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def api(self, request: Request) -> Response:
        host = request.headers.get("host") or f"{request.url.hostname}:{request.url.port}"
        return _Json(discovery.api_versions(host))

    async def apis(self, request: Request) -> Response:
        doc = discovery.api_group_list(self.index)
        for name, versions in REVIEW_GROUPS.items():
            entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
            doc["groups"].append({"name": name, "versions": entries, "preferredVersion": entries[0]})
        return _Json(doc)

    async def core_resources(self, request: Request) -> Response:
        return _Json(discovery.api_resource_list(self.index, "", "v1"))

    async def group(self, request: Request) -> Response:
        name = request.path_params["group"]
        if name in REVIEW_GROUPS:
            entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in REVIEW_GROUPS[name]]
            return _Json({"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": entries,
                          "preferredVersion": entries[0]})
        doc = discovery.api_group(self.index, name)
        return _not_found() if doc is None else _Json(doc)

    async def group_resources(self, request: Request) -> Response:
        group, version = request.path_params["group"], request.path_params["version"]
        reviews = review_discovery(group, version)
        if reviews is not None:
            return _Json({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}",
                          "resources": reviews})
        doc = discovery.api_resource_list(self.index, group, version)
        return _not_found() if doc is None else _Json(doc)

    async def openapi(self, request: Request) -> Response:
        accept = request.headers.get("accept") or ""
        if "protobuf" in accept and "json" not in accept:
            return Response(self._openapi_pb, media_type=OPENAPI_V2_PROTOBUF)
        return _Json(self._openapi)

    async def openapi_v3(self, request: Request) -> Response:
        return _Json(openapi_v3_index(self.index))

    async def openapi_v3_group(self, request: Request) -> Response:
        p = request.path_params
        index, key = self.index, (p.get("group", ""), p["version"])
        if key not in self._openapi_v3:
            self._openapi_v3[key] = openapi_v3_document(index, key[0], key[1], self._schema_of)
        doc = self._openapi_v3[key]
        return _not_found() if doc is None else _Json(doc)

    # --- resources ----------------------------------------------------------------------------------------

    def _target(self, group: str, version: str, rest: str) -> _Target | None:
        segs = rest.strip("/").split("/")
        if not segs or not segs[0]:
            return None
        if segs[0] == "namespaces" and len(segs) >= 3:
            r = self.index.lookup(group, version, segs[2])
            if r is not None and r.namespaced:
                tail = segs[3:]
                if len(tail) > 2:
                    return None
                return _Target(r, segs[1], tail[0] if tail else None, tail[1] if len(tail) > 1 else None)
        r = self.index.lookup(group, version, segs[0])
        if r is None or len(segs) > 3:
            return None
        if r.namespaced and len(segs) > 1:
            return None
        return _Target(r, None, segs[1] if len(segs) > 1 else None, segs[2] if len(segs) > 2 else None)

    async def core(self, request: Request) -> Response:
        return await self._dispatch(request, "", "v1", request.path_params["rest"])

    async def grouped(self, request: Request) -> Response:
        p = request.path_params
        if p["group"] in REVIEW_GROUPS:
            return await self._review(request, p["group"], p["version"], p["rest"])
        return await self._dispatch(request, p["group"], p["version"], p["rest"])

    async def _review(self, request: Request, group: str, version: str, rest: str) -> Response:
        """``kubectl auth can-i`` / ``whoami``: a review is created and answered, never stored (see ``access``)."""
        segs = rest.strip("/").split("/")
        plural = segs[2] if len(segs) == 3 and segs[0] == "namespaces" else segs[0] if len(segs) == 1 else ""
        if request.method != "POST" or review_discovery(group, version) is None:
            return _not_found() if review_discovery(group, version) is None else _method_not_allowed(request.method)
        try:
            body = await self._body(request)
        except StoreError as err:
            return _error(err)
        answer = answer_review(group, version, plural, body)
        return _not_found() if answer is None else _Json(answer, status_code=201)

    async def _dispatch(self, request: Request, group: str, version: str, rest: str) -> Response:
        target = self._target(group, version, rest)
        if target is None:
            return _not_found()
        if target.sub is not None and target.sub not in target.resource.subresources:
            return _not_found()
        method = request.method
        try:
            _check_query(request)
            if target.sub == "log":
                if method != "GET":
                    return _method_not_allowed(method)
                assert target.namespace is not None and target.name is not None
                return await pod_log(self.store, target.namespace, target.name, request, self.now)
            if method == "GET":
                if target.sub == "binding":
                    return _method_not_allowed(method)
                if target.name is None:
                    if _truthy(request.query_params.get("watch")):
                        return self._watch(request, target)
                    return self._list(request, target)
                return self._get(request, target)
            if method == "POST":
                if target.sub == "binding":
                    return await self._bind(request, target)
                if target.name is not None:
                    return _method_not_allowed(method)
                return await self._create(request, target)
            if target.name is None:
                if method == "DELETE":
                    return await self._delete_collection(request, target)
                return _method_not_allowed(method)
            if target.sub == "binding":
                return _method_not_allowed(method)
            if method == "PUT":
                return await self._update(request, target)
            if method == "PATCH":
                return await self._patch(request, target)
            if method == "DELETE" and target.sub is None:
                return await self._delete(request, target)
            return _method_not_allowed(method)
        except StoreError as err:
            return _error(err)
        except Exception as exc:  # a defect: answered (and logged) here, so the connection stays usable
            log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
            return _status(500, "InternalError", f"Internal error occurred: {exc}")

    # reads

    def _respond(self, request: Request, target: _Target, objects: list[dict[str, Any]], rv: str | None,
                 single: dict[str, Any] | None = None, list_meta: dict[str, Any] | None = None) -> Response:
        if target.resource.converts:
            objects = [_as_version(target.resource, o) for o in objects]
            single = None if single is None else objects[0]
        accept = request.headers.get("accept")
        if wants_table(accept):
            include = request.query_params.get("includeObject") or "Metadata"
            body = table_for(target.resource.store_name, objects, self.now(), resource_version=rv,
                             include_object=include, columns_of=self.columns)
        elif wants_metadata(accept):
            body = partial_metadata(objects, rv, single is not None)
        elif single is not None:
            return _Json(single)
        else:
            r = target.resource
            body = {"kind": f"{r.kind}List", "apiVersion": r.group_version,
                    "metadata": {"resourceVersion": rv or ""}, "items": objects}
        if list_meta and single is None:
            body.setdefault("metadata", {}).update(list_meta)
        return _Json(body)

    def _get(self, request: Request, target: _Target) -> Response:
        assert target.name is not None
        obj = self.store.get(target.resource.store_name, target.namespace, target.name)
        return self._respond(request, target, [obj], None, single=obj)

    def _list(self, request: Request, target: _Target) -> Response:
        q = request.query_params
        labels, fields = q.get("labelSelector") or None, q.get("fieldSelector") or None
        token = q.get("continue") or None
        limit = _limit(q.get("limit"))
        items: list[dict[str, Any]] | None = None
        rv: str | None = None
        if token is None:
            # a chunked list keeps the store's own (read-only) objects for its next chunks, never copies
            items, rv = self.store.list(target.resource.store_name, target.namespace, label_selector=labels,
                                        field_selector=fields, copy=not limit)
        page = self.pager.page((target.resource.store_name, target.namespace, labels, fields), items, rv, limit,
                               token, selectors=bool(labels or fields))
        meta: dict[str, Any] = {}
        if page.continue_token is not None:
            meta["continue"] = page.continue_token
            if page.remaining is not None:
                meta["remainingItemCount"] = page.remaining
        return self._respond(request, target, page.items, page.resource_version, list_meta=meta)

    def _watch(self, request: Request, target: _Target) -> Response:
        q = request.query_params
        r = target.resource
        rv = q.get("resourceVersion") or None
        timeout = _seconds("timeoutSeconds", q.get("timeoutSeconds")) or self.watch_timeout  # 0: the default
        headers = {"Cache-Control": "no-cache"}
        try:
            watcher = self.store.watch(r.store_name, target.namespace, resource_version=rv,
                                       label_selector=q.get("labelSelector") or None,
                                       field_selector=q.get("fieldSelector") or None)
        except StoreError as err:
            if err.code != 410:
                raise
            line = error_event(err)

            async def gone() -> Any:
                yield line

            return StreamingResponse(gone(), media_type="application/json", headers=headers)
        table = wants_table(request.headers.get("accept"))
        include = q.get("includeObject") or "Metadata"
        first = [True]

        def encode(event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
            if r.converts:
                obj = _as_version(r, obj)
            if not table:
                return obj
            out = table_for(r.store_name, [obj], self.now(), include_object=include, with_columns=first[0],
                            resource_version=(obj.get("metadata") or {}).get("resourceVersion"),
                            columns_of=self.columns)
            first[0] = False
            return out

        def bookmark(version: str) -> dict[str, Any]:
            return {"kind": r.kind, "apiVersion": r.group_version, "metadata": {"resourceVersion": version}}

        start = int(rv) if rv and rv.isdigit() else 0
        stream = stream_events(
            watcher, encode=encode, timeout=timeout,
            bookmark_interval=self.bookmark_interval if _truthy(q.get("allowWatchBookmarks")) else None,
            bookmark_object=bookmark, current_version=lambda: self.store.resource_version, start_version=start,
        )
        return StreamingResponse(stream, media_type="application/json", headers=headers)

    # writes

    async def _write(self, fn: Callable[..., Any], *args: Any, dry_run: bool = False, **kwargs: Any) -> Any:
        """Run a store write in a worker thread; a dry run (``?dryRun=All``) goes through admission and
        validation in a batch that is rolled back, so nothing is stored and no watch sees it."""
        if dry_run:
            return await run_in_threadpool(_dry_run, self.store, fn, *args, **kwargs)
        result = await run_in_threadpool(fn, *args, **kwargs)
        if self.on_change is not None:
            self.on_change()
        return result

    async def _raw_body(self, request: Request) -> bytes:
        """The body, at most ``max_body_bytes`` of it (``TooLarge`` past that; see ``read_body``)."""
        return await read_body(request, self.max_body_bytes)

    async def _body(self, request: Request, *, patch: bool = False) -> Any:
        raw = await self._raw_body(request)
        if not raw:
            raise BadRequest("the request has no body")
        ctype = _media_type(request)
        if ctype == _PROTOBUF and not patch:
            return decode_object(raw)
        if not patch and ctype not in _JSON_TYPES and ctype not in _YAML_TYPES:
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format ({ctype}) - accepted media types include: "
                "application/json, application/yaml, application/vnd.kubernetes.protobuf"
            )
        return self._decode(raw, yaml_body=ctype in _YAML_TYPES)

    @staticmethod
    def _decode(raw: bytes, *, yaml_body: bool) -> Any:
        what = "YAML" if yaml_body else "JSON"
        try:
            if yaml_body:
                return reader.load_yaml(raw.decode("utf-8"))
            return reader.load_json(raw)
        except reader.TooLarge as exc:
            raise TooLarge(str(exc)) from None
        except reader.InputError as exc:
            raise BadRequest(f"the request body is refused: {exc}") from None
        except UnicodeDecodeError as exc:
            raise BadRequest(f"the request body is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
        except Exception as exc:  # ValueError (JSON, a too long integer), yaml.YAMLError
            message = " ".join(str(exc).split())
            raise BadRequest(f"the request body is not valid {what}: {message}") from None

    def _dry_run(self, request: Request) -> bool:
        """Whether the request is a dry run (``dryRun=All``; any other value is refused, as kube-apiserver does)."""
        values = request.query_params.getlist("dryRun")
        return _dry_run_values(values)

    def _fit_namespace(self, target: _Target, obj: dict[str, Any]) -> None:
        if obj.get("metadata") is None:
            obj["metadata"] = {}  # null is no metadata, as kube-apiserver reads it
        meta = obj["metadata"]
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        if target.resource.namespaced:
            given = meta.get("namespace")
            if given and given != target.namespace:
                raise BadRequest("the namespace of the provided object does not match the namespace sent on "
                                 "the request")
            meta["namespace"] = target.namespace
        elif meta.get("namespace"):
            meta.pop("namespace")

    async def _create(self, request: Request, target: _Target) -> Response:
        if target.resource.namespaced and target.namespace is None:
            return _method_not_allowed("POST")
        dry = self._dry_run(request)
        body = await self._body(request)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        self._fit_namespace(target, body)
        prepare_for_create(target.resource, body)
        record_update(None, body, self._manager(request), rfc3339(self.now()), builtin=target.resource.strategic)
        created = await self._write(self.store.create, target.resource.store_name, body, dry_run=dry)
        return _Json(_as_version(target.resource, created), status_code=201)

    async def _update(self, request: Request, target: _Target) -> Response:
        dry = self._dry_run(request)
        body = await self._body(request)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        self._fit_namespace(target, body)
        name = body["metadata"].get("name")
        if name and name != target.name:
            raise BadRequest(f"the name of the object ({name}) does not match the name on the URL ({target.name})")
        body["metadata"]["name"] = target.name
        manager, now, r = self._manager(request), rfc3339(self.now()), target.resource

        def update() -> dict[str, Any]:
            try:
                current = self.store.get(r.store_name, target.namespace, target.name or "")
            except NotFound:
                current = None
            record_update(current, body, manager, now, builtin=r.strategic, subresource=target.sub)
            return self.store.update(r.store_name, body, subresource=target.sub)

        updated = await self._write(update, dry_run=dry)
        return _Json(_as_version(r, updated))

    async def _patch(self, request: Request, target: _Target) -> Response:
        dry = self._dry_run(request)
        ctype = (request.headers.get("content-type") or "").split(";")[0].strip()
        r = target.resource
        if ctype == _STRATEGIC and r.strategic:
            body = await self._body(request, patch=True)
            result = await self._write(self._strategic, target, body, self._manager(request), dry_run=dry)
            return _Json(_as_version(r, result))
        if ctype == _APPLY and target.sub is None:
            return await self._apply(request, target, dry)
        if ctype not in (_MERGE, _JSON_PATCH):
            accepted = [_JSON_PATCH, _MERGE] + ([_STRATEGIC] if r.strategic else [])
            return _status(415, "UnsupportedMediaType",
                           f"the body of the request was in an unknown format - accepted media types include: "
                           f"{', '.join(accepted)}")
        body = await self._body(request, patch=True)
        kind = "merge" if ctype == _MERGE else "json"
        if kind == "json":
            _check_json_patch(body)
        patched = await self._write(self.store.patch, r.store_name, target.namespace, target.name, body,
                                    patch_type=kind, subresource=target.sub, dry_run=dry)
        return _Json(_as_version(r, patched))

    def _manager(self, request: Request) -> str:
        return manager_of(request.query_params.get("fieldManager"), request.headers.get("user-agent"))

    async def _apply(self, request: Request, target: _Target, dry: bool = False) -> Response:
        """Server-side apply (see ``managed``): 201 when it created the object."""
        q = request.query_params
        if not q.get("fieldManager"):
            raise BadRequest("PATCH /apply requires fieldManager to be set")
        raw = await self._raw_body(request)
        config = self._decode(raw, yaml_body=True) if raw else None
        if not isinstance(config, dict):
            raise BadRequest("the applied configuration must be an object")
        self._fit_namespace(target, config)
        name = config["metadata"].get("name")
        if name and name != target.name:
            raise BadRequest(f"the name of the object ({name}) does not match the name on the URL ({target.name})")
        config["metadata"]["name"] = target.name
        r = target.resource
        if config.get("kind") and config["kind"] != r.kind:
            raise BadRequest(f"the kind of the applied configuration ({config['kind']}) is not {r.kind}")
        manager, force, now = q["fieldManager"], _truthy(q.get("force")), rfc3339(self.now())

        def apply() -> tuple[dict[str, Any], bool]:
            for _ in range(16):
                try:
                    current = self.store.get(r.store_name, target.namespace, target.name or "")
                except NotFound:
                    obj = apply_configuration(None, config, manager, now, builtin=r.strategic, force=force)
                    try:
                        return self.store.create(r.store_name, obj), True
                    except AlreadyExists:
                        continue
                obj = apply_configuration(current, config, manager, now, builtin=r.strategic, force=force)
                obj["metadata"]["resourceVersion"] = current["metadata"].get("resourceVersion")
                try:
                    return self.store.update(r.store_name, obj), False
                except FieldConflict:
                    raise
                except Conflict:
                    continue
            raise Conflict(f'{r.store_name} "{target.name}" keeps changing: server-side apply gave up')

        result, created = await self._write(apply, dry_run=dry)
        return _Json(_as_version(r, result), status_code=201 if created else 200)

    def _strategic(self, target: _Target, patch: Any, manager: str = "unknown") -> dict[str, Any]:
        """Read, patch, write with the read's resourceVersion; retried on a concurrent write."""
        r = target.resource
        assert target.name is not None
        if not isinstance(patch, dict):
            raise BadRequest("a strategic merge patch must be a JSON object")
        for _ in range(16):
            current = self.store.get(r.store_name, target.namespace, target.name)
            patched = apply_strategic_merge_patch(current, patch)
            meta = patched.get("metadata")
            if not isinstance(meta, dict) or meta.get("name") != target.name or (
                r.namespaced and meta.get("namespace") != target.namespace
            ):
                raise BadRequest("a patch cannot change metadata.name or metadata.namespace")
            pinned = isinstance(patch.get("metadata"), dict) and "resourceVersion" in patch["metadata"]
            record_update(current, patched, manager, rfc3339(self.now()), builtin=r.strategic,
                          subresource=target.sub)
            try:
                return self.store.update(r.store_name, patched, subresource=target.sub)
            except Conflict:
                if pinned:
                    raise
        raise Conflict(f'{r.store_name} "{target.name}" keeps changing: strategic merge patch gave up')

    async def _delete(self, request: Request, target: _Target) -> Response:
        dry = self._dry_run(request)
        raw = await self._raw_body(request)
        rv = None
        uid = None
        if raw:
            if _media_type(request) == _PROTOBUF:
                options: Any = decode_delete_options(raw)
            else:
                options = self._decode(raw, yaml_body=_media_type(request) in _YAML_TYPES)
            rv, uid = _delete_preconditions(options)
            if isinstance(options, dict) and options.get("dryRun"):
                given = options["dryRun"]
                dry = _dry_run_values(given if isinstance(given, list) else [given]) or dry
        r = target.resource
        assert target.name is not None
        if uid:
            current = self.store.get(r.store_name, target.namespace, target.name)
            if current["metadata"].get("uid") != uid:
                raise Conflict(f"Precondition failed: UID in precondition: {uid}, "
                               f"UID in object meta: {current['metadata'].get('uid')}")
        deleted = await self._write(self.store.delete, r.store_name, target.namespace, target.name,
                                    resource_version=rv, dry_run=dry)
        return _Json(_as_version(r, deleted))

    async def _delete_collection(self, request: Request, target: _Target) -> Response:
        dry = self._dry_run(request)
        q = request.query_params
        r = target.resource
        items, _ = self.store.list(r.store_name, target.namespace, label_selector=q.get("labelSelector") or None,
                                   field_selector=q.get("fieldSelector") or None)

        def delete_all() -> list[dict[str, Any]]:
            out = []
            for item in items:
                meta = item["metadata"]
                try:
                    out.append(self.store.delete(r.store_name, meta.get("namespace"), meta["name"]))
                except NotFound:
                    continue
            return out

        deleted = await self._write(delete_all, dry_run=dry)
        return _Json({"kind": f"{r.kind}List", "apiVersion": r.group_version,
                      "metadata": {"resourceVersion": self.store.resource_version}, "items": deleted})

    async def _bind(self, request: Request, target: _Target) -> Response:
        body = await self._body(request)
        if not isinstance(body, dict):
            raise BadRequest("a Binding must be a JSON object")
        target_ref = body.get("target")
        if not isinstance(target_ref, dict):
            raise BadRequest(f"Binding.target: expected an object, got {_type_name(target_ref)}")
        node = target_ref.get("name")
        if not node or not isinstance(node, str):
            raise BadRequest("a Binding needs target.name (a string)")
        meta = body.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise BadRequest(f"Binding.metadata: expected an object, got {_type_name(meta)}")
        name = (meta or {}).get("name") or target.name
        if name != target.name:
            raise BadRequest(f"the Binding's name ({name}) does not match the pod ({target.name})")
        assert target.namespace is not None and target.name is not None
        await self._write(self.store.bind, target.namespace, target.name, node)
        return _Json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
                     status_code=201)


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(value), type(value).__name__)


def _delete_preconditions(options: Any) -> tuple[str | None, str | None]:
    """``(resourceVersion, uid)`` of a DeleteOptions' preconditions, each field's type checked."""
    if not isinstance(options, dict):
        raise BadRequest(f"DeleteOptions: expected an object, got {_type_name(options)}")
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (type(grace) is not int or grace < 0):
        raise BadRequest(f"DeleteOptions.gracePeriodSeconds: expected a whole number of at least 0, got {grace!r}")
    for key in ("propagationPolicy", "kind", "apiVersion"):
        value = options.get(key)
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"DeleteOptions.{key}: expected a string, got {_type_name(value)}")
    pre = options.get("preconditions")
    if pre is None:
        return None, None
    if not isinstance(pre, dict):
        raise BadRequest(f"DeleteOptions.preconditions: expected an object, got {_type_name(pre)}")
    found: list[str | None] = []
    for key in ("resourceVersion", "uid"):
        value = pre.get(key)
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"DeleteOptions.preconditions.{key}: expected a string, got {_type_name(value)}")
        found.append(value or None)
    return found[0], found[1]


def _check_json_patch(patch: Any) -> None:
    """A JSON patch's shape: an array of objects whose ``op``, ``path`` and ``from`` are strings."""
    if not isinstance(patch, list):
        raise BadRequest(f"a JSON patch must be an array of operations, got {_type_name(patch)}")
    for index, op in enumerate(patch):
        if not isinstance(op, dict):
            raise BadRequest(f"JSON patch operation {index}: expected an object, got {_type_name(op)}")
        for key in ("op", "path", "from"):
            value = op.get(key)
            if value is not None and not isinstance(value, str):
                raise BadRequest(f"JSON patch operation {index}: {key}: expected a string, got {_type_name(value)}")


class _Undo(Exception):
    """Not an error: how a dry run's batch is rolled back, carrying its result."""

    def __init__(self, result: Any) -> None:
        super().__init__("dry run")
        self.result = result


def _dry_run(store: Store, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` inside a store batch that is then rolled back: its answer, nothing stored."""
    try:
        with store.batch():  # type: ignore[attr-defined]
            raise _Undo(fn(*args, **kwargs))
    except _Undo as undo:
        return undo.result


def _dry_run_values(values: list[Any]) -> bool:
    for value in values:
        if value != "All":
            raise BadRequest(f'unsupported dry run value "{value}"; only "All" is supported')
    return bool(values)


def _as_version(resource: ApiResource, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as served under ``resource``'s version: the same fields, its ``apiVersion`` (no schema differs
    between the versions pumice serves of one kind, as for a CRD without a conversion webhook)."""
    if not resource.converts or not isinstance(obj, dict):
        return obj
    return {**obj, "apiVersion": resource.group_version}


def _limit(raw: str | None) -> int | None:
    return _count("limit", raw) or None  # 0: no limit


def _not_found() -> _Json:
    return _status(404, "NotFound", "the server could not find the requested resource")


def _method_not_allowed(method: str) -> _Json:
    return _status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource "
                                            f"({method})")


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _not_found()
    if exc.status_code == 405:
        return _method_not_allowed(request.method)
    return _status(exc.status_code, "Unknown", str(exc.detail))


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _status(500, "InternalError", f"Internal error occurred: {exc}")


_VERBS = ["GET", "POST", "PUT", "PATCH", "DELETE"]



def create_app(
    store: Store,
    *,
    token: str | None = None,
    now: Callable[[], float] = time.time,
    on_change: Callable[[], None] | None = None,
    bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
    watch_timeout: float = DEFAULT_WATCH_TIMEOUT,
    dashboard: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    metrics: Any = None,
    columns: Mapping[str, tuple[Column, ...]] | None = None,
) -> Any:
    """An ASGI app serving ``store`` as a Kubernetes API server.

    ``token``: require ``Authorization: Bearer <token>`` (``None``: no authentication). ``now``: the clock
    ages are computed against (seconds since the epoch). ``on_change`` is called after every successful write.
    ``bookmark_interval``: seconds of quiet before a watch that allows bookmarks gets one. ``watch_timeout``:
    how long a watch without ``timeoutSeconds`` lasts. ``max_body_bytes``: the largest request body (413 past it).
    ``metrics``: a ``pumice.metrics.ClusterMetrics`` served at ``/metrics`` (behind the token, as kube-apiserver's).
    ``columns``: table columns replacing those of some custom resources (``tables.federation_host_columns`` on a
    federation host).
    """
    api = _Api(store, now=now, on_change=on_change, bookmark_interval=bookmark_interval, watch_timeout=watch_timeout,
               max_body_bytes=max_body_bytes, columns=columns)
    routes = [
        Route("/version", api.version, methods=["GET"]),
        Route("/healthz", api.health, methods=["GET"]),
        Route("/livez", api.health, methods=["GET"]),
        Route("/readyz", api.health, methods=["GET"]),
        Route("/api", api.api, methods=["GET"]),
        Route("/apis", api.apis, methods=["GET"]),
        Route("/openapi/v2", api.openapi, methods=["GET"]),
        Route("/openapi/v3", api.openapi_v3, methods=["GET"]),
        Route("/openapi/v3/api/{version}", api.openapi_v3_group, methods=["GET"]),
        Route("/openapi/v3/apis/{group}/{version}", api.openapi_v3_group, methods=["GET"]),
        Route("/api/v1", api.core_resources, methods=["GET"]),
        Route("/api/v1/{rest:path}", api.core, methods=_VERBS),
        Route("/apis/{group}", api.group, methods=["GET"]),
        Route("/apis/{group}/{version}", api.group_resources, methods=["GET"]),
        Route("/apis/{group}/{version}/{rest:path}", api.grouped, methods=_VERBS),
    ]
    if metrics is not None:
        from pumice.metrics import metrics_route

        routes.append(metrics_route(metrics))
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error, Exception: _internal_error})
    app.state.api = api
    inner: ASGIApp = BearerTokenAuth(app, token) if token is not None else app
    if not dashboard:
        return DrainBody(SecurityHeaders(inner))
    # The dashboard checks the token itself (bearer header or its login cookie), so it sits in
    # front of the API's bearer-only guard.
    from pumice.dashboard import routes as dashboard_routes

    outer = Starlette(routes=[*dashboard_routes(store, token, on_change=on_change), Mount("", app=inner)],
                      exception_handlers={HTTPException: _http_error, Exception: _internal_error})
    outer.state.api = api
    return DrainBody(SecurityHeaders(outer))
