"""Run the app under uvicorn in a background thread (tests, ``pumice up``), bound to loopback only, with the
connection limits of ``connections`` (header-read and idle timeouts, a cap on connections)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import Any

import uvicorn

from .connections import ConnectionLimits, guarded_protocol
from .tls import TlsFiles

__all__ = ["ServerThread", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class ServerThread:
    """uvicorn serving ``app`` on ``host:port`` from a daemon thread; ``start()`` waits until it listens."""

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: TlsFiles | None = None,
        log_level: str = "warning",
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.tls = tls
        self.limits = limits if limits is not None else ConnectionLimits()
        extra: dict[str, Any] = {}
        if tls is not None:
            extra = {"ssl_certfile": str(tls.cert), "ssl_keyfile": str(tls.key)}
        config = uvicorn.Config(app, host=self.host, port=self.port, log_level=log_level, access_log=False,
                                lifespan="off", timeout_graceful_shutdown=2, loop="asyncio",
                                http=guarded_protocol(self.limits),
                                timeout_keep_alive=self.limits.idle_timeout,  # type: ignore[arg-type]
                                # requests in flight: the connection cap is enforced at connect (``connections``)
                                limit_concurrency=self.limits.max_connections + 1, **extra)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"pumice-server-{self.port}", daemon=True)
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    def _run(self) -> None:
        try:
            asyncio.run(self.server.serve())
        except BaseException as exc:  # surfaced by start()
            self._error = exc

    def start(self, timeout: float = 10.0) -> ServerThread:
        self._thread.start()
        waited = 0.0
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the API server did not start on {self.url}: {self._error!r}")
            if waited >= timeout:
                self.stop()
                raise RuntimeError(f"the API server did not start on {self.url} within {timeout} s")
            self._thread.join(0.02)
            waited += 0.02
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._thread.is_alive():  # pragma: no cover - open streams that would not close
            self.server.force_exit = True
            with contextlib.suppress(RuntimeError):
                self._thread.join(timeout)

    def wait(self) -> None:
        """Block until the server stops."""
        self._thread.join()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
