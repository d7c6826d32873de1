"""Watches: ordering from a resourceVersion, selector transitions, Gone, bookmarks, threads and asyncio."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pumice.store import BadRequest, BaseStore, Gone, WatchEvent
from tests.builders import pod

from .conftest import StoreFactory
from .helpers import shared_objects_checked


def summary(events: list[WatchEvent]) -> list[tuple[str, str, str]]:
    return [(e.type, e.object["metadata"].get("name", ""), e.object["metadata"]["resourceVersion"]) for e in events]


def test_watch_from_list_version_sees_changes_in_order(store: BaseStore) -> None:
    store.create("pods", pod("before"))
    _, rv = store.list("pods")
    watcher = store.watch("pods", resource_version=rv)
    store.create("pods", pod("a"))
    store.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    store.create("nodes", {"metadata": {"name": "n1"}})  # another resource: not seen
    store.bind("default", "a", "n1")
    store.delete("pods", "default", "a")
    events = watcher.drain()
    assert summary(events) == [
        ("ADDED", "a", "2"),
        ("MODIFIED", "a", "3"),
        ("MODIFIED", "a", "5"),
        ("DELETED", "a", "6"),
    ]
    assert events[1].object["metadata"]["labels"] == {"x": "1"}
    assert events[2].object["spec"]["nodeName"] == "n1"
    assert watcher.drain() == []


def test_watch_replays_history_from_older_version(store: BaseStore) -> None:
    for name in "abc":
        store.create("pods", pod(name))
    store.create("nodes", {"metadata": {"name": "n1"}})  # another resource in the same log
    store.delete("pods", "default", "b")
    watcher = store.watch("pods", resource_version="1")
    assert summary(watcher.drain()) == [("ADDED", "b", "2"), ("ADDED", "c", "3"), ("DELETED", "b", "5")]
    nodes = store.watch("nodes", resource_version="1")
    assert summary(nodes.drain()) == [("ADDED", "n1", "4")]
    future = store.watch("pods", resource_version="10")
    for name in "defghijk":
        store.create("pods", pod(name))
    assert [e.object["metadata"]["resourceVersion"] for e in future.drain()] == ["11", "12", "13"]


def test_watch_without_version_starts_with_current_state(store: BaseStore) -> None:
    store.create("pods", pod("b"))
    store.create("pods", pod("a"))
    store.create("pods", pod("gone"))
    store.delete("pods", "default", "gone")
    for version in (None, "0"):
        watcher = store.watch("pods", resource_version=version)
        assert summary(watcher.drain()) == [("ADDED", "a", "2"), ("ADDED", "b", "1")]
        watcher.close()
    watcher = store.watch("pods")
    store.create("pods", pod("c"))
    assert summary(watcher.drain()) == [("ADDED", "a", "2"), ("ADDED", "b", "1"), ("ADDED", "c", "5")]


def test_watch_filters_namespace_and_selectors_with_transitions(store: BaseStore) -> None:
    by_ns = store.watch("pods", namespace="team", resource_version="0")
    unbound = store.watch("pods", resource_version="0", field_selector="spec.nodeName=")
    on_n1 = store.watch("pods", resource_version="0", field_selector="spec.nodeName=n1")
    web = store.watch("pods", resource_version="0", label_selector={"matchLabels": {"app": "web"}})
    store.create("pods", pod("p", namespace="team"))
    store.create("pods", pod("q"))
    store.bind("team", "p", "n1")
    store.patch("pods", "default", "q", {"metadata": {"labels": {"app": "web"}}})
    store.patch("pods", "default", "q", {"metadata": {"labels": {"app": "db"}}})
    store.delete("pods", "team", "p")
    assert summary(by_ns.drain()) == [("ADDED", "p", "1"), ("MODIFIED", "p", "3"), ("DELETED", "p", "6")]
    # binding moves p out of "unbound" (DELETED) and into "on n1" (ADDED)
    assert summary(unbound.drain()) == [
        ("ADDED", "p", "1"),
        ("ADDED", "q", "2"),
        ("DELETED", "p", "3"),
        ("MODIFIED", "q", "4"),
        ("MODIFIED", "q", "5"),
    ]
    assert summary(on_n1.drain()) == [("ADDED", "p", "3"), ("DELETED", "p", "6")]
    events = web.drain()
    assert summary(events) == [("ADDED", "q", "4"), ("DELETED", "q", "5")]
    assert events[1].object["metadata"]["labels"] == {"app": "web"}  # last state the watch matched


def test_watch_gone_after_compaction(make_store: StoreFactory) -> None:
    store = make_store(history=5)
    for i in range(12):
        store.create("pods", pod(f"p{i}"))
    with pytest.raises(Gone) as err:
        store.watch("pods", resource_version="3")
    assert err.value.code == 410
    with pytest.raises(Gone):
        store.watch("pods", resource_version="6")
    watcher = store.watch("pods", resource_version="7")  # events 8..12 are still in the log
    assert [e.object["metadata"]["name"] for e in watcher.drain()] == ["p7", "p8", "p9", "p10", "p11"]
    assert store.watch("pods", resource_version="12").drain() == []


def test_watch_bad_version(store: BaseStore) -> None:
    with pytest.raises(BadRequest):
        store.watch("pods", resource_version="abc")
    with pytest.raises(BadRequest):
        store.watch("pods", label_selector="in (")


def test_bookmarks(store: BaseStore) -> None:
    with_bookmarks = store.watch("pods", resource_version="0", allow_bookmarks=True)
    without = store.watch("pods", resource_version="0")
    store.create("pods", pod("a"))
    store.create("nodes", {"metadata": {"name": "n"}})
    store.bookmark()
    events = with_bookmarks.drain()
    assert [e.type for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1].object == {"metadata": {"resourceVersion": "2"}}
    assert [e.type for e in without.drain()] == ["ADDED"]


def test_copying_watch_hands_out_private_copies(store: BaseStore) -> None:
    first = store.watch("pods", resource_version="0", copy=True)
    second = store.watch("pods", resource_version="0")
    store.create("pods", pod("a", labels={"app": "web"}))
    event = first.next(timeout=1)
    assert event is not None
    event.object["metadata"]["labels"]["app"] = "mutated"
    other = second.next(timeout=1)
    assert other is not None and other.object["metadata"]["labels"] == {"app": "web"}
    assert store.get("pods", "default", "a")["metadata"]["labels"] == {"app": "web"}


def test_watch_objects_are_shared_and_stay_unchanged(store: BaseStore) -> None:
    first = store.watch("pods", resource_version="0")
    second = store.watch("pods", resource_version="0")
    created = store.create("pods", pod("a", labels={"app": "web"}))
    one, two = first.next(timeout=1), second.next(timeout=1)
    assert one is not None and two is not None
    assert one.object is two.object  # one object per event, whatever the number of watches
    store.patch("pods", "default", "a", {"metadata": {"labels": {"app": "db"}}})
    assert one.object == created  # a later write builds a new object: what was handed out holds still
    later = first.next(timeout=1)
    assert later is not None and later.object["metadata"]["labels"] == {"app": "db"}
    assert one.object["metadata"]["labels"] == {"app": "web"}


def test_selector_transition_carries_the_event_version_without_touching_the_old_object(store: BaseStore) -> None:
    watch = store.watch("pods", resource_version="0", label_selector="app=web")
    store.create("pods", pod("a", labels={"app": "web"}))
    added = watch.next(timeout=1)
    assert added is not None and added.object["metadata"]["resourceVersion"] == "1"
    store.patch("pods", "default", "a", {"metadata": {"labels": {"app": "db"}}})
    gone = watch.next(timeout=1)
    assert gone is not None and gone.type == "DELETED"
    assert gone.object["metadata"]["resourceVersion"] == "2"
    assert gone.object["metadata"]["labels"] == {"app": "web"}  # the last state that matched
    assert added.object["metadata"]["resourceVersion"] == "1"  # shared with the old event: untouched


def test_next_blocks_until_event_from_another_thread(store: BaseStore) -> None:
    watcher = store.watch("pods", resource_version="0")
    assert watcher.next(timeout=0.01) is None
    thread = threading.Timer(0.05, lambda: store.create("pods", pod("late")))
    thread.start()
    started = time.monotonic()
    event = watcher.next(timeout=5)
    assert event is not None and event.object["metadata"]["name"] == "late"
    assert time.monotonic() - started < 4
    thread.join()


def test_iteration_ends_on_close(store: BaseStore) -> None:
    watcher = store.watch("pods", resource_version="0")
    store.create("pods", pod("a"))
    seen: list[str] = []

    def consume() -> None:
        seen.extend(e.object["metadata"]["name"] for e in watcher)

    thread = threading.Thread(target=consume)
    thread.start()
    store.create("pods", pod("b"))
    time.sleep(0.05)
    watcher.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert seen == ["a", "b"]
    store.create("pods", pod("c"))  # a closed watch receives nothing and does not break writes
    assert watcher.drain() == []


def test_store_close_closes_watches(make_store: StoreFactory) -> None:
    store = make_store()
    watcher = store.watch("pods")
    store.close()
    assert watcher.closed
    assert watcher.next(timeout=None) is None


def test_concurrent_writers_and_watch_see_every_event_once(store: BaseStore) -> None:
    watcher = store.watch("pods", resource_version="0")

    def writer(prefix: str) -> None:
        for i in range(30):
            store.create("pods", pod(f"{prefix}-{i}"))

    threads = [threading.Thread(target=writer, args=(f"w{t}",)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = watcher.drain()
    versions = [int(e.object["metadata"]["resourceVersion"]) for e in events]
    assert versions == list(range(1, 121))
    assert len({e.object["metadata"]["name"] for e in events}) == 120


def test_async_anext_does_not_block_the_loop(store: BaseStore) -> None:
    async def scenario() -> list[str]:
        watcher = store.watch("pods", resource_version="0")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.005)

        tick_task = asyncio.create_task(ticker())
        assert await watcher.anext(timeout=0.05) is None
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, lambda: threading.Thread(target=store.create, args=("pods", pod("x"))).start())
        event = await watcher.anext(timeout=5)
        assert event is not None
        names = [event.object["metadata"]["name"]]
        store.create("pods", pod("y"))
        loop.call_later(0.05, watcher.close)
        names.extend([e.object["metadata"]["name"] async for e in watcher])
        tick_task.cancel()
        assert ticks >= 5  # the loop kept running while we waited
        return names

    assert asyncio.run(scenario()) == ["x", "y"]


def test_the_sharing_check_catches_a_mutating_reader(store: BaseStore) -> None:
    with pytest.raises(AssertionError, match="mutated"), shared_objects_checked():
        watch = store.watch("pods", resource_version="0")
        store.create("pods", pod("a", labels={"app": "web"}))
        event = watch.next(timeout=1)
        assert event is not None
        event.object["metadata"]["labels"]["app"] = "mutated"
