"""The wire helpers every layer shares: label selectors, node selector terms, HyperNode members, group names."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api.group_name import GROUP_NAME, VOLCANO_GROUP_NAME, group_key, group_name
from pumice.api.hypernode_members import child_hypernode, member_type, node_members
from pumice.api.labels import (
    EVERYTHING,
    NOTHING,
    SelectorError,
    label_selector,
    label_selector_or_nothing,
    node_selector_term,
    parse_selector,
)

LABELS = {"rack": "r0", "gpu": "4", "zone": "a"}


# --- metav1.LabelSelector -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({}, True),
        ({"matchLabels": {"rack": "r0"}}, True),
        ({"matchLabels": {"rack": "r1"}}, False),
        ({"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1", "r0"]}]}, True),
        ({"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r0"]}]}, False),
        ({"matchExpressions": [{"key": "missing", "operator": "NotIn", "values": ["x"]}]}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, False),
        ({"matchLabels": {"rack": "r0"}, "matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
         False),
    ],
)
def test_label_selector_matches_as_kubernetes(selector: dict[str, Any], expected: bool) -> None:
    assert label_selector(selector).matches(LABELS) is expected


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "rack", "operator": "Bogus", "values": ["r0"]}]},
        {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["1"]}]},  # a node-selector operator only
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "rack", "operator": "Exists", "values": ["r0"]}]},
        {"matchExpressions": [{"key": "bad key!", "operator": "Exists"}]},
        {"matchLabels": {"rack": 1}},
        {"matchLabels": {"rack": "r0"}, "extra": 1},
    ],
)
def test_a_malformed_label_selector_is_an_error_or_for_readers_selects_nothing(selector: dict[str, Any]) -> None:
    with pytest.raises(SelectorError):
        label_selector(selector)
    read = label_selector_or_nothing(selector)
    assert read.nothing and read.error and not read.matches(LABELS)


def test_a_missing_selector_selects_nothing_and_an_empty_one_everything() -> None:
    assert label_selector(None) is NOTHING and not NOTHING.matches({})
    assert label_selector({}) is EVERYTHING and EVERYTHING.matches({}) and EVERYTHING.empty
    assert label_selector({"matchLabels": {}, "matchExpressions": []}).empty


def test_a_stored_selector_is_compiled_once() -> None:
    selector = {"matchLabels": {"rack": "r0"}}
    assert label_selector_or_nothing(selector) is label_selector_or_nothing(selector)
    assert label_selector_or_nothing(dict(selector)) == label_selector_or_nothing(selector)


def test_the_string_form_round_trips_through_the_canonical_text() -> None:
    selector = parse_selector("rack in (r1,r0),!canary,gpu>2,zone!=b")
    assert str(selector) == "rack in (r0,r1),!canary,gpu>2,zone!=b"
    assert parse_selector(str(selector)) == selector
    assert selector.matches(LABELS)
    with pytest.raises(SelectorError):
        parse_selector("gpu>two")


# --- NodeSelectorTerm -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "name", "expected"),
    [
        ({"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["3"]}]}, "n1", True),
        ({"matchExpressions": [{"key": "gpu", "operator": "Lt", "values": ["3"]}]}, "n1", False),
        ({"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["3"]}]}, "n1", False),  # "a": no number
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}, "n1", True),
        ({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}, "n1", False),
        ({"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r0"]}],
          "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}, "n1", False),
        ({}, "n1", False),  # an empty term selects no node
    ],
)
def test_node_selector_terms_match_as_node_affinity(term: dict[str, Any], name: str, expected: bool) -> None:
    assert node_selector_term(term).matches(LABELS, name) is expected


@pytest.mark.parametrize(
    "term",
    [
        {"matchExpressions": [{"key": "gpu", "operator": "Bogus", "values": ["3"]}]},
        {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["3", "4"]}]},
        {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["three"]}]},
        {"matchFields": [{"key": "metadata.namespace", "operator": "NotIn", "values": ["x"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]},
    ],
)
def test_a_malformed_node_selector_term_selects_no_node(term: dict[str, Any]) -> None:
    compiled = node_selector_term(term)
    assert compiled.error and not compiled.matches(LABELS, "n1")


# --- HyperNode members ----------------------------------------------------------------------------------------

NAMES = ["n0", "n1", "n2", "x0"]
NODE_LABELS: list[dict[str, str] | None] = [{"rack": "r0"}, {"rack": "r1"}, {"rack": "r0"}, None]
INDEX = {n: j for j, n in enumerate(NAMES)}


def _selected(member: dict[str, Any]) -> list[str]:
    return sorted(NAMES[j] for j in node_members(member).select(NAMES, NODE_LABELS, INDEX))


def test_node_members_union_what_each_matcher_selects() -> None:
    assert _selected({"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}) == ["n1"]
    assert _selected({"type": "Node", "selector": {"regexMatch": {"pattern": "^n"}}}) == ["n0", "n1", "n2"]
    assert _selected({"type": "Node", "selector": {"regexMatch": {"pattern": "0"}}}) == ["n0", "x0"]  # unanchored
    assert _selected({"selector": {"labelMatch": {"matchLabels": {"rack": "r0"}}}}) == ["n0", "n2"]  # type: Node
    assert _selected({"type": "Node", "selector": {"exactMatch": {"name": "x0"},
                                                   "labelMatch": {"matchLabels": {"rack": "r1"}}}}) == ["n1", "x0"]
    assert node_members({"type": "Node", "selector": {"exactMatch": {"name": "gone"}}}).name == "gone"


@pytest.mark.parametrize(
    "selector",
    [
        {"exactMatch": {"name": ""}, "regexMatch": {"pattern": "n"}},  # an empty exact name: nothing at all
        {"exactMatch": {"name": "n0"}, "regexMatch": {"pattern": "("}},  # a bad pattern: nothing at all
        {"exactMatch": {"name": "n0"}, "labelMatch": {"matchExpressions": [{"key": "rack", "operator": "Bogus"}]}},
    ],
)
def test_a_malformed_member_selects_no_node_at_all(selector: dict[str, Any]) -> None:
    assert _selected({"type": "Node", "selector": selector}) == []
    assert node_members({"type": "Node", "selector": selector}).nothing


def test_an_empty_label_match_adds_nothing_and_members_of_other_types_select_no_node() -> None:
    assert _selected({"type": "Node", "selector": {"exactMatch": {"name": "n0"}, "labelMatch": {}}}) == ["n0"]
    assert _selected({"type": "Rack", "selector": {"exactMatch": {"name": "n0"}}}) == []
    assert _selected({"type": "HyperNode", "selector": {"exactMatch": {"name": "n0"}}}) == []
    assert member_type({}) == "Node"


def test_a_hypernode_member_names_its_child_by_exact_name_only() -> None:
    assert child_hypernode({"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-0"}}}) == "rack-0"
    assert child_hypernode({"type": "HyperNode", "selector": {"regexMatch": {"pattern": "rack-.*"}}}) == ""
    assert child_hypernode({"type": "Node", "selector": {"exactMatch": {"name": "rack-0"}}}) == ""


# --- group names ----------------------------------------------------------------------------------------------


def test_the_kubernetes_group_name_wins_and_an_empty_one_names_none() -> None:
    both = {"metadata": {"namespace": "ns", "annotations": {GROUP_NAME: "k8s", VOLCANO_GROUP_NAME: "vc"}}}
    assert group_name(both) == "k8s" and group_key(both) == "ns/k8s"
    volcano = {"metadata": {"annotations": {GROUP_NAME: "", VOLCANO_GROUP_NAME: "vc"}}}
    assert group_name(volcano) == "vc" and group_key(volcano) == "default/vc"
    assert group_name({"metadata": {}}) == "" and group_key({}) == ""
