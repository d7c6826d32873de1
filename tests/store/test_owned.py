"""Writes that hand their input over (``owned``), the status-patch fast path and what they must keep equal."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pumice.store import BadRequest, BaseStore, MemoryStore
from pumice.store.jsonutil import is_plain_json, normalize_json
from pumice.store.patch import merge_patch_shared, merge_status_shared
from tests.builders import pod


def test_an_owned_status_patch_keeps_its_lists_and_a_plain_one_copies_them(store: BaseStore) -> None:
    store.create("pods", pod("a"))
    conditions = [{"type": "Ready", "status": "True"}]
    store.patch("pods", "default", "a", {"status": {"conditions": conditions}}, subresource="status")
    assert store.get("pods", "default", "a", copy=False)["status"]["conditions"] is not conditions
    handed = [{"type": "Ready", "status": "False"}]
    store.patch("pods", "default", "a", {"status": {"conditions": handed}}, subresource="status", owned=True)
    assert store.get("pods", "default", "a", copy=False)["status"]["conditions"] is handed


def test_an_owned_create_keeps_plain_json_and_copies_anything_else(store: BaseStore) -> None:
    spec = {"containers": [{"name": "main", "image": "x"}]}
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "default"}, "spec": spec}
    stored = store.create("pods", obj, owned=True, copy=False)
    assert stored is obj and stored["spec"] is spec and obj["metadata"]["uid"]  # its system fields filled in
    odd = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "default"},
           "spec": {"containers": ({"name": "main", "image": "x"},)}}  # a tuple: normalized, as without owned
    stored = store.create("pods", odd, owned=True, copy=False)
    assert stored is not odd and stored["spec"]["containers"] == [{"name": "main", "image": "x"}]


VALUES: list[Any] = [None, "x", 1, True, 1.5, [], [1, "a"], {}, {"a": None}, {"a": {"b": 1}}, {"c": [{"d": 2}]}]


def _random_status(rng: random.Random, depth: int = 0) -> Any:
    if depth > 1 or rng.random() < 0.3:
        return rng.choice(VALUES)
    return {rng.choice("abc"): _random_status(rng, depth + 1) for _ in range(rng.randrange(3))}


@pytest.mark.parametrize("owned", [False, True])
def test_the_status_fast_path_merges_as_a_merge_patch_and_finds_every_no_op(owned: bool) -> None:
    rng = random.Random(7)
    for _ in range(3000):
        target: dict[str, Any] = {"metadata": {"name": "n"}, "spec": {"x": 1}}
        current = _random_status(rng)
        if current is not None or rng.random() < 0.5:
            target["status"] = current
        status = _random_status(rng)
        expected = merge_patch_shared(target, {"status": status})
        got = merge_status_shared(target, status, owned=owned)
        if expected == target:
            assert got is None, (target, status)
        else:
            assert got == expected and list(got) == list(expected), (target, status)
            assert got["metadata"] is not target["metadata"] and got["spec"] is target["spec"]


def test_a_status_patch_that_changes_nothing_writes_nothing(store: BaseStore) -> None:
    store.create("pods", pod("a"))
    store.patch("pods", "default", "a", {"status": {"phase": "Running"}}, subresource="status")
    version = store.resource_version
    store.patch("pods", "default", "a", {"status": {"phase": "Running"}}, subresource="status", owned=True)
    store.patch("pods", "default", "a", {"status": {"nothing": None}}, subresource="status")
    assert store.resource_version == version


def test_plain_json_is_what_normalizing_leaves_unchanged() -> None:
    class Text(str):
        pass

    for value in [{"a": [1, "b", None, True, 2.5, {"c": []}]}, [], "x", 3, None]:
        assert is_plain_json(value) and normalize_json(value) == value
    for value in [{"a": (1,)}, {1: "a"}, {"a": float("nan")}, {"a": Text("x")}, [object()], {"a": {"b": {2}}}]:
        assert not is_plain_json(value)


class _Defaulting:
    """A hook that fills in a default in place and promises plain results; it also changes a system field."""

    resources = frozenset({"configmaps"})
    plain_results = True

    def __call__(self, operation: str, resource: str, new: dict[str, Any] | None, old: Any) -> None:
        assert new is not None
        new.setdefault("data", {})["default"] = "yes"
        new["metadata"]["uid"] = "the hook's"


def test_a_hook_with_plain_results_is_not_copied_and_system_fields_still_win() -> None:
    store = MemoryStore(admission=_Defaulting())
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
    stored = store.create("configmaps", obj, owned=True, copy=False)
    assert stored is obj and stored["data"] == {"default": "yes"}
    assert stored["metadata"]["uid"] != "the hook's"


def test_an_owned_patch_is_still_a_merge_patch(store: BaseStore) -> None:
    store.create("pods", pod("a"))
    with pytest.raises(BadRequest):
        store.patch("pods", "default", "a", {1: "x"}, owned=True)
    store.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}, "spec": {"extra": [1]}}, owned=True)
    got = store.get("pods", "default", "a")
    assert got["metadata"]["labels"] == {"x": "1"} and got["spec"]["extra"] == [1]
