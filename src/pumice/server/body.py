"""Request bodies read with a size limit, for the API server and the dashboard.

A body larger than the limit is answered ``413`` (``TooLarge``) as kube-apiserver answers it. The rest of it
is still read and dropped, up to :data:`DRAIN_BYTES`, so that a client that sends the whole body before it
reads the answer gets the 413 on a connection that stays usable; past that the server stops reading (and the
connection closes after the answer).

:class:`DrainBody` does the same for every answer given without reading the body (404, 405, 401, 415, ...):
an HTTP/1.1 server that answers before the body is in cannot reuse the connection, and closing it under a
client that was told nothing looks to that client like a dropped connection.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pumice.store import TooLarge

__all__ = ["DRAIN_BYTES", "DrainBody", "read_body", "too_large"]

DRAIN_BYTES = 64 * 1024 * 1024


def too_large(limit: int) -> TooLarge:
    return TooLarge(f"Request entity too large: limit is {limit}")


async def read_body(request: Request, limit: int) -> bytes:
    """The body, of at most ``limit`` bytes; ``TooLarge`` for a longer one."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > DRAIN_BYTES:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            chunks.clear()
            if size > DRAIN_BYTES:
                break
            continue
        chunks.append(chunk)
    if size > limit:
        raise too_large(limit)
    return b"".join(chunks)


class DrainBody:
    """ASGI middleware: before an answer goes out, read (and drop) whatever of the request body the app left
    unread, up to :data:`DRAIN_BYTES`; past that, the answer says ``Connection: close``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state = getattr(app, "state", None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        done = False
        seen = 0

        async def tracked() -> Message:
            nonlocal done, seen
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                done = True
            seen += len(message.get("body", b""))
            return message

        async def drained(message: Message) -> None:
            nonlocal done, seen
            if message["type"] == "http.response.start" and not done:
                while not done and seen <= DRAIN_BYTES:
                    await tracked()
                if not done:
                    message["headers"] = [*message.get("headers", ()), (b"connection", b"close")]
            await send(message)

        await self.app(scope, tracked, drained)
