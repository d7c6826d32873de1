"""binpack: the node the task fills the most scores the highest."""

from __future__ import annotations

import logging

import pytest

from tests.scheduler.plugins.support import busy_and_idle, session, task

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
