"""``?watch=1``: a store ``Watcher`` streamed as JSON lines, without blocking the event loop.

Each line is one ``{"type": ..., "object": ...}``. Events already queued are sent together in one chunk.
With ``allowWatchBookmarks`` a ``BOOKMARK`` carrying the latest resourceVersion is sent when the stream has
been quiet for ``bookmark_interval`` seconds — only once every event up to that version has been sent, so a
client may resume from it. The stream ends after ``timeoutSeconds`` (or when the store closes); the watcher
is always closed, also when the client goes away.

A stream always ends with its final chunk: should anything fail while it runs, the client gets an ``ERROR``
event with a ``Status`` (as kube-apiserver ends a watch it cannot continue) instead of a connection cut in the
middle of the chunked answer; it lists and watches again, as after a ``410``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from pumice.store import StoreError, Watch, WatchEvent

__all__ = ["error_event", "stream_events"]

log = logging.getLogger("pumice.server")

Encoder = Callable[[str, dict[str, Any]], dict[str, Any]]


def _line(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def error_event(error: StoreError) -> bytes:
    """An ``ERROR`` event carrying ``error``'s ``Status`` (how a watch reports ``410 Gone``)."""
    return _line("ERROR", error.to_status())


async def stream_events(
    watcher: Watch,
    *,
    encode: Encoder,
    timeout: float,
    bookmark_interval: float | None,
    bookmark_object: Callable[[str], dict[str, Any]],
    current_version: Callable[[], str],
    start_version: int = 0,
) -> AsyncIterator[bytes]:
    """The watch as chunks of JSON lines; ``encode(type, object)`` shapes each object (e.g. as a Table)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    next_bookmark = None if bookmark_interval is None else loop.time() + bookmark_interval
    sent_version = start_version
    try:
        while True:
            now = loop.time()
            if now >= deadline:
                return
            wait = deadline - now
            if next_bookmark is not None:
                wait = min(wait, max(0.0, next_bookmark - now))
            event = await watcher.anext(wait)
            if event is None:
                if watcher.closed and watcher.pending == 0:
                    return
                if next_bookmark is not None and loop.time() >= next_bookmark:
                    version = current_version()
                    if watcher.pending == 0 and int(version) >= sent_version:  # nothing up to it is unsent
                        sent_version = int(version)
                        yield _line("BOOKMARK", bookmark_object(version))
                    next_bookmark = loop.time() + (bookmark_interval or 0.0)
                continue
            events: list[WatchEvent] = [event, *watcher.drain()]
            chunk = []
            for ev in events:
                if ev.type == "BOOKMARK":  # the store's own bookmarks, if any were asked for
                    version = str((ev.object.get("metadata") or {}).get("resourceVersion") or "0")
                    chunk.append(_line("BOOKMARK", bookmark_object(version)))
                    continue
                event_version = (ev.object.get("metadata") or {}).get("resourceVersion")
                if isinstance(event_version, str) and event_version.isdigit():
                    sent_version = max(sent_version, int(event_version))
                chunk.append(_line(ev.type, encode(ev.type, ev.object)))
            if next_bookmark is not None:
                next_bookmark = loop.time() + (bookmark_interval or 0.0)
            yield b"".join(chunk)
    except Exception as exc:  # anything but the client going away (a BaseException): end the stream cleanly
        log.error("watch stream failed", exc_info=exc)
        yield error_event(_WatchFailed(f"Internal error occurred: the watch ended: {exc}"))
    finally:
        watcher.close()


class _WatchFailed(StoreError):
    code = 500
    reason = "InternalError"
