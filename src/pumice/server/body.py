"""Request bodies read with a size limit, for the API server and the dashboard.

A body larger than the limit is answered ``413`` (``TooLarge``) as kube-apiserver answers it. The rest of it
is still read and dropped, up to :data:`DRAIN_BYTES`, so that a client that sends the whole body before it
reads the answer gets the 413 on a connection that stays usable; past that the server stops reading (and the
connection closes after the answer).
"""

from __future__ import annotations

from starlette.requests import Request

from pumice.store import TooLarge

__all__ = ["DRAIN_BYTES", "read_body", "too_large"]

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
