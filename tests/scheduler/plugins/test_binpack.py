"""binpack: the node the task fills the most scores the highest."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler.plugins.binpack import BinpackPlugin
from tests.scheduler.plugins.support import busy_and_idle, random_view, session, task

OBJECTS = busy_and_idle()


def test_fuller_nodes_score_higher() -> None:
    ssn = session(OBJECTS, "binpack")
    # per resource (used + request) / allocatable, weighted 1:1: 3/4 on busy, 1/4 on idle, times 100
    assert ssn.placer.node_scores(task(ssn, "g-1")).tolist() == [75.0, 25.0]


def test_weights_from_arguments() -> None:
    weighted = {"name": "binpack", "arguments": {"binpack.weight": 2, "binpack.cpu": 3, "binpack.memory": 1}}
    ssn = session(OBJECTS, weighted)
    assert ssn.placer.node_scores(task(ssn, "g-1")).tolist() == [150.0, 50.0]


def test_bad_arguments_fall_back_as_in_volcano_and_are_said(caplog: pytest.LogCaptureFixture) -> None:
    bad = {"name": "binpack", "arguments": {"binpack.weight": "10", "binpack.cpu": -1}}
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        ssn = session(OBJECTS, bad)
    assert ssn.placer.node_scores(task(ssn, "g-1")).tolist() == [75.0, 25.0]  # weight 1, cpu weight 1
    assert "plugin binpack: argument binpack.weight: expected an integer, got '10'; using the default 1" in caplog.text
    assert "plugin binpack: argument binpack.cpu: -1 is negative; using 1" in caplog.text


def test_weight_zero_scores_nothing() -> None:
    ssn = session(OBJECTS, {"name": "binpack", "arguments": {"binpack.weight": 0}})
    assert ssn.placer.node_scores(task(ssn, "g-1")).tolist() == [0.0, 0.0]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12), st.sampled_from([8_000, 64_000, 2**40]), st.booleans(),
       st.sampled_from([{}, {"binpack.cpu": 3}, {"binpack.memory": 2, "binpack.weight": 5}]), st.data())
def test_the_plain_score_row_by_row_is_the_general_paths_bits(k: int, top: int, fractional: bool,
                                                              arguments: dict[str, int], data: st.DataObject) -> None:
    """Every node holding each weighted resource (the usual cluster): the row-by-row path gives the general
    path's bits, nodes the task overfills (score 0) included."""
    ssn = session(OBJECTS, {"name": "binpack", "arguments": arguments})
    plugin = ssn.plugins["binpack"]
    assert isinstance(plugin, BinpackPlugin)
    t = task(ssn, "g-1")
    view = random_view(data, len(ssn.space.names), k, top, fractional)
    plain = plugin.dynamic_score(t, view)
    dims, weights, req, weight_sum, is_plain = plugin.shapes[t.shape]
    assert is_plain
    plugin.shapes[t.shape] = (dims, weights, req, weight_sum, False)
    general = plugin.dynamic_score(t, view)
    assert plain is not None and general is not None
    assert plain.tobytes() == general.tobytes()
