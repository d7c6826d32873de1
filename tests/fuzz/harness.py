"""A real ``pumice up`` on loopback for fuzzing, and a client that tells a dropped connection from an answer."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice.server import free_port


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]
    seconds: float

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class Dropped(Exception):
    """The server closed the connection (or broke a chunked answer) instead of answering."""


#: uvicorn closes a keep-alive connection idle for 5 s: a client reconnects before reusing an older one.
IDLE_RECONNECT = 4.0


class Client:
    """One keep-alive HTTPS connection with the bearer token; reconnects only when the server said it would
    close (``Connection: close``) or the connection sat idle as long as the server keeps one."""

    def __init__(self, url: str, token: str, context: ssl.SSLContext, timeout: float = 30.0) -> None:
        host, port = url.removeprefix("https://").rsplit(":", 1)
        self.host, self.port, self.token, self.context, self.timeout = host, int(port), token, context, timeout
        self.conn: http.client.HTTPSConnection | None = None
        self.requests = 0
        self.last = 0.0
        self.previous = ""  # the request before, on this connection (a drop may be its doing)

    def _connection(self) -> http.client.HTTPSConnection:
        if self.conn is not None and time.monotonic() - self.last > IDLE_RECONNECT:
            self.close()
        if self.conn is None:
            self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=self.timeout)
        return self.conn

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
                *, auth: bool = True) -> Answer:
        sent = dict(headers or {})
        if auth:
            sent["Authorization"] = f"Bearer {self.token}"
        conn = self._connection()
        self.requests += 1
        started = time.perf_counter()
        try:
            conn.request(method, path, body=body, headers=sent)
            resp = conn.getresponse()
            data = resp.read()
        except (http.client.HTTPException, OSError) as exc:
            previous = self.previous
            self.close()
            raise Dropped(f"{method} {path}: {exc!r} (the request before on this connection: {previous})") from exc
        answer = Answer(resp.status, data, {k.lower(): v for k, v in resp.getheaders()},
                        time.perf_counter() - started)
        self.last = time.monotonic()
        self.previous = f"{method} {path} {sent.get('Content-Type')} {(body or b'')[:200]!r} -> {resp.status} " \
                        f"{answer.headers.get('connection')}"
        if answer.headers.get("connection", "").lower() == "close":
            self.close()
        return answer

    def close(self) -> None:
        self.previous = "(a new connection)"
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None


@dataclass
class Up:
    """A ``pumice up`` process: where it serves and how to reach it."""

    process: subprocess.Popen[bytes]
    directory: Path
    url: str
    token: str
    context: ssl.SSLContext
    log: Path

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def client(self, timeout: float = 30.0) -> Client:
        return Client(self.url, self.token, self.context, timeout)


def start_up(directory: Path, *, time_scale: float = 10.0, extra: tuple[str, ...] = ()) -> Up:
    """Start ``pumice up`` in the foreground of a child process; returns once it answers ``/healthz``."""
    port = free_port()
    directory.mkdir(parents=True, exist_ok=True)
    log = directory.parent / f"{directory.name}.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "pumice.cli.main", "up", "--data-dir", str(directory), "--port", str(port),
             "--time-scale", str(time_scale), *extra],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"pumice up exited with {process.returncode}: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            stop_up(process)
            raise RuntimeError(f"pumice up did not answer within 60 s: {log.read_text()[-2000:]}")
        ca = directory / "ca.crt"
        if ca.exists() and (directory / "token").exists() and (directory / "pumice.pid").exists():
            try:
                context = ssl.create_default_context(cafile=str(ca))
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    conn.close()
                    break
            except (OSError, ssl.SSLError, http.client.HTTPException):
                pass
        time.sleep(0.1)
    token = (directory / "token").read_text().strip()
    return Up(process, directory, url, token, context, log)


def stop_up(process: subprocess.Popen[bytes], *, kill: bool = False, timeout: float = 30.0) -> None:
    """Stop the process (SIGTERM, or SIGKILL with ``kill``) and reap it."""
    if process.poll() is None:
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)


@contextlib.contextmanager
def running_up(directory: Path, **kwargs: Any) -> Iterator[Up]:
    up = start_up(directory, **kwargs)
    try:
        yield up
    finally:
        stop_up(up.process)


@dataclass
class WatchChecker:
    """Background watches, one after another, each of which must end with its final chunk."""

    up: Up
    paths: tuple[str, ...]
    timeout: float = 3.0
    streams: int = 0
    events: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> WatchChecker:
        self._thread = threading.Thread(target=self._run, name="watch-checker", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        client = self.up.client(timeout=self.timeout + 30)
        while not self._stop.is_set():
            for path in self.paths:
                try:
                    answer = client.request("GET", f"{path}?watch=1&timeoutSeconds={self.timeout:g}")
                except Dropped as exc:
                    self.failures.append(f"watch {path}: {exc}")
                    continue
                self.streams += 1
                if answer.status != 200:
                    self.failures.append(f"watch {path}: HTTP {answer.status} {answer.body[:200]!r}")
                    continue
                for line in answer.body.splitlines():
                    if line.strip():
                        try:
                            json.loads(line)
                        except ValueError:
                            self.failures.append(f"watch {path}: a line that is not JSON: {line[:200]!r}")
                        self.events += 1
        client.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 40)
