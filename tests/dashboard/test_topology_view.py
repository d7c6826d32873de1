"""The dashboard's topology view is the scheduler's: same HyperNode membership, node counts and lowest HyperNode
per node, on random HyperNode trees whose members use every kind of selector (and malformed ones)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.dashboard import pages
from pumice.scheduler import build_cluster_state
from pumice.scheduler.topology.tree import HyperNodeTree
from pumice.store import MemoryStore

NODE_NAMES = [f"n{i}" for i in range(8)]

labels_st = st.fixed_dictionaries({}, optional={
    "rack": st.sampled_from(["r0", "r1"]),
    "gpu": st.sampled_from(["1", "2", "x"]),
})
exact_st = st.fixed_dictionaries({"exactMatch": st.fixed_dictionaries(
    {}, optional={"name": st.sampled_from([*NODE_NAMES, "gone", ""])})})
regex_st = st.fixed_dictionaries({"regexMatch": st.fixed_dictionaries(
    {"pattern": st.sampled_from(["^n[0-3]$", "n1", "[", "", "n(", "^x"])})})
expression_st = st.fixed_dictionaries({
    "key": st.sampled_from(["rack", "gpu", "bad key!"]),
    "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Bogus"]),
}, optional={"values": st.lists(st.sampled_from(["r0", "r1", "1", "x"]), max_size=2)})
label_st = st.fixed_dictionaries({"labelMatch": st.fixed_dictionaries({}, optional={
    "matchLabels": st.dictionaries(st.sampled_from(["rack", "gpu"]), st.sampled_from(["r0", "r1", "1"]), max_size=2),
    "matchExpressions": st.lists(expression_st, max_size=2),
})})
#: one selector kind (as Volcano's validation wants), or two (which Volcano's scheduler unions)
selector_st = st.one_of(exact_st, regex_st, label_st,
                        st.tuples(exact_st, st.one_of(regex_st, label_st)).map(lambda p: {**p[0], **p[1]}))
node_member_st = st.builds(lambda t, s: {**t, "selector": s},
                           st.sampled_from([{"type": "Node"}, {}, {"type": "Rack"}]), selector_st)


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": draw(labels_st)},
              "status": {"allocatable": {"cpu": "4", "pods": "110"}}}
             for name in NODE_NAMES[:draw(st.integers(1, len(NODE_NAMES)))]]
    count = draw(st.integers(1, 6))
    # a random forest: every HyperNode but the first may hang under an earlier one (one parent each)
    parents = [None, *(draw(st.one_of(st.none(), st.integers(0, i - 1))) for i in range(1, count))]
    hypernodes = []
    for i in range(count):
        members = draw(st.lists(node_member_st, max_size=3))
        members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": f"h{c}"}}}
                    for c in range(count) if parents[c] == i]
        if draw(st.booleans()):
            members.append({"type": "HyperNode", "selector": {"exactMatch": {"name": "no-such-hypernode"}}})
        hypernodes.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                           "metadata": {"name": f"h{i}"},
                           "spec": {"tier": draw(st.integers(1, 3)), "members": draw(st.permutations(members))}})
    return nodes + hypernodes


def _dashboard_leaves(item: dict[str, Any], out: dict[str, set[str]]) -> set[str]:
    leaves = {n["name"] for n in item["nodes"] if not n.get("missing")}
    for child in item["children"]:
        leaves |= _dashboard_leaves(child, out)
    out[item["name"]] = leaves
    assert item["nodeCount"] == len(leaves)
    return leaves


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_dashboard_sees_the_hypernode_tree_the_scheduler_sees(objects: list[dict[str, Any]]) -> None:
    state = build_cluster_state(objects)
    tree = HyperNodeTree.build(state.hypernodes, state.nodes)
    assert tree.ready, tree.error
    names = state.nodes.names

    store = MemoryStore()
    for obj in objects:
        store.create("nodes" if obj["kind"] == "Node" else "hypernodes.topology.volcano.sh", obj)
    view = pages.topology(store)
    assert view["error"] == ""
    leaves: dict[str, set[str]] = {}
    for root in view["items"]:
        _dashboard_leaves(root, leaves)

    scheduler = {info.name: {names[j] for j in info.nodes} for info in tree.rows[:-1]}  # the last: the cluster top
    assert leaves == scheduler
    lowest = {n["name"]: n["hyperNode"] for n in pages.nodes(store)["items"]}
    assert lowest == {name: tree.lowest_hypernode_of_node(j) or None for j, name in enumerate(names)}
    covered = set().union(*scheduler.values())
    assert {n["name"] for n in view["unassigned"]} == set(names) - covered


def test_a_malformed_label_member_selects_nothing_and_every_matcher_of_a_member_counts() -> None:
    store = MemoryStore()
    for name, labels in (("a", {"rack": "r0"}), ("b", {"rack": "r1"}), ("c", {})):
        store.create("nodes", {"metadata": {"name": name, "labels": labels}})
    store.create("hypernodes.topology.volcano.sh", {"metadata": {"name": "bad"}, "spec": {"tier": 1, "members": [
        {"type": "Node", "selector": {"labelMatch": {"matchExpressions": [
            {"key": "rack", "operator": "Bogus", "values": ["r0"]}]}}}]}})
    store.create("hypernodes.topology.volcano.sh", {"metadata": {"name": "both"}, "spec": {"tier": 1, "members": [
        {"type": "Node", "selector": {"exactMatch": {"name": "c"}, "labelMatch": {"matchLabels": {"rack": "r1"}}}}]}})
    items = {h["name"]: h for h in pages.topology(store)["items"]}
    assert items["bad"]["nodeCount"] == 0  # an unknown operator is no wildcard
    assert [n["name"] for n in items["both"]["nodes"]] == ["b", "c"]  # not just the first matcher


def test_a_hypernode_with_two_parents_is_flagged_as_the_scheduler_refuses_it() -> None:
    store = MemoryStore()
    store.create("nodes", {"metadata": {"name": "a"}})
    child = {"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf"}}}
    store.create("hypernodes.topology.volcano.sh", {"metadata": {"name": "leaf"}, "spec": {"tier": 1, "members": [
        {"type": "Node", "selector": {"exactMatch": {"name": "a"}}}]}})
    for parent in ("p1", "p2"):
        store.create("hypernodes.topology.volcano.sh",
                     {"metadata": {"name": parent}, "spec": {"tier": 2, "members": [child]}})
    objects = [*store.list("nodes")[0], *store.list("hypernodes.topology.volcano.sh")[0]]
    state = build_cluster_state(objects)
    tree = HyperNodeTree.build(state.hypernodes, state.nodes)
    assert not tree.ready
    assert pages.topology(store)["error"] == tree.error == "HyperNode leaf has two parents: p1 and p2"
