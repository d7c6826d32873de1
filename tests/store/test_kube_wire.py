"""``Wire``, the kept-alive HTTP/1.1 connections the Kubernetes store sends its requests over: connections are
reused, one the server closed is never used again, every way an answer can be framed is read whole, and an
answer that is not HTTP is a connection failure (which ``ApiClient`` retries, then reports as a store error).

Against ``tests.hostile_server``'s scripted server (plain HTTP); the real kube-apiserver over TLS is what the
``tests/kube`` suites run on.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from pumice.store import StoreError
from pumice.store.kube.connection import Connection
from pumice.store.kube.http import ApiClient
from pumice.store.kube.wire import Wire, WireError
from tests.hostile_server import HostileServer, Step, answer, hostile

__all__ = ["hostile"]  # the fixture

PATH = "/api/v1/namespaces/default/configmaps/cm"


def on_wire(server: HostileServer, use: Callable[[Wire], Coroutine[Any, Any, Any]], prefix: str = "") -> Any:
    async def go() -> Any:
        wire = Wire(server.url + prefix, None)
        try:
            return await asyncio.wait_for(use(wire), 10)
        finally:
            wire.close()

    return asyncio.run(go())


def body_of(i: int) -> bytes:
    return json.dumps({"kind": "ConfigMap", "metadata": {"name": f"cm-{i}"}, "data": {"x": "y" * i}}).encode()


def then_close(step: Step) -> Step:
    """Answer, then close the connection (as a server that does not keep connections alive)."""
    def closing(sock: socket.socket) -> None:
        step(sock)
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    return closing


def unframed(body: bytes) -> Step:
    """An answer with neither Content-Length nor chunks: its body ends when the connection does."""
    def step(sock: socket.socket) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + body)
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    return step


def get(client: ApiClient, path: str) -> Any:
    """``GET path`` through the client on a fresh event loop: the answer, or the store error it raised."""
    async def go() -> Any:
        try:
            return await client.request("GET", path)
        except StoreError as err:
            return err
        finally:
            await client.close()

    return asyncio.run(go())


def test_sequential_requests_share_one_connection_and_concurrent_ones_get_their_own(hostile: HostileServer) -> None:
    hostile.script[PATH].extend([answer(200, body_of(i)) for i in range(40)])

    async def use(wire: Wire) -> list[Any]:
        one_by_one = [await wire.request("GET", PATH, "") for _ in range(20)]
        together = await asyncio.gather(*(wire.request("GET", PATH, "") for _ in range(20)))
        return one_by_one + list(together)

    answers = on_wire(hostile, use)
    assert [code for code, _, _ in answers] == [200] * 40
    assert sorted(json.loads(body)["metadata"]["name"] for _, body, _ in answers) == sorted(
        f"cm-{i}" for i in range(40))
    assert [json.loads(body)["metadata"]["name"] for _, body, _ in answers[:20]] == [f"cm-{i}" for i in range(20)]
    assert len(hostile._socks) == 20  # one for the first twenty, then one each for the other twenty but one


def test_a_connection_the_server_closed_is_never_used_again(hostile: HostileServer) -> None:
    hostile.script[PATH].extend([then_close(answer(200, body_of(i))) for i in range(5)])

    async def use(wire: Wire) -> list[Any]:
        answers = []
        for _ in range(5):
            answers.append(await wire.request("GET", PATH, ""))
            await asyncio.sleep(0.05)  # the server's close arrives before the next request
        return answers

    answers = on_wire(hostile, use)
    assert [json.loads(body)["metadata"]["name"] for _, body, _ in answers] == [f"cm-{i}" for i in range(5)]
    assert len(hostile._socks) == 5


@pytest.mark.parametrize("step", [answer(200, body_of(3000), chunked=True), unframed(body_of(3000)),
                                  answer(200, body_of(3000))], ids=["chunked", "until-close", "content-length"])
def test_every_framing_of_an_answer_is_read_whole(hostile: HostileServer, step: Step) -> None:
    hostile.script[PATH].append(step)
    code, body, _ = on_wire(hostile, lambda wire: wire.request("GET", PATH, ""))
    assert code == 200 and json.loads(body) == json.loads(body_of(3000))


def test_a_server_prefix_and_the_query_are_in_the_request_line(hostile: HostileServer) -> None:
    hostile.script["/k8s/c1" + PATH].append(answer(200, b"{}"))
    code, _, _ = on_wire(hostile, lambda wire: wire.request(
        "GET", PATH, "", params={"labelSelector": "app=a,tier!=b"}), prefix="/k8s/c1/")
    assert code == 200
    assert hostile.requests == [f"GET /k8s/c1{PATH}?labelSelector=app%3Da%2Ctier%21%3Db HTTP/1.1"]


def test_the_retry_after_header_and_the_failure_body_are_the_answer(hostile: HostileServer) -> None:
    def throttled(sock: socket.socket) -> None:
        body = b'{"kind":"Status","code":429}'
        sock.sendall(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    hostile.script[PATH].append(throttled)
    assert on_wire(hostile, lambda wire: wire.request("GET", PATH, "")) == (429, b'{"kind":"Status","code":429}',
                                                                           "1")


def test_an_answer_that_is_not_http_is_a_connection_failure(hostile: HostileServer) -> None:
    hostile.script[PATH].append(lambda sock: sock.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\r\n"))
    with pytest.raises(WireError):
        on_wire(hostile, lambda wire: wire.request("GET", PATH, ""))


def test_a_server_that_closes_mid_answer_is_a_connection_failure(hostile: HostileServer) -> None:
    def cut(sock: socket.socket) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\":")
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    hostile.script[PATH].append(cut)
    with pytest.raises(OSError):
        on_wire(hostile, lambda wire: wire.request("GET", PATH, ""))


def test_the_client_retries_lost_connections_and_then_reports_a_store_error(hostile: HostileServer) -> None:
    """Not HTTP twice, then a good answer: the client's retries get it; never good: a store error, in time."""
    garbage: Step = then_close(lambda sock: sock.sendall(b"garbage\r\n\r\n"))
    hostile.script[PATH].extend([garbage, garbage, answer(200, body_of(1))])
    client = ApiClient(Connection(hostile.url), request_timeout=1.0, retry_deadline=5.0)
    assert get(client, PATH)["metadata"]["name"] == "cm-1"
    assert client.retries == 2
    never = "/api/v1/never"
    hostile.script[never].append(garbage)
    failure = get(ApiClient(Connection(hostile.url), request_timeout=1.0, retry_deadline=1.0), never)
    assert isinstance(failure, StoreError) and "cannot reach" in failure.message, failure


def test_credentials_that_would_break_the_request_are_refused(hostile: HostileServer) -> None:
    failure = get(ApiClient(Connection(hostile.url, auth=lambda: {"Authorization": "Bearer a\r\nX-Evil: 1"})), PATH)
    assert isinstance(failure, StoreError) and "credentials" in failure.message, failure
    assert hostile.requests == []
