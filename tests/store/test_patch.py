"""Merge patch (RFC 7386) and JSON patch (RFC 6902): the RFC examples, then through the stores."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.store import BadRequest, BaseStore, Conflict, Invalid, apply_json_patch, apply_merge_patch
from tests.builders import pod

# RFC 7386, appendix A
MERGE_CASES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), MERGE_CASES)
def test_merge_patch_rfc_examples(target: Any, patch: Any, expected: Any) -> None:
    before = repr(target)
    assert apply_merge_patch(target, patch) == expected
    assert repr(target) == before  # inputs untouched


def test_json_patch_operations() -> None:
    doc = {"foo": "bar", "list": [1, 2, 3], "nested": {"a/b": 1, "m~n": 2}}
    result = apply_json_patch(
        doc,
        [
            {"op": "test", "path": "/foo", "value": "bar"},
            {"op": "add", "path": "/baz", "value": "qux"},
            {"op": "add", "path": "/list/1", "value": 9},
            {"op": "add", "path": "/list/-", "value": 4},
            {"op": "remove", "path": "/list/0"},
            {"op": "replace", "path": "/nested/a~1b", "value": 10},
            {"op": "remove", "path": "/nested/m~0n"},
            {"op": "copy", "from": "/nested", "path": "/copied"},
            {"op": "move", "from": "/foo", "path": "/moved"},
            {"op": "add", "path": "/copied/extra", "value": True},
        ],
    )
    assert result == {
        "baz": "qux",
        "list": [9, 2, 3, 4],
        "nested": {"a/b": 10},
        "copied": {"a/b": 10, "extra": True},
        "moved": "bar",
    }
    assert doc["foo"] == "bar" and doc["list"] == [1, 2, 3]  # input untouched


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "add", "path": "/a/b/c", "value": 1}],
        [{"op": "add", "path": "/list/5", "value": 1}],
        [{"op": "add", "path": "/list/01", "value": 1}],
        [{"op": "add", "path": "nope", "value": 1}],
        [{"op": "add", "path": "/x"}],
        [{"op": "test", "path": "/list/0", "value": True}],
        [{"op": "test", "path": "/foo", "value": "baz"}],
        [{"op": "move", "from": "/nested", "path": "/nested/child"}],
        [{"op": "frobnicate", "path": "/foo"}],
        [{"op": "remove", "path": ""}],
        {"op": "add"},
    ],
)
def test_json_patch_errors(ops: Any) -> None:
    with pytest.raises(BadRequest):
        apply_json_patch({"foo": "bar", "list": [1], "nested": {}}, ops)


def test_json_patch_test_is_type_strict() -> None:
    assert apply_json_patch({"n": 1}, [{"op": "test", "path": "/n", "value": 1.0}]) == {"n": 1}
    with pytest.raises(BadRequest):
        apply_json_patch({"n": 1}, [{"op": "test", "path": "/n", "value": "1"}])


def test_store_merge_patch(store: BaseStore) -> None:
    store.create("pods", pod("a", labels={"app": "web", "drop": "me"}))
    patched = store.patch("pods", "default", "a", {"metadata": {"labels": {"drop": None, "new": "x"}}})
    assert patched["metadata"]["labels"] == {"app": "web", "new": "x"}
    assert patched["metadata"]["resourceVersion"] == "2"
    assert patched["metadata"]["generation"] == 1
    patched = store.patch("pods", "default", "a", {"spec": {"priority": 7}})
    assert patched["metadata"]["generation"] == 2
    assert store.get("pods", "default", "a") == patched


def test_store_patch_status_and_preconditions(store: BaseStore) -> None:
    store.create("pods", pod("a"))
    patched = store.patch(
        "pods",
        "default",
        "a",
        {"status": {"phase": "Running"}, "spec": {"priority": 1}},
        subresource="status",
    )
    assert patched["status"] == {"phase": "Running"}
    assert "priority" not in patched["spec"]
    # a main-resource patch cannot touch status
    patched = store.patch("pods", "default", "a", {"status": {"phase": "Failed"}})
    assert patched["status"] == {"phase": "Running"}
    assert patched["metadata"]["resourceVersion"] == "2"  # nothing changed: no write
    # resourceVersion inside the patch is a precondition
    with pytest.raises(Conflict):
        store.patch("pods", "default", "a", {"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}})
    store.patch("pods", "default", "a", {"metadata": {"resourceVersion": "2", "labels": {"x": "y"}}})


def test_store_json_patch(store: BaseStore) -> None:
    store.create("pods", pod("a", labels={"app": "web"}))
    patched = store.patch(
        "pods",
        "default",
        "a",
        [
            {"op": "test", "path": "/metadata/labels/app", "value": "web"},
            {"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}},
            {"op": "replace", "path": "/spec/containers/0/image", "value": "alpine"},
        ],
        patch_type="application/json-patch+json",
    )
    assert patched["metadata"]["annotations"] == {"k": "v"}
    assert patched["spec"]["containers"][0]["image"] == "alpine"
    rv = store.resource_version
    with pytest.raises(BadRequest):  # all or nothing
        store.patch(
            "pods",
            "default",
            "a",
            [{"op": "add", "path": "/metadata/labels/b", "value": "c"}, {"op": "remove", "path": "/nope"}],
            patch_type="json",
        )
    assert store.resource_version == rv
    assert "b" not in store.get("pods", "default", "a")["metadata"]["labels"]


def test_store_patch_refusals(store: BaseStore) -> None:
    store.create("pods", pod("a"))
    with pytest.raises(BadRequest):
        store.patch("pods", "default", "a", {"metadata": {"name": "b"}})
    with pytest.raises(BadRequest):
        store.patch("pods", "default", "a", [{"op": "add", "path": "/x", "value": 1}])  # list as merge
    with pytest.raises(BadRequest):
        store.patch("pods", "default", "a", {"spec": {}}, patch_type="strategic")
    with pytest.raises(BadRequest):
        store.patch("pods", "default", "a", [{"op": "remove", "path": "/metadata"}], patch_type="json")
    with pytest.raises(Invalid):  # nodeName is only set by create or bind
        store.patch("pods", "default", "a", {"spec": {"nodeName": "n1"}})
    assert store.resource_version == "1"
