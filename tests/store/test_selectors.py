"""Label and field selectors: parsing, matching, canonical strings, and their use in list()."""

from __future__ import annotations

import pytest

from pumice.store import BadRequest, BaseStore, parse_field_selector, parse_label_selector
from tests.builders import pod

LABELS = {"app": "web", "tier": "front", "version": "3"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app = web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("tier in (front,back)", True),
        ("tier in (back)", False),
        ("tier in(front)", True),
        ("tier notin (front)", False),
        ("missing notin (x)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web, tier=back", False),
        ("app in (web, db), tier notin (back), !canary", True),
        ("version>2", True),
        ("version<3", False),
        ("app=", False),
        ("example.com/role=x", False),
    ],
)
def test_label_selector_strings(selector: str, expected: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is expected


def test_empty_label_value_and_prefixed_keys() -> None:
    assert parse_label_selector("app=").matches({"app": ""})
    assert parse_label_selector("example.com/role=x").matches({"example.com/role": "x"})
    assert parse_label_selector(None).matches({})


@pytest.mark.parametrize(
    "selector",
    [
        "app=web,",
        "=x",
        "app in ()",
        "app in (a",
        "app notin a",
        "app=w b",
        "a b",
        "app>x",
        "app=%",
        "!",
        "(a)",
    ],
)
def test_bad_label_selector_strings(selector: str) -> None:
    with pytest.raises(BadRequest):
        parse_label_selector(selector)


def test_label_selector_dict_form() -> None:
    selector = parse_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "back"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "version", "operator": "Exists"},
                {"key": "zone", "operator": "NotIn", "values": ["z1"]},
            ],
        }
    )
    assert selector.matches(LABELS)
    assert not selector.matches({**LABELS, "canary": "1"})
    assert not selector.matches({**LABELS, "tier": "mid"})
    assert str(selector) == "app=web,tier in (back,front),!canary,version,zone!=z1"
    assert parse_label_selector(str(selector)) == selector
    assert parse_label_selector({}).empty


@pytest.mark.parametrize(
    "selector",
    [
        {"app": "web"},
        {"matchLabels": ["app"]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"operator": "Exists"}]},
        42,
    ],
)
def test_bad_label_selector_dicts(selector: object) -> None:
    with pytest.raises(BadRequest):
        parse_label_selector(selector)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("metadata.name=a", True),
        ("metadata.name==a", True),
        ("metadata.name!=a", False),
        ("metadata.namespace=ns1", True),
        ("spec.nodeName=", True),
        ("spec.nodeName!=", False),
        ("status.phase!=Running", True),
        ("status.phase=Pending,metadata.name=a", True),
        ("status.phase=Pending,metadata.name=b", False),
        ("spec.priority=5", True),
        ("spec.hostNetwork=true", True),
        ("spec.missing.deep=", True),
        ("metadata.labels.app=web", True),
        (r"metadata.annotations.note=a\,b\=c", True),
        ("", True),
    ],
)
def test_field_selectors(selector: str, expected: bool) -> None:
    obj = {
        "metadata": {
            "name": "a",
            "namespace": "ns1",
            "labels": {"app": "web"},
            "annotations": {"note": "a,b=c"},
        },
        "spec": {"priority": 5, "hostNetwork": True},
        "status": {"phase": "Pending"},
    }
    assert parse_field_selector(selector).matches(obj) is expected


@pytest.mark.parametrize("selector", ["metadata.name", "=a", "a b=c", "x=a=b", "x=a\\q"])
def test_bad_field_selectors(selector: str) -> None:
    with pytest.raises(BadRequest):
        parse_field_selector(selector)


def test_field_selector_round_trip() -> None:
    selector = parse_field_selector(r"spec.nodeName=,status.phase!=Running,metadata.annotations.x=a\,b")
    assert parse_field_selector(str(selector)) == selector


def test_list_with_selectors(store: BaseStore) -> None:
    store.create("pods", pod("a", labels={"app": "web", "tier": "front"}))
    store.create("pods", pod("b", labels={"app": "web", "tier": "back"}, node="n1"))
    store.create("pods", pod("c", namespace="other", labels={"app": "db"}))

    def names(**kwargs: object) -> list[str]:
        return [p["metadata"]["name"] for p in store.list("pods", **kwargs)[0]]  # type: ignore[arg-type]

    assert names(label_selector="app=web") == ["a", "b"]
    assert names(label_selector={"matchLabels": {"tier": "back"}}) == ["b"]
    assert names(label_selector="app notin (web)") == ["c"]
    assert names(field_selector="spec.nodeName=") == ["a", "c"]
    assert names(field_selector="spec.nodeName=n1") == ["b"]
    assert names(field_selector="metadata.namespace!=default") == ["c"]
    assert names(namespace="default", label_selector="tier", field_selector="metadata.name!=b") == ["a"]
    with pytest.raises(BadRequest):
        store.list("pods", label_selector="app in (")
    with pytest.raises(BadRequest):
        store.list("pods", field_selector="nonsense")
