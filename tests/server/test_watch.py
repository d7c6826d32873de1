"""Watches over HTTP: events in order, bookmarks, timeouts, 410 Gone after compaction, tables."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pumice.store import MemoryStore
from tests.builders import pod

from .conftest import TOKEN, Api

PODS = "/api/v1/namespaces/default/pods"


def _later(delay: float, fn: Callable[[], object]) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        fn()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_events_arrive_in_order_and_the_watch_times_out(api: Api) -> None:
    _, first = api.request("POST", PODS, pod("a"))
    rv = first["metadata"]["resourceVersion"]

    def writes() -> None:
        api.request("POST", PODS, pod("b"))
        api.request("PATCH", f"{PODS}/a", {"metadata": {"labels": {"x": "1"}}},
                    content_type="application/merge-patch+json")
        api.request("DELETE", f"{PODS}/b")

    writer = _later(0.3, writes)
    started = time.monotonic()
    events = list(api.watch(f"{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=2"))
    writer.join()
    assert 1.5 < time.monotonic() - started < 6
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)


def test_watch_without_version_starts_with_the_current_objects(api: Api) -> None:
    api.request("POST", PODS, pod("a"))
    api.request("POST", "/api/v1/namespaces/other/pods", pod("z"))
    events = list(api.watch("/api/v1/pods?watch=true&timeoutSeconds=1"))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "z")]
    selected = list(api.watch(f"{PODS}?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dnope"))
    assert selected == []


def test_bookmarks_carry_the_latest_version(make_api: Callable[..., Api]) -> None:
    api = make_api(bookmark_interval=0.2)
    _, first = api.request("POST", PODS, pod("a"))
    _later(0.5, lambda: api.request("POST", PODS, pod("b")))
    events = list(api.watch(f"{PODS}?watch=1&resourceVersion={first['metadata']['resourceVersion']}"
                            "&allowWatchBookmarks=true&timeoutSeconds=1.5"))
    kinds = [e["type"] for e in events]
    assert "ADDED" in kinds and kinds.count("BOOKMARK") >= 2
    last = events[-1]
    assert last["type"] == "BOOKMARK" and last["object"]["kind"] == "Pod"
    added = next(e for e in events if e["type"] == "ADDED")
    assert int(last["object"]["metadata"]["resourceVersion"]) >= int(added["object"]["metadata"]["resourceVersion"])
    assert kinds.index("ADDED") < len(kinds) - 1  # a bookmark followed the event
    plain = list(api.watch(f"{PODS}?watch=1&resourceVersion={first['metadata']['resourceVersion']}"
                           "&timeoutSeconds=0.6"))
    assert all(e["type"] != "BOOKMARK" for e in plain)


def test_a_compacted_version_is_an_error_event_with_410(make_api: Callable[..., Api]) -> None:
    api = make_api(store=MemoryStore(history=3))
    _, first = api.request("POST", PODS, pod("a"))
    for i in range(5):
        api.request("PATCH", f"{PODS}/a", {"metadata": {"labels": {"i": str(i)}}},
                    content_type="application/merge-patch+json")
    events = list(api.watch(f"{PODS}?watch=1&resourceVersion={first['metadata']['resourceVersion']}"))
    assert len(events) == 1
    error = events[0]
    assert error["type"] == "ERROR"
    assert error["object"]["kind"] == "Status" and error["object"]["code"] == 410
    assert error["object"]["reason"] == "Expired"


def test_watch_as_table_and_watches_do_not_block_the_server(api: Api) -> None:
    import json
    import urllib.request

    req = urllib.request.Request(f"{api.url}{PODS}?watch=1&timeoutSeconds=2", headers={
        "Authorization": f"Bearer {TOKEN}", "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    _later(0.3, lambda: api.request("POST", PODS, pod("t")))
    # many idle watches open at once: plain requests still answer quickly
    idle = [urllib.request.urlopen(urllib.request.Request(f"{api.url}{PODS}?watch=1&timeoutSeconds=5",
                                                          headers={"Authorization": f"Bearer {TOKEN}"}),
                                   context=api.context, timeout=10) for _ in range(20)]
    try:
        started = time.monotonic()
        assert api.request("GET", "/version")[0] == 200
        assert time.monotonic() - started < 1.0
        with urllib.request.urlopen(req, context=api.context, timeout=10) as resp:
            events = [json.loads(line) for line in resp if line.strip()]
    finally:
        for resp in idle:
            resp.close()
    assert len(events) == 1
    table = events[0]["object"]
    assert table["kind"] == "Table" and table["rows"][0]["cells"][0] == "t"
    assert table["columnDefinitions"][0]["name"] == "Name"
