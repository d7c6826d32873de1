"""Plugin arguments read by Volcano's rules (framework/arguments.go): a value of the wrong type
leaves the default, and pumice says so once, naming the plugin and the argument."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import yaml

from pumice.api.arguments import Arguments


def args(**values: Any) -> Arguments:
    return Arguments("plugin p", values)


@pytest.mark.parametrize(("value", "expected"), [
    (3, 3), (-2, -2), (0, 0), ("3", 7), (3.0, 7), (1.5, 7), (True, 7), (None, 7), ([1], 7),
])
def test_get_int_takes_integers_only(value: Any, expected: int) -> None:
    assert args(k=value).get_int("k", 7) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (1.5, 1.5), (2, 2.0), (-0.5, -0.5), ("1.5", 0.8), (True, 0.8), (None, 0.8),
])
def test_get_float_takes_floats_and_integers(value: Any, expected: float) -> None:
    assert args(k=value).get_float("k", 0.8) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (True, True), (False, False), ("false", False), ("False", False), ("FALSE", False), ("f", False), ("0", False),
    ("true", True), ("T", True), ("1", True), ("no", True), ("yes", True), ("tRuE", True), (0, True), (None, True),
])
def test_get_bool_takes_booleans_and_what_go_parses_as_one(value: Any, expected: bool) -> None:
    assert args(k=value).get_bool("k", True) is expected


@pytest.mark.parametrize(("value", "expected"), [("gpu", "gpu"), ("", ""), (1, "dflt"), (None, "dflt")])
def test_get_string_takes_strings_only(value: Any, expected: str) -> None:
    assert args(k=value).get_string("k", "dflt") == expected


def test_a_missing_key_is_the_default_without_a_word(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        a = args()
        assert (a.get_int("k", 1), a.get_float("k", 1.0), a.get_bool("k", False), a.get_string("k", "x")) == (
            1, 1.0, False, "x")
    assert caplog.records == []


def test_an_ignored_value_is_said_once_with_plugin_and_argument(caplog: pytest.LogCaptureFixture) -> None:
    a = Arguments("plugin binpack", {"binpack.weight": "10"})
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        for _ in range(3):  # every session reads the arguments again
            assert a.get_int("binpack.weight", 1) == 1
    assert [r.getMessage() for r in caplog.records] == [
        "plugin binpack: argument binpack.weight: expected an integer, got '10'; using the default 1"]


def test_yaml_values_arrive_with_their_own_types() -> None:
    """As Volcano's YAML decoder gives them: ``10`` an integer, ``"10"`` a string, ``1.5`` a float."""
    raw = yaml.safe_load('a: 10\nb: "10"\nc: 1.5\nd: true\ne: "true"\n')
    a = Arguments("plugin p", raw)
    assert (a.get_int("a", 0), a.get_int("b", 0), a.get_float("c", 0.0), a.get_bool("d", False),
            a.get_bool("e", False)) == (10, 0, 1.5, True, True)
    assert dict(a) == raw
