"""The protocol's cost knobs (``copy=False``, ``owned=True``, ``change_marker``) change costs, never results.

Written against ``Store`` only, so that any implementation (the Kubernetes store too) can run them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pumice.store import Store
from tests.builders import pod

from .conftest import StoreFactory

Op = Callable[[Store, bool, bool], Any]

#: every read and write of the protocol, given ``copy`` and ``owned`` (where the protocol takes it)
OPS: list[Op] = [
    lambda s, copy, owned: s.create("pods", pod("a", labels={"app": "x"}), copy=copy),
    lambda s, copy, owned: s.create("pods", pod("b"), copy=copy, owned=owned),
    lambda s, copy, owned: s.get("pods", "default", "a", copy=copy),
    lambda s, copy, owned: s.list("pods", label_selector="app=x", copy=copy),
    lambda s, copy, owned: s.update("pods", {**s.get("pods", "default", "a"), "spec": {
        "containers": [{"name": "main", "image": "busybox:2"}]}}, copy=copy),
    lambda s, copy, owned: s.patch("pods", "default", "a", {"metadata": {"labels": {"v": "2"}}}, copy=copy,
                                   owned=owned),
    lambda s, copy, owned: s.patch("pods", "default", "b", {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}]}}, subresource="status", copy=copy, owned=owned),
    lambda s, copy, owned: s.patch("pods", "default", "b", {"status": {"phase": "Running"}},  # a no-op
                                   subresource="status", copy=copy, owned=owned),
    lambda s, copy, owned: s.patch("pods", "default", "a", [{"op": "add", "path": "/metadata/labels/w",
                                                             "value": "3"}], patch_type="json", copy=copy),
    lambda s, copy, owned: s.bind("default", "a", "node-1", copy=copy),
    lambda s, copy, owned: s.delete("pods", "default", "b", copy=copy),
]


def _run(store: Store, *, copy: bool, owned: bool) -> list[Any]:
    return [op(store, copy, owned) for op in OPS]


def test_read_only_results_and_handed_over_inputs_change_nothing_but_costs(make_store: StoreFactory) -> None:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    plain = make_store(clock=lambda: moment, rng=random.Random(7))
    cheap = make_store(clock=lambda: moment, rng=random.Random(7))
    expected = _run(plain, copy=True, owned=False)
    assert _run(cheap, copy=False, owned=True) == expected
    assert cheap.list("pods") == plain.list("pods")
    assert cheap.resource_version == plain.resource_version


def test_a_default_result_is_the_callers_to_change(make_store: StoreFactory) -> None:
    store = make_store()
    store.create("pods", pod("a", labels={}))
    store.get("pods", "default", "a")["metadata"]["labels"]["x"] = "1"
    store.patch("pods", "default", "a", {"metadata": {"labels": {"y": "2"}}})["spec"]["containers"].clear()
    stored = store.get("pods", "default", "a", copy=False)
    assert stored["metadata"]["labels"] == {"y": "2"}
    assert len(stored["spec"]["containers"]) == 1


def test_the_change_marker_moves_once_a_watch_has_the_event_and_stays_while_nothing_happens(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    watch = store.watch("pods")
    seen = store.change_marker()
    assert store.change_marker() == seen  # reading it is no change
    store.create("pods", pod("a", labels={}))
    moved = store.change_marker()
    assert moved != seen
    assert [e.type for e in watch.drain()] == ["ADDED"]  # the marker moved: the event is there to drain
    store.patch("pods", "default", "a", {"metadata": {"labels": {}}})  # a no-op write: nothing for any watch
    assert store.change_marker() == moved
    store.delete("pods", "default", "a")
    assert store.change_marker() not in (seen, moved)
    assert [e.type for e in watch.drain()] == ["DELETED"]
    watch.close()
