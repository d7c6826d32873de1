"""Watches of a whole resource read one shared feed: same events, in order, for readers at any pace."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pumice.store import BaseStore, FeedWatcher, MemoryStore, Watcher, WatchEvent
from pumice.store import watch as watch_module
from tests.builders import pod

from .conftest import StoreFactory


def names(events: list[WatchEvent]) -> list[str]:
    return [f'{e.type}:{e.object["metadata"]["name"]}' for e in events]


def test_whole_resource_watches_share_one_feed_and_others_keep_their_queue(store: BaseStore) -> None:
    plain = store.watch("pods")
    other = store.watch("pods", resource_version="0")
    assert type(plain) is FeedWatcher and type(other) is FeedWatcher
    for kwargs in ({"namespace": "default"}, {"label_selector": "app=web"}, {"allow_bookmarks": True},
                   {"copy": True}, {"resource_version": "999"}):
        assert type(store.watch("pods", **kwargs)) is Watcher  # type: ignore[arg-type]
    store.create("pods", pod("a"))
    store.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    first, second = plain.drain(), other.drain()
    assert names(first) == names(second) == ["ADDED:a", "MODIFIED:a"]
    assert all(x is y for x, y in zip(first, second, strict=True))  # one event object for every reader


def test_a_lagging_reader_keeps_its_events_while_the_others_let_the_feed_drop_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch_module, "TRIM_MIN", 4)
    store = MemoryStore()
    fast, slow = store.watch("pods"), store.watch("pods")
    seen: list[str] = []
    for i in range(40):
        store.create("pods", pod(f"p{i}"))
        seen += [e.object["metadata"]["name"] for e in fast.drain()]
        if i == 20:
            assert [e.object["metadata"]["name"] for e in slow.drain()] == [f"p{j}" for j in range(21)]
    assert seen == [f"p{i}" for i in range(40)]
    assert slow.pending == 19
    assert [e.object["metadata"]["name"] for e in slow.drain()] == [f"p{i}" for i in range(21, 40)]
    feed = store._hub._feeds["pods"]
    assert len(feed.segment[1]) < 40  # what every reader is past was dropped


def test_closing_keeps_what_was_unread_and_the_last_reader_takes_the_feed_along(store: BaseStore) -> None:
    first, second = store.watch("pods"), store.watch("pods")
    store.create("pods", pod("a"))
    first.close()
    store.create("pods", pod("b"))
    assert first.closed and first.pending == 1
    assert names(first.drain()) == ["ADDED:a"]
    assert names(second.drain()) == ["ADDED:a", "ADDED:b"]
    second.close()
    assert "pods" not in store._hub._feeds


def test_a_watch_started_inside_a_batch_gets_each_event_once(store: BaseStore) -> None:
    before = store.watch("pods")
    with store.batch():
        store.create("pods", pod("a"))
        inside = store.watch("pods")  # lists a, not yet published: the feed would hand it out a second time
        store.create("pods", pod("b"))
    store.create("pods", pod("c"))
    assert names(before.drain()) == ["ADDED:a", "ADDED:b", "ADDED:c"]
    assert names(inside.drain()) == ["ADDED:a", "ADDED:b", "ADDED:c"]
    assert type(inside) is Watcher


def test_next_and_anext_wake_up_for_a_write_from_another_thread(make_store: StoreFactory) -> None:
    store = make_store()
    watch = store.watch("pods")
    assert watch.next(timeout=0.01) is None
    threading.Timer(0.05, lambda: store.create("pods", pod("late"))).start()
    event = watch.next(timeout=5)
    assert event is not None and event.object["metadata"]["name"] == "late"

    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, lambda: threading.Thread(target=store.create, args=("pods", pod("x"))).start())
        got = await watch.anext(timeout=5)
        assert got is not None
        loop.call_later(0.05, watch.close)
        return [got.object["metadata"]["name"], *[e.object["metadata"]["name"] async for e in watch]]

    assert asyncio.run(scenario()) == ["x"]


def test_readers_on_several_threads_get_every_event_once() -> None:
    store = MemoryStore()
    watch = store.watch("pods")
    got: list[int] = []
    lock = threading.Lock()

    def reader() -> None:
        while True:
            event = watch.next(timeout=2)
            if event is None:
                return
            with lock:
                got.append(int(event.object["metadata"]["resourceVersion"]))

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for thread in readers:
        thread.start()
    for i in range(300):
        store.create("pods", pod(f"p{i}"))
    for thread in readers:
        thread.join(timeout=10)
    assert sorted(got) == list(range(1, 301))
