"""nodegroup: a queue's pods go only to the node groups its affinity admits, preferring the ones it prefers."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import build_cluster_state, load_conf, open_session, run_session
from pumice.scheduler.framework.points import PREDICATE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import TaskInfo
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text, session, task

LABEL = "volcano.sh/nodegroup-name"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def affinity(required: list[str] | None = None, preferred: list[str] | None = None,
             anti_required: list[str] | None = None, anti_preferred: list[str] | None = None) -> dict[str, Any]:
    return {"nodeGroupAffinity": {REQUIRED: required or [], PREFERRED: preferred or []},
            "nodeGroupAntiAffinity": {REQUIRED: anti_required or [], PREFERRED: anti_preferred or []}}


def grouped(name: str, group: str | None, cpu: str = "4") -> dict[str, Any]:
    return node(name, cpu=cpu, memory="8Gi", labels={LABEL: group} if group else None)


def passes(ssn: Session, t: TaskInfo) -> list[bool]:
    """The nodegroup predicate on every node, as Volcano's PredicateFn answers it."""
    ok = np.ones(len(ssn.nodes), dtype=bool)
    for _, f in ssn.registered(PREDICATE):
        for _, mask in f.static_checks(t):
            ok &= mask
        for _, mask in f.dynamic_checks(t, NodeView.of(ssn.nodes)):
            ok &= mask
    return ok.tolist()


NODES = [grouped("a", "g1"), grouped("b", "g2"), grouped("c", "g3"), grouped("plain", None)]


def one_pod(q: dict[str, Any], *extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [*NODES, q, *extra, podgroup("j", queue=q["metadata"]["name"]), pod("p", group="j", cpu="1")]


def test_required_groups_only_and_unlabelled_nodes_refused() -> None:
    ssn = session(one_pod(queue("q", affinity=affinity(required=["g1", "g2"]))), "nodegroup")
    assert passes(ssn, task(ssn, "p")) == [True, True, False, False]


def test_anti_affinity_required_overrides_and_anti_preferred_admits_with_score_minus_one() -> None:
    aff = affinity(required=["g1", "g2"], anti_required=["g2"], anti_preferred=["g3"])
    ssn = session(one_pod(queue("q", affinity=aff)), "nodegroup")
    t = task(ssn, "p")
    assert passes(ssn, t) == [True, False, True, False]
    assert ssn.placer.node_scores(t).tolist() == [100.0, 100.0, -1.0, 0.0]


def test_preferred_group_wins_the_placement() -> None:
    aff = affinity(required=["g1", "g2"], preferred=["g2"])
    ssn = session(one_pod(queue("q", affinity=aff)), "nodegroup")
    assert ssn.placer.node_scores(task(ssn, "p")).tolist() == [100.0, 150.0, 0.0, 0.0]
    outcome = run_session(one_pod(queue("q", affinity=aff)), load_conf(conf_text("gang", "nodegroup")))
    assert outcome.binds == {"default/p": "b"}


def test_preferred_order_scores_earlier_groups_higher() -> None:
    aff = affinity(preferred=["g3", "g1"])
    ssn = session(one_pod(queue("q", affinity=aff)), {"name": "nodegroup", "arguments": {"enablePreferredOrder": True}})
    assert ssn.placer.node_scores(task(ssn, "p")).tolist() == [25.0, 0.0, 50.0, 0.0]


def test_a_queue_without_affinity_gets_nothing_in_strict_mode_and_unlabelled_nodes_otherwise() -> None:
    strict = session(one_pod(queue("q")), "nodegroup")
    assert passes(strict, task(strict, "p")) == [False, False, False, False]
    lax = session(one_pod(queue("q")), {"name": "nodegroup", "arguments": {"strict": False}})
    assert passes(lax, task(lax, "p")) == [False, False, False, True]


def test_hierarchy_inherits_the_nearest_ancestors_affinity_only_when_enabled() -> None:
    objects = one_pod(queue("q", parent="mid"), queue("mid", parent="top"),
                      queue("top", affinity=affinity(required=["g3"])), queue("root"))
    flat = session(objects, "nodegroup")
    assert passes(flat, task(flat, "p")) == [False, False, False, False]
    tree = session(objects, {"name": "nodegroup", "enableHierarchy": True})
    assert passes(tree, task(tree, "p")) == [False, False, True, False]
    # a queue's own affinity wins over its ancestors'
    own = one_pod(queue("q", parent="top", affinity=affinity(required=["g1"])),
                  queue("top", affinity=affinity(required=["g3"])), queue("root"))
    mine = session(own, {"name": "nodegroup", "enableHierarchy": True})
    assert passes(mine, task(mine, "p")) == [True, False, False, False]


def test_group_resource_limits_send_the_rest_elsewhere() -> None:
    limits = json.dumps({"g1": {"cpu": "2"}})
    q = queue("q", affinity=affinity(required=["g1", "g2"], preferred=["g1"]))
    q["metadata"]["annotations"] = {"volcano.sh/nodegroup-resource-limits": limits}
    objects = [grouped("a", "g1", cpu="8"), grouped("b", "g2", cpu="8"), q, podgroup("j", queue="q", min_member=3),
               *(pod(f"p{i}", group="j", cpu="1") for i in range(3))]
    outcome = run_session(objects, load_conf(conf_text("gang", "nodegroup")))
    assert sorted(outcome.binds.values()) == ["a", "a", "b"]


def test_an_unreadable_limits_annotation_refuses_every_node() -> None:
    q = queue("q", affinity=affinity(required=["g1"]))
    q["metadata"]["annotations"] = {"volcano.sh/nodegroup-resource-limits": "{not json"}
    ssn = session(one_pod(q), "nodegroup")
    assert passes(ssn, task(ssn, "p")) == [False, False, False, False]


def test_a_changed_queue_affinity_is_seen_by_the_next_session_on_the_same_state() -> None:
    objects = one_pod(queue("q", affinity=affinity(required=["g1"])))
    state = build_cluster_state(objects)
    conf = load_conf(conf_text("gang", "nodegroup"))
    first = open_session(state, conf)
    assert first.placer.best_node(task(first, "p")).node == 0  # type: ignore[union-attr]
    state.queues["q"].queue["spec"]["affinity"] = affinity(required=["g2"])
    second = open_session(state, conf)
    assert second.placer.best_node(task(second, "p")).node == 1  # type: ignore[union-attr]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, set[str]], dict[str, dict[str, Any]]]:
    groups = ["g0", "g1", "g2", "g3"]
    n_nodes = draw(st.integers(1, 8))
    nodes = [grouped(f"n{i}", draw(st.sampled_from([*groups, None])), cpu=str(draw(st.integers(1, 4))))
             for i in range(n_nodes)]
    objects: list[dict[str, Any]] = list(nodes)
    affinities: dict[str, dict[str, Any]] = {}
    pick = st.lists(st.sampled_from(groups), max_size=3, unique=True)
    for qi in range(draw(st.integers(1, 3))):
        aff = affinity(draw(pick), draw(pick), draw(pick), draw(pick))
        affinities[f"q{qi}"] = aff
        objects.append(queue(f"q{qi}", affinity=aff))
        for ji in range(draw(st.integers(1, 3))):
            name = f"q{qi}-j{ji}"
            size = draw(st.integers(1, 4))
            objects.append(podgroup(name, queue=f"q{qi}", min_member=draw(st.integers(1, size))))
            objects.extend(pod(f"{name}-{k}", group=name, cpu="1") for k in range(size))
    node_group = {nd["metadata"]["name"]: (nd["metadata"].get("labels") or {}).get(LABEL) for nd in nodes}
    members = {g: {n for n, grp in node_group.items() if grp == g} for g in groups}
    return objects, members, affinities


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_required_affinity_is_never_violated(
        cluster: tuple[list[dict[str, Any]], dict[str, set[str]], dict[str, Any]]) -> None:
    objects, members, affinities = cluster
    conf = conf_text("gang", "nodegroup", "predicates", actions="enqueue, allocate, backfill")
    outcome = run_session(objects, load_conf(conf))
    for key, node_name in outcome.binds.items():
        q = key.split("/")[1].split("-")[0]
        pos, neg = affinities[q]["nodeGroupAffinity"], affinities[q]["nodeGroupAntiAffinity"]
        group = next((g for g, names in members.items() if node_name in names), None)
        assert group is not None, f"{key} on unlabelled node {node_name}"
        allowed = (group in pos[REQUIRED] or group in pos[PREFERRED]) and group not in neg[REQUIRED]
        assert allowed or group in neg[PREFERRED], f"{key} on {node_name} of {group}: {affinities[q]}"
