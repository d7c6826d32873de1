"""Connection hygiene for the API server: a header-read timeout, an idle timeout and a cap on connections.

uvicorn closes a keep-alive connection that stays idle after a response, but waits forever for the first
request of a connection, or for the rest of a request line that a client started and never finished: a few
hundred such clients would hold the server's connections for good (kube-apiserver 1.20 holds them too). Here:

- a request's headers must arrive within ``header_timeout`` seconds of the connection opening (or of the first
  bytes of the next request on a kept-alive connection), else the server answers ``408`` and closes it;
- a kept-alive connection idle for ``idle_timeout`` seconds is closed (uvicorn's ``timeout_keep_alive``);
- past ``max_connections`` open connections, a new one is answered ``503`` (a Kubernetes ``Status``) and
  closed at once, and a request is answered ``503`` when as many are in flight (uvicorn's
  ``limit_concurrency``).

Watches and other long answers are not affected: the header timer stops once a request's headers are in.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "ConnectionLimits",
    "guarded_protocol",
]

#: Seconds a client has to send a request's headers.
DEFAULT_HEADER_TIMEOUT = 10.0
#: Seconds a kept-alive connection may stay idle between requests.
DEFAULT_IDLE_TIMEOUT = 60.0
#: Open connections at most (watches included); more are answered 503.
DEFAULT_MAX_CONNECTIONS = 1000


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The server's connection limits (see the module's description)."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    def __post_init__(self) -> None:
        if not self.header_timeout > 0 or not self.idle_timeout > 0:
            raise ValueError("connection timeouts must be positive numbers of seconds")
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")


def _raw_response(code: int, reason: str, status: dict[str, Any] | None) -> bytes:
    body = b"" if status is None else json.dumps(status).encode()
    head = (f"HTTP/1.1 {code} {reason}\r\nConnection: close\r\nContent-Length: {len(body)}\r\n"
            + ("Content-Type: application/json\r\n" if body else "") + "\r\n")
    return head.encode() + body


_OVERLOADED = _raw_response(503, "Service Unavailable", {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "the server has too many open connections, try again later", "reason": "ServiceUnavailable",
    "code": 503,
})
_TIMED_OUT = _raw_response(408, "Request Timeout", None)


class _GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with a header-read timeout and a connection cap (set by ``guarded_protocol``)."""

    limits: ConnectionLimits = ConnectionLimits()
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            transport.write(_OVERLOADED)
            transport.close()
            return
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # Headers in (the request is being served), or nothing started yet: no header deadline. A request
        # begun but not complete keeps (or, on a kept-alive connection, starts) one.
        waiting = self.conn.their_state is h11.IDLE and bool(self.conn.trailing_data[0])
        if waiting and not self.transport.is_closing():
            self._arm_header_timer()
        else:
            self._disarm_header_timer()

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.limits.header_timeout, self._headers_timed_out)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # pipelined data behind a request still being answered: not a stalled client
        self.transport.write(_TIMED_OUT)
        self.transport.close()


def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """The protocol class (uvicorn's ``http=``) enforcing ``limits``."""
    return type("GuardedH11Protocol", (_GuardedProtocol,), {"limits": limits})
