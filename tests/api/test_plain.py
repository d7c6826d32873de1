"""The readers' fast path (``pumice.api.plain``, ``load_dicts``) gives exactly what the model round trip gives,
key order included, and leaves every document it does not recognise to the model, with the model's errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.conftest import SHARED

from pumice.api import ManifestError, load_file
from pumice.api.base import ApiModel, Int, Quantity
from pumice.api.io import load_dicts
from pumice.api.plain import is_plain, plain_check
from pumice.api.registry import model_for, parse_object

Obj = dict[str, Any]


def _manifests() -> list[Obj]:
    """Real manifests: every object of Volcano's cases and the quick-start scenarios."""
    out: list[Obj] = []
    for path in sorted(SHARED.glob("cases/*/cluster.yaml")) + sorted(SHARED.glob("scenarios/**/*.yaml")):
        out += [o.to_dict() for o in load_file(path)]
    seen: set[str] = set()
    unique = []
    for obj in out:  # one of each distinct document
        text = json.dumps(obj, sort_keys=False)
        if text not in seen:
            seen.add(text)
            unique.append(obj)
    return unique


MANIFESTS = _manifests() if SHARED.is_dir() else []
#: Values a mutation puts anywhere: every JSON type, quantities as text and as numbers, nulls.
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 0.5, 2.5]),
    st.sampled_from(["", "a", "1", "2Gi", "500m", "two", "Never", "v1", "True"]),
    st.lists(st.sampled_from(["a", 1, None]), max_size=2), st.dictionaries(st.sampled_from(["a", "cpu"]),
                                                                            st.sampled_from(["1", 1, None]),
                                                                            max_size=2),
)
#: Keys a mutation adds: unknown ones, Python names of declared fields, wire names in the wrong place.
KEYS = st.sampled_from(["extra", "api_version", "min_member", "node_name", "nodeName", "generate_name",
                        "minMember", "queue", "name", "status", "spec", "metadata", "labels", "requests"])


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def documents(draw: st.DrawFn) -> Obj:
    """A real manifest's object with zero to three random changes: a value replaced, a key added or removed."""
    doc = copy.deepcopy(draw(st.sampled_from(MANIFESTS)))
    for _ in range(draw(st.integers(0, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if not path:
            continue
        parent: Any = doc
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "add", "remove"]))
        if action == "replace":
            parent[path[-1]] = draw(VALUES)
        elif action == "add" and isinstance(parent, dict):
            parent[draw(KEYS)] = draw(VALUES)
        elif action == "remove":
            del parent[path[-1]]
    return doc


def _slow(doc: Obj, tmp: Path) -> list[Obj] | str:
    path = tmp / "slow.json"
    path.write_text(json.dumps(doc))
    try:
        return [o.to_dict() for o in load_file(path)]
    except ManifestError as err:
        return str(err)


def _fast(doc: Obj, tmp: Path) -> list[Obj] | str:
    path = tmp / "slow.json"  # the same name: errors name the file
    path.write_text(json.dumps(doc))
    try:
        return load_dicts(path)
    except ManifestError as err:
        return str(err)


@pytest.mark.skipif(not MANIFESTS, reason="../shared is not beside the repository")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(documents())
def test_the_fast_path_reads_what_the_model_reads(tmp_path: Path, doc: Obj) -> None:
    slow, fast = _slow(doc, tmp_path), _fast(doc, tmp_path)
    assert json.dumps(fast) == json.dumps(slow)  # the same objects, keys in the same order, or the same error
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if isinstance(api_version, str) and isinstance(kind, str) and is_plain(model_for(api_version, kind), doc):
        assert json.dumps(parse_object(doc).to_dict()) == json.dumps(doc)


def test_most_real_manifests_take_the_fast_path() -> None:
    if not MANIFESTS:
        pytest.skip("../shared is not beside the repository")
    plain = [d for d in MANIFESTS if is_plain(model_for(d["apiVersion"], d["kind"]), d)]
    assert len(plain) >= 0.9 * len(MANIFESTS)
    for doc in plain:
        assert json.dumps(parse_object(doc).to_dict()) == json.dumps(doc)


@pytest.mark.parametrize(("doc", "message"), [
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": "high"}},
     "(Pod p): items[0].spec.priority: input should be a valid integer, got \"high\""),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "two"}}},
     "(Node n): items[0].status.allocatable.cpu"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, "items[0].metadata.name: required field is missing"),
    ({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "f"},
      "spec": {"jobRetainPolicy": ["retain"]}},  # a list where a Literal is: not hashable
     "(JobFlow f): items[0].spec.jobRetainPolicy: input should be 'retain' or 'delete', got a list"),
])
def test_bad_objects_keep_the_models_one_line_error(tmp_path: Path, doc: Obj, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [doc]}))
    with pytest.raises(ManifestError) as fast:
        load_dicts(path)
    with pytest.raises(ManifestError) as slow:
        load_file(path)
    assert str(fast.value) == str(slow.value)
    assert message in str(fast.value) and str(path) in str(fast.value)


def test_yaml_anchors_give_documents_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n"
                    "- {apiVersion: v1, kind: Node, metadata: {name: a, labels: &l {zone: z}}}\n"
                    "- {apiVersion: v1, kind: Node, metadata: {name: b, labels: *l}}\n")
    a, b = load_dicts(path)
    assert a["metadata"]["labels"] == b["metadata"]["labels"] == {"zone": "z"}
    assert a["metadata"]["labels"] is not b["metadata"]["labels"]


class _Tree(ApiModel):
    """A recursive model (none of the API's is, today): its check calls itself."""

    name: str | None = None
    size: Quantity | None = None
    count: Int | None = None
    children: list[_Tree] | None = None
    by_name: dict[str, _Tree] | None = None


_Tree.model_rebuild()


@pytest.mark.parametrize(("doc", "plain"), [
    ({"name": "a", "children": [{"name": "b", "children": [{"size": "1Gi", "count": 2}]}]}, True),
    ({"byName": {"x": {"byName": {"y": {"children": []}}}}, "other": [1]}, True),
    ({"children": [{"children": [{"size": 1}]}]}, False),  # a number for a quantity
    ({"children": [{"children": [{"count": True}]}]}, False),
    ({"byName": {"x": {"name": 3}}}, False),
    ({"children": [{"by_name": {}}]}, False),  # a Python name
    ({"children": [{"name": None}, None]}, False),  # a null item
    ({"children": {"a": {}}}, False),
])
def test_recursive_models_are_checked_all_the_way_down(doc: Obj, plain: bool) -> None:
    assert plain_check(_Tree)(doc) is plain
    try:
        assert (json.dumps(_Tree.model_validate(doc).to_dict()) == json.dumps(doc)) is plain
    except ValidationError:
        assert not plain
