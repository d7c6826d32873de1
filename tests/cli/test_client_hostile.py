"""The CLI's client against an API server that misbehaves (``tests.hostile_server``): an answer that is not
JSON, nested past the stack, or a watch event that is not an object is an ``ApiError`` (one line from the CLI),
never a ``RecursionError`` or ``AttributeError`` traceback."""

from __future__ import annotations

import time

import pytest

from pumice.client import ApiError, ClientError, KubeClient
from pumice.client.config import ClientConfig
from tests.hostile_server import HostileServer, answer, hang, hostile

__all__ = ["hostile"]  # the fixture

PATH = "/api/v1/namespaces/default/configmaps/cm"
NESTED = b"[" * 5000 + b"]" * 5000


@pytest.mark.parametrize("status, body", [(200, NESTED), (200, b"<html>"), (404, b'{"kind":"Status","x":' + NESTED +
                                                                           b"}")],
                         ids=["ok-nested", "ok-html", "404-nested"])
def test_answers_that_are_not_json_are_api_errors(hostile: HostileServer, status: int, body: bytes) -> None:
    hostile.script[PATH].append(answer(status, body))
    with KubeClient(ClientConfig(server=hostile.url, source="--server")) as client, \
            pytest.raises(ApiError) as caught:
        client.request("GET", PATH)
    if status == 404:  # the failure is still the server's 404, its text the message
        assert caught.value.code == 404
    else:
        assert "not JSON" in str(caught.value) and PATH in str(caught.value)


@pytest.mark.parametrize("line", [NESTED, b"[1]", b'"a"', b'{"type": "ERROR", "object": "x"}',
                                  b'{"type": "ERROR", "object": {"code": "x"}}'],
                         ids=["nested", "a-list", "a-string", "error-of-a-string", "error-code-a-string"])
def test_watch_events_that_are_not_objects_are_api_errors(hostile: HostileServer, line: bytes) -> None:
    hostile.script["/api/v1/namespaces/default/configmaps"].append(answer(200, line + b"\n", chunked=True))
    with KubeClient(ClientConfig(server=hostile.url, source="--server")) as client, \
            pytest.raises(ApiError):
        list(client.watch("configmaps", "default", timeout_seconds=5))


def test_a_server_that_hangs_is_an_error_after_the_timeout(hostile: HostileServer) -> None:
    hostile.script[PATH].append(hang)
    started = time.monotonic()
    with KubeClient(ClientConfig(server=hostile.url, source="--server"), timeout=1.0) as client, \
            pytest.raises(ClientError):
        client.request("GET", PATH)
    assert time.monotonic() - started < 5
