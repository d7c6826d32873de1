"""nodeorder: kube-scheduler's least/most requested and balanced allocation scores, and the
preferences normalized over the candidates (taints, preferred node affinity), with Volcano's weights."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler.plugins.nodeorder import (
    _EXACT_QUOTIENT,
    NodeOrderPlugin,
    _resource_scores,
    balanced_any,
    balanced_present,
)
from tests.builders import node
from tests.scheduler.plugins.support import busy_and_idle, random_view, session, task

OBJECTS = busy_and_idle()


def test_least_requested_and_balanced_by_default() -> None:
    ssn = session(OBJECTS, "nodeorder")
    # least requested: (4 - 3) * 100 // 4 = 25 on busy, 75 on idle; balanced: 100 on both (equal fractions)
    assert ssn.placer.node_scores(task(ssn, "g-1")).tolist() == [125.0, 175.0]


def test_weights_from_arguments() -> None:
    most = {"name": "nodeorder", "arguments": {"leastrequested.weight": 0, "mostrequested.weight": 2,
                                                "balancedresource.weight": 0}}
    ssn = session(OBJECTS, most)
    assert ssn.placer.node_scores(task(ssn, "g-1")).tolist() == [150.0, 50.0]  # 2 x (75, 25)


def test_prefer_no_schedule_taints_are_normalized_over_the_candidates() -> None:
    objs = [*OBJECTS]
    objs[0] = node("busy", cpu="4", memory="4Gi", taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}])
    ssn = session(objs, "nodeorder")
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrderPlugin)
    scores = plugin.preference_scores(task(ssn, "g-1"), np.arange(2))
    assert scores is not None and scores.tolist() == [0.0, 300.0]  # tainttoleration.weight 3 x (0, 100)


@settings(max_examples=300)
@given(st.integers(1, 2), st.booleans(), st.data())
def test_resource_scores_are_kube_schedulers_integer_arithmetic(n: int, most: bool, data: st.DataObject) -> None:
    """Least/most requested on whole milli-cores and bytes, up to nodes far larger than any: the fast float
    path gives kube-scheduler's int64 answers ``(alloc - req) * 100 / alloc`` and the integer average."""
    top = data.draw(st.sampled_from([10, 64_000, 2**40, 2**45, 2**46]))
    alloc = data.draw(st.lists(st.lists(st.integers(1, top), min_size=n, max_size=n), min_size=2, max_size=2))
    req = data.draw(st.lists(st.lists(st.integers(0, 2 * top), min_size=n, max_size=n), min_size=2, max_size=2))
    got = _resource_scores(np.array(req, dtype=float), np.array(alloc, dtype=float), most)
    if max(max(row) for row in alloc) < _EXACT_QUOTIENT:  # what a session whose node table allows it asks
        exact = _resource_scores(np.array(req, dtype=float), np.array(alloc, dtype=float), most, exact=True)
        assert exact.tolist() == got.tolist()
    want = []
    for j in range(n):
        per = [(min(r[j], a[j]) * 100 // a[j]) if most else (0 if r[j] > a[j] else (a[j] - r[j]) * 100 // a[j])
               for r, a in zip(req, alloc, strict=True)]
        want.append(sum(per) // len(per))
    assert got.tolist() == want



@settings(max_examples=300)
@given(st.integers(2, 4), st.integers(1, 5), st.data())
def test_balanced_where_every_node_has_every_resource_is_the_general_formula(dims: int, n: int,
                                                                              data: st.DataObject) -> None:
    """The session-wide shortcut (no node lacks a requested resource) gives the general formula's bits."""
    top = data.draw(st.sampled_from([8, 64_000, 2**40]))
    alloc = data.draw(st.lists(st.lists(st.integers(1, top), min_size=n, max_size=n), min_size=dims, max_size=dims))
    req = data.draw(st.lists(st.lists(st.integers(0, 2 * top), min_size=n, max_size=n), min_size=dims,
                             max_size=dims))
    a, r = np.array(alloc, dtype=float), np.array(req, dtype=float)
    assert balanced_present(a, r).tobytes() == balanced_any(a, r).tobytes()


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12), st.sampled_from([8_000, 64_000, 2**40]), st.booleans(), st.data())
def test_the_usual_scores_in_place_are_the_general_paths_bits(k: int, top: int, fractional: bool,
                                                               data: st.DataObject) -> None:
    """Least-requested + balanced on cpu and memory (the default weights, every node holding both): the exact
    path a session takes, computed in place, gives the bits of the formulas written out as expressions,
    over-requested nodes included."""
    ssn = session(OBJECTS, "nodeorder")
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrderPlugin) and plugin.exact
    t = task(ssn, "g-1")
    view = random_view(data, len(ssn.space.names), k, top, fractional)
    fast = plugin.dynamic_score(t, view)
    alloc = view.allocatable[:2]
    requested = view.nonzero_used + np.asarray(t.nonzero)[:, None]
    per = np.floor((alloc - requested) * 100 / alloc)
    per[requested > alloc] = 0
    least = np.floor((per[0] + per[1]) * 0.5)
    frac = np.minimum((view.used[:2] + t.resreq[:2, None]) / alloc, 1.0)
    balanced = np.trunc((1 - np.abs(frac[0] - frac[1]) / 2) * 100)
    assert fast is not None
    assert fast.tobytes() == (least + balanced).tobytes()
