"""``Mirror``: deltas from a watch, and a controller's own writes not coming back as changes."""

from __future__ import annotations

from pumice.controllers import Mirror
from pumice.store import MemoryStore


def _cm(name: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"},
            "data": {"v": value}}


def test_deltas_carry_old_and_new() -> None:
    store = MemoryStore()
    store.create("configmaps", _cm("a", "1"))
    mirror = Mirror(store, "configmaps")
    (initial,) = mirror.drain()  # the initial list comes first, as additions
    assert initial.old is None and initial.key == ("ns", "a") and mirror.drain() == []
    store.patch("configmaps", "ns", "a", {"data": {"v": "2"}})
    store.create("configmaps", _cm("b", "1"))
    store.delete("configmaps", "ns", "a")
    deltas = mirror.drain()
    assert [(d.key, (d.old or {}).get("data"), (d.new or {}).get("data")) for d in deltas] == [
        (("ns", "a"), {"v": "1"}, {"v": "2"}),
        (("ns", "b"), None, {"v": "1"}),
        (("ns", "a"), {"v": "2"}, None),
    ]


def test_own_writes_are_not_reported_back() -> None:
    store = MemoryStore()
    mirror = Mirror(store, "configmaps")
    mirror.put(store.create("configmaps", _cm("a", "1")))
    mirror.put(store.patch("configmaps", "ns", "a", {"data": {"v": "2"}}))
    assert mirror.drain() == []
    mirror.forget(store.delete("configmaps", "ns", "a"))
    mirror.put(store.create("configmaps", _cm("a", "3")))  # same name again
    assert mirror.drain() == []
    assert mirror.get("ns", "a")["data"] == {"v": "3"}  # type: ignore[index]
    store.patch("configmaps", "ns", "a", {"data": {"v": "4"}})  # someone else's write is seen
    (delta,) = mirror.drain()
    assert delta.old["data"] == {"v": "3"} and delta.new["data"] == {"v": "4"}  # type: ignore[index]


def test_an_event_older_than_an_own_write_is_dropped_but_a_newer_one_is_handed_out() -> None:
    store = MemoryStore()
    mirror = Mirror(store, "configmaps")
    store.create("configmaps", _cm("a", "1"))
    store.patch("configmaps", "ns", "a", {"data": {"v": "2"}})  # someone else's, still queued
    mirror.put(store.patch("configmaps", "ns", "a", {"data": {"v": "3"}}, copy=False))  # ours, on top of them
    assert mirror.drain() == []  # both queued events are older than what it wrote, and holds
    assert mirror.get("ns", "a")["data"] == {"v": "3"}  # type: ignore[index]
    store.patch("configmaps", "ns", "a", {"data": {"v": "4"}})
    (delta,) = mirror.drain()
    assert delta.old["data"] == {"v": "3"} and delta.new["data"] == {"v": "4"}  # type: ignore[index]
