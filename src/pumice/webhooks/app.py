"""The Starlette app: one POST route per webhook path (``/jobs/mutate``, ...), and ``/healthz``."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from pumice.admission import Reader

from .admit import WEBHOOKS, Webhook, admit
from .review import ReviewError, parse_review

__all__ = ["MAX_REQUEST_BODY", "create_app"]

#: The largest AdmissionReview read (3 MiB, as Volcano's webhooks and kube-apiserver's request limit).
MAX_REQUEST_BODY = 3 * 1024 * 1024


def _endpoint(hook: Webhook, reader: Reader):  # type: ignore[no-untyped-def]
    async def review(request: Request) -> Response:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return PlainTextResponse("an AdmissionReview is sent as application/json\n", status_code=415)
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_REQUEST_BODY:
            return PlainTextResponse("request body too large\n", status_code=413)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_REQUEST_BODY:
                return PlainTextResponse("request body too large\n", status_code=413)
        try:
            parsed = parse_review(body)
        except ReviewError as err:
            return PlainTextResponse(f"{err}\n", status_code=400)
        # The rules read the API server synchronously: off the event loop.
        return JSONResponse(await run_in_threadpool(admit, hook, parsed, reader))

    return review


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def create_app(reader: Reader, hooks: Iterable[Webhook] = WEBHOOKS) -> Starlette:
    """Serve ``hooks`` (by default every webhook pumice has), reading other objects through ``reader``."""
    routes = [Route(hook.path, _endpoint(hook, reader), methods=["POST"]) for hook in hooks]
    routes.append(Route("/healthz", _healthz, methods=["GET"]))
    return Starlette(routes=routes)
