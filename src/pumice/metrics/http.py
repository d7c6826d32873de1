"""``/metrics`` over HTTP: a route for an existing Starlette app, or a server of its own.

``pumice up`` serves it on its API server (behind the same token); ``serve_metrics`` runs it on a port of
its own, as Volcano's scheduler does with ``--listen-address`` (``:8080``), for runtimes without an API
server of their own.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from .registry import ClusterMetrics

__all__ = ["metrics_app", "metrics_route", "serve_metrics"]


def metrics_route(metrics: ClusterMetrics, path: str = "/metrics") -> Route:
    """A GET route answering the cluster's metrics (made in a worker thread: it may read the store)."""

    async def scrape(request: Request) -> Response:
        body, content_type = await run_in_threadpool(metrics.exposition, request.headers.get("accept"))
        return Response(body, media_type=content_type)

    return Route(path, scrape, methods=["GET"])


def metrics_app(metrics: ClusterMetrics) -> Starlette:
    """An app with ``/metrics`` and ``/healthz`` only."""

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(routes=[metrics_route(metrics), Route("/healthz", health, methods=["GET"])])


def serve_metrics(metrics: ClusterMetrics, host: str = "127.0.0.1", port: int = 0) -> object:
    """Serve ``metrics_app`` on ``host:port`` (0: a free port) from a background thread; returns the started
    ``ServerThread`` (its ``url``; ``stop()`` it)."""
    from pumice.server.runner import ServerThread

    return ServerThread(metrics_app(metrics), host=host, port=port).start()
