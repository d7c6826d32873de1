"""The Kubernetes store's client (``pumice run``) against an API server that misbehaves: 500s, hangs, bodies
that trickle in, answers that are not JSON or are nested too deeply, watch streams of garbage. Every failure
is a ``StoreError`` within the client's time bounds (never a hang, never another exception that would stop a
component), and a server that recovers is used again.

kube-apiserver cannot be made to misbehave on demand, so the server here is a scripted one on loopback that
speaks just enough HTTP/1.1: each request takes the next step of its path's script.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from pumice.store import StoreError
from pumice.store.kube.connection import Connection
from pumice.store.kube.http import ApiClient
from pumice.store.kube.informer import Informer, Ledger
from pumice.store.resources import ResourceInfo

Step = Callable[[socket.socket], None]
CONFIGMAPS = ResourceInfo("configmaps", "v1", "ConfigMap", namespaced=True, has_status=False)


def answer(status: int, body: bytes, *, chunked: bool = False) -> Step:
    def step(sock: socket.socket) -> None:
        head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        if chunked:
            sock.sendall(head.encode() + b"Transfer-Encoding: chunked\r\n\r\n")
            for line in body.split(b"\n"):
                part = line + b"\n"
                sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            sock.sendall(b"0\r\n\r\n")
        else:
            sock.sendall(head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    return step


def hang(sock: socket.socket) -> None:
    """Read the request, never answer (until the client gives up)."""
    sock.settimeout(30)
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass


def trickle(sock: socket.socket) -> None:
    """Headers at once, then the body one byte every 0.2 s: it would take 200 s."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    with contextlib.suppress(OSError):
        for _ in range(1000):
            sock.sendall(b" ")
            time.sleep(0.2)


class HostileServer:
    """Plain HTTP on a free loopback port; ``script[path]`` is consumed one step per request (the last step
    repeats)."""

    def __init__(self) -> None:
        self.script: dict[str, deque[Step]] = defaultdict(deque)
        self.requests: list[str] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        self._closed = False
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            self._socks.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError), sock:
            while True:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    head += chunk
                request_line = head.split(b"\r\n", 1)[0].decode()
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                rest = head.split(b"\r\n\r\n", 1)[1]
                while len(rest) < length:
                    rest += sock.recv(65536)
                path = request_line.split(" ")[1].split("?")[0]
                self.requests.append(request_line)
                steps = self.script[path]
                step = steps.popleft() if len(steps) > 1 else steps[0]
                step(sock)

    def close(self) -> None:
        self._closed = True
        self.server.close()
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    server = HostileServer()
    yield server
    server.close()


def run(coro_of: Callable[[ApiClient], Coroutine[Any, Any, Any]], server: HostileServer, *,
        request_timeout: float = 1.0, retry_deadline: float = 2.0) -> tuple[Any, float, ApiClient]:
    """``coro_of(client)`` on a fresh event loop: (its result or the exception it raised, seconds, client)."""
    client = ApiClient(Connection(server.url), request_timeout=request_timeout, retry_deadline=retry_deadline)

    async def go() -> Any:
        try:
            return await coro_of(client)
        except Exception as err:  # the test looks at which exception it was
            return err
        finally:
            await client.close()

    started = time.monotonic()
    result = asyncio.run(go())
    return result, time.monotonic() - started, client


PATH = "/api/v1/namespaces/default/configmaps/cm"
CM = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default",
                                                                       "resourceVersion": "7"}}).encode()


def get(client: ApiClient) -> Coroutine[Any, Any, Any]:
    return client.request("GET", PATH)


def test_server_errors_are_retried_until_the_server_recovers(hostile: HostileServer) -> None:
    hostile.script[PATH].extend([answer(500, b'{"kind":"Status","code":500}'), answer(503, b""), answer(200, CM)])
    result, _, client = run(get, hostile, retry_deadline=10)
    assert result["metadata"]["name"] == "cm"
    assert client.retries == 2


@pytest.mark.parametrize("behaviour", [
    answer(500, b'{"kind":"Status","code":500,"message":"etcd is down"}'),
    hang,
    trickle,
], ids=["always-500", "hangs", "trickles"])
def test_a_server_that_never_answers_well_is_a_store_error_in_bounded_time(hostile: HostileServer,
                                                                           behaviour: Step) -> None:
    hostile.script[PATH].append(behaviour)
    result, seconds, _ = run(get, hostile, request_timeout=1.0, retry_deadline=2.0)
    assert isinstance(result, StoreError), result
    assert seconds < 2.0 + 1.0 + 2.0, seconds  # the deadline, one request's timeout, and slack for a busy machine


@pytest.mark.parametrize("body", [b"<html>proxy error</html>", b"[" * 5000 + b"]" * 5000, b'{"a":NaN}',
                                  b"\xff\xfe", b"{" + b'"a":' * 3000],
                         ids=["html", "nested-5000", "nan", "not-utf8", "truncated"])
def test_a_success_that_is_not_json_is_a_store_error_naming_the_request(hostile: HostileServer,
                                                                         body: bytes) -> None:
    hostile.script[PATH].append(answer(200, body))
    result, seconds, _ = run(get, hostile)
    assert isinstance(result, StoreError), repr(result)
    assert PATH in result.message and "JSON" in result.message, result.message
    assert seconds < 2


def test_a_failure_with_a_deeply_nested_status_is_still_its_store_error(hostile: HostileServer) -> None:
    hostile.script[PATH].append(answer(404, b'{"kind":"Status","details":' + b"[" * 5000 + b"]" * 5000 + b"}"))
    result, _, _ = run(get, hostile)
    assert isinstance(result, StoreError) and result.code == 404, repr(result)


def test_a_watch_of_garbage_is_watched_again_and_the_cache_stays_right(
        hostile: HostileServer, caplog: pytest.LogCaptureFixture) -> None:
    """Lines that are not JSON, events that are not objects, a nested bomb: the informer logs, watches again
    from where it was, and the objects of the good events are in its cache."""
    collection = "/api/v1/configmaps"
    listed = {"kind": "ConfigMapList", "metadata": {"resourceVersion": "5"}, "items": []}
    event = {"type": "ADDED", "object": json.loads(CM)}
    watches = [b"not json\n", b"[1, 2]\n", b'{"type": "ADDED", "object": "a string"}\n',
               b"[" * 5000 + b"]" * 5000 + b"\n", json.dumps(event).encode() + b"\n"]
    hostile.script[collection].append(answer(200, json.dumps(listed).encode()))
    ledger = Ledger()
    seen: list[int] = []

    async def go(client: ApiClient) -> Any:
        informer = Informer(CONFIGMAPS, client, ledger, watch_timeout=(30, 30))
        task = asyncio.create_task(informer.run())
        try:
            for _ in range(400):
                await asyncio.sleep(0.05)
                with ledger.lock:
                    if ("default", "cm") in informer.objects:
                        seen.append(1)
                        break
        finally:
            informer.stop()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return informer

    # the first request lists; then every watch gets one of the hostile streams, the last a good event
    hostile.script[collection].extend([answer(200, line, chunked=True) for line in watches])
    hostile.script[collection].append(hang)
    with caplog.at_level(logging.WARNING, logger="pumice.kube"):
        informer, _, _ = run(go, hostile, request_timeout=5, retry_deadline=5)
    assert not isinstance(informer, Exception), informer
    assert seen, f"the good event never reached the cache; requests: {hostile.requests}"
    assert informer.objects[("default", "cm")]["metadata"]["resourceVersion"] == "7"
    assert any("watch failed" in r.getMessage() for r in caplog.records)
    assert informer.error is None
