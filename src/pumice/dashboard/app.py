"""The dashboard's routes: the single-page app at ``/``, its assets, and JSON under ``/dashboard/api/``."""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from pumice.api import ManifestError, apply_defaults, load_text
from pumice.api.reader import load_json
from pumice.server.body import read_body
from pumice.server.headers import SECURITY_HEADERS, SecurityHeaders
from pumice.store import Store, StoreError

from . import pages
from .auth import COOKIE_NAME, authorized, cookie_value
from .mirror import StoreMirror

__all__ = ["ApplyError", "apply_manifest", "create_app", "routes"]

log = logging.getLogger("pumice.dashboard")
STATIC_DIR = Path(__file__).parent / "static"
API = "/dashboard/api"
MAX_MANIFEST = 1 << 20
#: Seconds an answer is served again although the store moved on (bounds the work per page).
MIN_INTERVAL = 1.0
CACHE_SIZE = 64

_LOGIN_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<title>pumice dashboard</title>
<style>body{{font:15px system-ui,sans-serif;background:#f4f6fa;color:#1d2330;display:grid;place-items:center;
height:100vh;margin:0}}main{{background:#fff;padding:2rem 2.5rem;border-radius:10px;
box-shadow:0 2px 10px #0002;max-width:34rem}}code{{background:#eef1f6;padding:.1rem .3rem;border-radius:4px}}
</style></head><body><main><h1>pumice</h1><p>{message}</p>
<p>Open <code>/?token=&lt;token&gt;</code> with the API server's bearer token (printed by
<code>pumice up</code>) once; the browser then keeps a session cookie.</p></main></body></html>"""


def _status(code: int, reason: str, message: str) -> JSONResponse:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    return JSONResponse(body, status_code=code)


class ApplyError(Exception):
    """A manifest that could not be (fully) applied: ``str()`` is one line; ``created`` what was created."""

    def __init__(self, message: str, created: list[dict[str, Any]], code: int = 400) -> None:
        super().__init__(" ".join(message.split()))
        self.created = created
        self.code = code


def _resource_for(store: Store, api_version: str, kind: str) -> tuple[str, bool] | None:
    registry = getattr(store, "resources", None)
    if registry is None:
        from pumice.store import DEFAULT_RESOURCES

        infos = list(DEFAULT_RESOURCES)
    else:
        infos = [registry[name] for name in registry]
    for info in infos:
        if info.kind == kind and info.api_version == api_version:
            return info.name, info.namespaced
    return None


def _describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = meta.get("name") or meta.get("generateName") or "?"
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{name}"


def apply_manifest(store: Store, text: str, source: str = "manifest") -> list[dict[str, Any]]:
    """Create every object of a YAML/JSON manifest (Volcano's API defaults applied), in order.

    Returns ``[{"kind", "namespace", "name", "resource"}]``. Raises :class:`ApplyError` with a one-line
    message at the first object that cannot be read or created (the ones before it stay created).
    """
    try:
        objects = load_text(text, source)
    except ManifestError as err:
        raise ApplyError(str(err), []) from err
    if not objects:
        raise ApplyError(f"{source}: no objects found", [])
    planned: list[tuple[str, bool, dict[str, Any]]] = []
    for obj in objects:  # check every kind before creating anything
        wire = apply_defaults(obj).to_dict()
        found = _resource_for(store, str(wire.get("apiVersion") or ""), str(wire.get("kind") or ""))
        if found is None:
            raise ApplyError(f"{_describe(wire)}: kind {wire.get('kind')!r} of apiVersion "
                             f"{wire.get('apiVersion')!r} is not served by this cluster", [])
        resource, namespaced = found
        meta = wire.setdefault("metadata", {})
        if namespaced and not meta.get("namespace"):
            meta["namespace"] = "default"
        planned.append((resource, namespaced, wire))
    created: list[dict[str, Any]] = []
    for resource, _namespaced, wire in planned:
        try:
            out = store.create(resource, wire)
        except StoreError as err:
            raise ApplyError(f"{_describe(wire)}: {err}", created, getattr(err, "code", 400)) from err
        meta = out.get("metadata") or {}
        created.append({"kind": out.get("kind"), "namespace": meta.get("namespace"), "name": meta.get("name"),
                        "resource": resource})
    return created


def routes(store: Store, token: str | None = None, *, on_change: Callable[[], None] | None = None,
           min_interval: float = MIN_INTERVAL, mirror: bool = True) -> list[BaseRoute]:
    """The dashboard's routes over ``store``; with a ``token``, requests need it (bearer or cookie).

    ``/`` (the app; ``/?token=...`` logs in), ``/dashboard/static/...``, ``/dashboard/logout``,
    ``GET /dashboard/api/{overview,jobs,jobs/<ns>/<name>,pods,podgroups,queues,nodes,topology}``
    and ``POST /dashboard/api/apply``.

    ``on_change`` is called after objects were created through ``POST /dashboard/api/apply`` (as the API
    server's own hook: wake the cluster driver). Reads go through a :class:`StoreMirror` (watches instead of
    a full list per poll) unless ``mirror`` is false; an answer is recomputed at most every ``min_interval``
    seconds however many tabs poll.
    """
    source: Any = StoreMirror(store, pages.RESOURCES) if mirror else store

    def guarded(endpoint: Callable[[Request], Any]) -> Callable[[Request], Any]:
        """``endpoint`` whose answers carry the security headers (see ``pumice.server.headers``)."""

        async def call(request: Request) -> Response:
            response = endpoint(request)
            if not isinstance(response, Response):
                response = await response
            for name, value in SECURITY_HEADERS:
                response.headers.setdefault(name.decode(), value.decode())
            return response

        return call

    @guarded
    def index(request: Request) -> Response:
        given = request.query_params.get("token")
        if given is not None and token:
            if not authorized_token(given):
                return HTMLResponse(_LOGIN_PAGE.format(message="That token is not valid."), status_code=401)
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(COOKIE_NAME, cookie_value(token), httponly=True, samesite="strict", path="/")
            return response
        if not authorized(request, token):
            return HTMLResponse(_LOGIN_PAGE.format(message="This dashboard needs a token."), status_code=401)
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    def authorized_token(given: str) -> bool:
        return bool(token) and hmac.compare_digest(given.encode(), str(token).encode())

    @guarded
    def logout(request: Request) -> Response:
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE_NAME, path="/")
        return response

    # The last answers by URL: reused while the store's resourceVersion stays, and for ``min_interval`` seconds
    # even if it moved, so that every open tab polling costs a dict lookup (or a 304 without a body).
    cache: OrderedDict[str, tuple[str, float, bytes | None]] = OrderedDict()

    def view(compute: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            if not authorized(request, token):
                return _status(401, "Unauthorized", "Unauthorized")
            rv = store.resource_version
            now = time.monotonic()
            url = str(request.url.path) + "?" + str(request.url.query)
            hit = cache.get(url)
            if hit is not None and (hit[0] == rv or now - hit[1] < min_interval):
                rv, body = hit[0], hit[2]
            else:
                try:
                    result = await run_in_threadpool(compute, request)
                except StoreError as err:
                    return _status(getattr(err, "code", 500), getattr(err, "reason", "InternalError"), str(err))
                except Exception as exc:  # a defect: answered (and logged) here, so the connection stays usable
                    log.error("dashboard %s failed", url, exc_info=exc)
                    return _status(500, "InternalError", f"Internal error occurred: {exc}")
                body = None if result is None else json.dumps(result, separators=(",", ":")).encode()
                cache[url] = (rv, now, body)
                cache.move_to_end(url)
                while len(cache) > CACHE_SIZE:
                    cache.popitem(last=False)
            etag = f'W/"{rv}"'
            headers = {"ETag": etag, "Cache-Control": "no-cache"}
            if request.headers.get("if-none-match") == etag:
                return Response(status_code=304, headers=headers)
            if body is None:
                return _status(404, "NotFound", "not found")
            return Response(body, media_type="application/json", headers=headers)

        return guarded(endpoint)

    @guarded
    async def apply(request: Request) -> Response:
        if not authorized(request, token):
            return _status(401, "Unauthorized", "Unauthorized")
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _status(415, "UnsupportedMediaType", 'send {"yaml": "..."} as application/json')
        try:
            raw = await read_body(request, MAX_MANIFEST)
        except StoreError as err:
            return _status(err.code, err.reason, "manifest larger than 1 MiB")
        try:
            payload = load_json(raw)
            text = payload["yaml"]
            if not isinstance(text, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):  # also nested too deeply (reader.TooDeep)
            return _status(400, "BadRequest", 'expected a JSON body {"yaml": "<manifest>"}')
        try:
            created = await run_in_threadpool(apply_manifest, store, text)
        except ApplyError as err:
            if err.created and on_change is not None:
                on_change()
            return JSONResponse({"error": str(err), "created": err.created}, status_code=err.code)
        cache.clear()  # show what was just created on the next poll
        if on_change is not None:
            on_change()
        return JSONResponse({"created": created}, status_code=201)

    return [
        Route("/", index, methods=["GET"]),
        Route("/dashboard/logout", logout, methods=["GET", "POST"]),
        Mount("/dashboard/static", app=SecurityHeaders(StaticFiles(directory=STATIC_DIR)), name="dashboard-static"),
        Route(f"{API}/overview", view(lambda r: pages.overview(source)), methods=["GET"]),
        Route(f"{API}/jobs", view(lambda r: pages.jobs(source)), methods=["GET"]),
        Route(
            API + "/jobs/{namespace}/{name}",
            view(lambda r: pages.job_detail(source, r.path_params["namespace"], r.path_params["name"],
                                           r.query_params.get("kind") or "Job")),
            methods=["GET"],
        ),
        Route(f"{API}/pods", view(lambda r: pages.pods(source)), methods=["GET"]),
        Route(f"{API}/podgroups", view(lambda r: pages.podgroups(source)), methods=["GET"]),
        Route(f"{API}/queues", view(lambda r: pages.queues(source)), methods=["GET"]),
        Route(f"{API}/nodes", view(lambda r: pages.nodes(source)), methods=["GET"]),
        Route(f"{API}/topology", view(lambda r: pages.topology(source)), methods=["GET"]),
        Route(f"{API}/apply", apply, methods=["POST"]),
    ]


def create_app(store: Store, token: str | None = None, *, on_change: Callable[[], None] | None = None,
               extra: list[BaseRoute] | None = None) -> Starlette:
    """A standalone app serving only the dashboard (plus ``extra`` routes, matched after it)."""
    return Starlette(routes=[*routes(store, token, on_change=on_change), *(extra or [])])
