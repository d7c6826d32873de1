"""``GET /api/v1/namespaces/NS/pods/NAME/log``: what a simulated container printed (``kubectl logs``).

The query is ``PodLogOptions``' (``container``, ``timestamps``, ``tailLines``, ``sinceSeconds``,
``sinceTime``, ``limitBytes``, ``previous``, ``follow``); the lines come from :mod:`pumice.nodes.logs`. With
``follow`` the response streams: new lines as the cluster's clock reaches them, until the container
terminates or the pod is gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from pumice.nodes.logs import LogError, LogOptions, container_log, format_lines, render_line
from pumice.store import BadRequest, NotFound, Store

__all__ = ["FOLLOW_POLL", "pod_log"]

#: Wall seconds between two looks at a followed pod.
FOLLOW_POLL = 0.2


def _int(q: Any, key: str, minimum: int) -> int | None:
    raw = q.get(key)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"invalid {key} {raw!r}: not an integer") from None
    if value < minimum:
        raise BadRequest(f"PodLogOptions.{key}: Invalid value: {value}: must be greater than or equal to {minimum}")
    return value


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes")


def options_of(request: Request) -> LogOptions:
    q = request.query_params
    since_time = None
    if q.get("sinceTime"):
        try:
            since_time = datetime.fromisoformat(q["sinceTime"].replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise BadRequest(f"invalid sinceTime {q['sinceTime']!r}") from None
    since_seconds = _int(q, "sinceSeconds", 1)
    return LogOptions(
        container=q.get("container") or None, timestamps=_truthy(q.get("timestamps")),
        tail_lines=_int(q, "tailLines", 0), since_seconds=None if since_seconds is None else float(since_seconds),
        since_time=since_time, limit_bytes=_int(q, "limitBytes", 1), previous=_truthy(q.get("previous")),
    )


async def pod_log(store: Store, namespace: str, name: str, request: Request, now: Callable[[], float]) -> Response:
    """The log of one container of a pod (``NotFound``/``BadRequest`` as kube-apiserver answers)."""
    options = options_of(request)
    pod = store.get("pods", namespace, name)
    try:
        lines, finished = container_log(pod, now(), options)
    except LogError as err:
        raise BadRequest(str(err)) from None
    body = format_lines(lines, options, now())
    if not _truthy(request.query_params.get("follow")) or finished:
        return Response(body, media_type="text/plain")

    async def stream() -> AsyncIterator[bytes]:
        yield body
        sent = len(lines)
        limit = options.limit_bytes
        written = len(body)
        while limit is None or written < limit:
            await asyncio.sleep(FOLLOW_POLL)
            try:
                current = store.get("pods", namespace, name)
                more, done = container_log(current, now(), options)
            except (NotFound, LogError):
                return
            if current["metadata"].get("uid") != pod["metadata"].get("uid"):
                return  # another pod of the same name: this container's log is over
            chunk = b"".join(render_line(line, options.timestamps) for line in more[sent:])
            sent = max(sent, len(more))
            if chunk:
                if limit is not None:
                    chunk = chunk[:limit - written]
                written += len(chunk)
                yield chunk
            if done:
                return

    return StreamingResponse(stream(), media_type="text/plain")
