"""The Kubernetes store's client (``pumice run``) against an API server that misbehaves: 500s, hangs, bodies
that trickle in, answers that are not JSON or are nested too deeply, watch streams of garbage. Every failure
is a ``StoreError`` within the client's time bounds (never a hang, never another exception that would stop a
component), and a server that recovers is used again.

kube-apiserver cannot be made to misbehave on demand: the server is ``tests.hostile_server``'s scripted one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from pumice.store import StoreError
from pumice.store.kube.connection import Connection
from pumice.store.kube.http import ApiClient
from pumice.store.kube.informer import Informer, Ledger
from pumice.store.resources import ResourceInfo
from tests.hostile_server import HostileServer, Step, answer, hang, hostile, trickle

__all__ = ["hostile"]  # the fixture

CONFIGMAPS = ResourceInfo("configmaps", "v1", "ConfigMap", namespaced=True, has_status=False)


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
