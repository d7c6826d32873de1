"""``ApiClient``: JSON requests to one API server, rate-limited and retried.

Requests go over ``Wire``'s kept-alive HTTP/1.1 connections (the CPU of a binding or an event is the
scheduler's per-pod cost on a real cluster: see ``wire``); watch streams over aiohttp.

Every request (but watches) takes a token from the client-side rate limiter (``qps``/``burst``, as
client-go's). Throttling (429, with its ``Retry-After``), server errors (5xx) and lost connections are
retried with exponential backoff and jitter until ``retry_deadline``; a ``409`` is retried only for a
request the caller marks ``redo_conflict`` (safe to repeat: a merge patch without a resourceVersion).
Kubernetes ``Status`` failures become the store's errors (``NotFound``, ``Conflict``, ``AlreadyExists``,
``Gone``, ``Invalid``, ``BadRequest``), so callers catch the same exceptions as against the embedded store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from pumice.store.errors import AlreadyExists, StoreError, error_from_status

from .connection import Connection, ConnectionError_
from .ratelimit import TokenBucket
from .wire import Wire

__all__ = ["ApiClient", "ApiFailure", "decode", "status_error"]

log = logging.getLogger("pumice.kube")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
_RETRIED = frozenset({429, 500, 502, 503, 504})
#: How long a write keeps being retried through throttling, server errors and an API server restart.
RETRY_DEADLINE = 60.0
BACKOFF_START = 0.1
BACKOFF_MAX = 5.0


class ApiFailure(StoreError):
    """Any other failure the API server answered with (403 Forbidden, 415, 500 after the retries, ...)."""

    def __init__(self, message: str, code: int = 500, reason: str = "InternalError") -> None:
        super().__init__(message)
        self.code = code  # type: ignore[misc]
        self.reason = reason  # type: ignore[misc]


def status_error(code: int, body: Any, what: str) -> StoreError:
    """The store error for an API server failure (``body``: its ``Status``, when it sent one)."""
    status = body if isinstance(body, dict) else {}
    message = str(status.get("message") or f"{what}: HTTP {code}")
    reason = str(status.get("reason") or "")
    if code in (400, 404, 409, 410, 422):  # the failures clients handle: their store errors, details kept
        return error_from_status({**status, "message": message, "reason": reason}, code)
    return ApiFailure(message, code, reason or "InternalError")


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_not_json)


def decode(raw: bytes, what: str) -> Any:
    """An answer of the API server as JSON; anything else (a proxy's HTML page, a truncated body, nesting past
    the interpreter's stack, ``NaN``) is an :class:`ApiFailure` naming the request, never another exception."""
    try:
        return _DECODER.decode(raw.decode())
    except RecursionError:
        raise ApiFailure(f"{what}: the API server's answer is not JSON: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, a constant
        raise ApiFailure(f"{what}: the API server's answer is not JSON: {err}") from None


def _backoff(attempt: int) -> float:
    return min(BACKOFF_MAX, BACKOFF_START * 2 ** attempt) * (0.5 + random.random() / 2)


class ApiClient:
    """Requests to ``connection``'s server; create it and use it on one event loop."""

    def __init__(self, connection: Connection, *, qps: float = 2000.0, burst: int = 2000,
                 request_timeout: float = 30.0, retry_deadline: float = RETRY_DEADLINE) -> None:
        self.connection = connection
        self.server = connection.server.rstrip("/")
        self.limiter = TokenBucket(qps, burst)
        self.request_timeout = request_timeout
        self.retry_deadline = retry_deadline
        self._session: aiohttp.ClientSession | None = None  # watch streams
        self._wire: Wire | None = None  # every other request
        self._auth_seen: dict[str, str] | None = None
        self._rendered: dict[str | None, str] = {}
        self.requests = 0
        self.retries = 0

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=self.connection.ssl if self.connection.ssl is not None else False,
                                             limit=256, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, read_bufsize=1 << 22,
                                                  headers={"User-Agent": "pumice", "Accept": JSON})
        return self._session

    def _wire_open(self) -> Wire:
        if self._wire is None:
            self._wire = Wire(self.server, self.connection.ssl)
        return self._wire

    def _header_lines(self, content_type: str | None) -> str:
        """The request's header lines after ``Host``, rendered once per set of auth headers and content type."""
        auth = self.connection.headers()
        if auth is not self._auth_seen and auth != self._auth_seen:  # refreshed, or the first request
            self._auth_seen = auth
            self._rendered.clear()
        lines = self._rendered.get(content_type)
        if lines is None:
            fields = {"User-Agent": "pumice", "Accept": JSON, **auth}
            if content_type:
                fields["Content-Type"] = content_type
            lines = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
            if lines.count("\n") != len(fields) or not lines.isascii():
                raise ConnectionError_("the connection's credentials make a header that is not one line of ASCII")
            self._rendered[content_type] = lines
        return lines

    async def close(self) -> None:
        if self._wire is not None:
            self._wire.close()
            self._wire = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(self, method: str, path: str, body: Any = None, *, params: Mapping[str, str] | None = None,
                      content_type: str = JSON, redo_conflict: bool = False, what: str = "",
                      deadline: float | None = None, answer: bool = True) -> Any:
        """One request; the decoded JSON answer (``answer=False``: an empty one, for a caller that does not read
        it: a binding, an event). Retries as the module docstring says, then raises."""
        wire = self._wire_open()
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        what = what or f"{method} {path}"
        give_up = time.monotonic() + (self.retry_deadline if deadline is None else deadline)
        attempt = 0
        query = dict(params) if params else None
        while True:
            await self.limiter.acquire()
            self.requests += 1
            try:
                async with asyncio.timeout(self.request_timeout):
                    code, raw, retry_after = await wire.request(
                        method, path, self._header_lines(content_type if data is not None else None), data, query)
            except (OSError, TimeoutError) as err:  # refused, reset, TLS, not HTTP, no answer in time
                failure: StoreError = ConnectionError_(f"cannot reach {self.server}: {_why(err)}")
                code, retry_after, raw = 0, None, b""
            else:
                if code < 300:
                    return decode(raw, what) if raw and answer else {}
                try:
                    status = decode(raw, what) if raw else None
                except ApiFailure:
                    status = {"message": raw.decode(errors="replace")[:200]}
                failure = status_error(code, status, what)
            retriable = code == 0 or code in _RETRIED or (code == 409 and redo_conflict
                                                          and not isinstance(failure, AlreadyExists))
            if not retriable or time.monotonic() >= give_up:
                raise failure
            delay = _backoff(attempt)
            if retry_after and retry_after.isdigit():
                delay = max(delay, float(retry_after))
            attempt += 1
            self.retries += 1
            if attempt in (1, 5, 20):
                log.info("%s: %s; retrying", what, failure.message)
            await asyncio.sleep(min(delay, max(0.0, give_up - time.monotonic())))

    async def stream(self, path: str, params: Mapping[str, str], read_timeout: float) -> AsyncIterator[dict[str, Any]]:
        """The events of a watch, decoded one per line; ends when the server ends the stream."""
        session = self._open()
        await self.limiter.acquire()
        self.requests += 1
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout, sock_read=read_timeout)
        async with session.get(self.server + path, params=params, timeout=timeout,
                               headers=self.connection.headers()) as resp:
            if resp.status >= 300:
                raw = await resp.read()
                try:
                    answer = decode(raw, f"watch {path}") if raw else None
                except ApiFailure:
                    answer = None
                raise status_error(resp.status, answer, f"watch {path}")
            content = resp.content
            while True:
                line = await content.readline()
                if not line:
                    return
                if line.strip():
                    yield decode(line, f"watch {path}")


def _why(err: BaseException) -> str:
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, TimeoutError):
            return "timed out"
        cause = cause.__cause__ or cause.__context__
    text = str(err)
    return text or type(err).__name__
