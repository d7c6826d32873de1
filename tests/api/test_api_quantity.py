"""Quantities: exact values checked against the kubernetes client's Decimal parser."""

from __future__ import annotations

import decimal
import re
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity as k8s_parse_quantity

from pumice.api.quantity import (
    QuantityError,
    format_quantity,
    int_value,
    is_valid_quantity,
    milli_value,
    parse_quantity,
)

SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

# The grammar Kubernetes accepts (CRD pattern for quantities, with an integer exponent as Go
# requires), written independently of pumice's parser.
GO_GRAMMAR = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?")


def k8s_exact(text: str) -> decimal.Decimal:
    """The kubernetes client's value, computed without Decimal's 28-digit rounding."""
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        return k8s_parse_quantity(text)


def round_away(value: decimal.Decimal, scale: int = 1) -> int:
    """``value * scale`` rounded up in magnitude, as Go's ``MilliValue``/``Value`` do."""
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        return int((value * scale).to_integral_value(rounding=decimal.ROUND_UP))


@st.composite
def quantities(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text("0123456789", max_size=12))
    frac = draw(st.none() | st.text("0123456789", max_size=9))
    if not whole and not frac:
        whole = draw(st.text("0123456789", min_size=1, max_size=6))
    number = whole if frac is None else f"{whole}.{frac}"
    if draw(st.booleans()):
        exponent = draw(st.integers(-25, 25))
        exp_sign = "+" if exponent >= 0 and draw(st.booleans()) else ""
        suffix = f"{draw(st.sampled_from('eE'))}{exp_sign}{exponent}"
    else:
        suffix = draw(st.sampled_from(SUFFIXES))
    return f"{sign}{number}{suffix}"


@settings(max_examples=500)
@given(quantities())
def test_value_matches_kubernetes_client(text: str) -> None:
    assert GO_GRAMMAR.fullmatch(text)
    expected = k8s_exact(text)
    assert parse_quantity(text) == Fraction(expected)
    assert milli_value(text) == round_away(expected, 1000)
    assert int_value(text) == round_away(expected)


@given(st.integers(0, 10**15), st.sampled_from(SUFFIXES))
def test_fast_path_matches_exact_value(number: int, suffix: str) -> None:
    text = f"{number}{suffix}"
    expected = k8s_exact(text)
    assert milli_value(text) == round_away(expected, 1000)
    assert int_value(text) == round_away(expected)


def _beyond_exponent_bound(text: str) -> bool:
    """A non-zero number with a decimal exponent past +-1000: the one thing Go reads and pumice refuses."""
    match = re.fullmatch(r"[+-]?([0-9.]*)[eE]([+-]?[0-9]+)", text)
    return bool(match) and abs(int(match[2])) > 1000 and any(c in "123456789" for c in match[1])


@given(st.text("0123456789.+-eEKMGTPinumk x_", max_size=8))
@example("0E2000")
@example("-0.0e99999")
@example("1e1001")
def test_accepts_exactly_the_go_grammar(text: str) -> None:
    assert is_valid_quantity(text) == (bool(GO_GRAMMAR.fullmatch(text)) and not _beyond_exponent_bound(text))


@pytest.mark.parametrize(("text", "valid"), [("0e5000", True), ("0.000E-70000", True), ("1e1000", True),
                                             ("1e1001", False), ("-2.5E-1001", False)])
def test_exponent_bound(text: str, valid: bool) -> None:
    """Past +-1000, Go's exponents are refused (a value of thousands of digits) except for zero."""
    assert is_valid_quantity(text) is valid
    if valid and text.startswith("0"):
        assert parse_quantity(text) == 0


@pytest.mark.parametrize(
    "text",
    [
        "", " ", ".", "+", "-", "1x", "1K", "1ki", "1mi", "1ni", "1ui", "1e", "1E+", "1e1.5",
        "1.5.5", "Gi", "m", "1 Gi", " 1", "1Gi ", "0x10", "1_000", "NaN", "Infinity", "inf",
        "1e3Mi", "1Ee3", "1ei", "--1", "+-1", "1Mb", "١",
    ],
)  # fmt: skip
def test_rejects_invalid_strings(text: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert str(info.value).startswith(f'invalid quantity "{text}"')
    with pytest.raises(QuantityError):
        milli_value(text)
    with pytest.raises(QuantityError):
        int_value(text)


@pytest.mark.parametrize("value", [True, None, [], float("nan"), float("inf")])
def test_rejects_non_quantities(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


def test_error_message_names_the_value() -> None:
    with pytest.raises(QuantityError, match=r'^invalid quantity "1x"$'):
        parse_quantity("1x")
    assert isinstance(QuantityError("1x"), ValueError)


def test_exponent_is_bounded() -> None:
    with pytest.raises(QuantityError, match="exponent out of range"):
        parse_quantity("1e999999999")


@pytest.mark.parametrize(
    ("text", "exact", "milli", "whole"),
    [
        ("100m", Fraction(1, 10), 100, 1),
        ("4Gi", 4 * 2**30, 4 * 2**30 * 1000, 4 * 2**30),
        ("1G", 10**9, 10**12, 10**9),
        ("1.5Gi", 1610612736, 1610612736000, 1610612736),
        ("0.1", Fraction(1, 10), 100, 1),
        ("1e3", 1000, 1_000_000, 1000),
        ("0.1m", Fraction(1, 10_000), 1, 1),
        ("1n", Fraction(1, 10**9), 1, 1),
        ("-1.5", Fraction(-3, 2), -1500, -2),  # Go rounds away from zero
        ("-0.1m", Fraction(-1, 10_000), -1, -1),
        ("1.", 1, 1000, 1),
        (".5", Fraction(1, 2), 500, 1),
        ("+2k", 2000, 2_000_000, 2000),
        ("1E", 10**18, 10**21, 10**18),
    ],
)
def test_known_values(text: str, exact: Fraction | int, milli: int, whole: int) -> None:
    assert parse_quantity(text) == exact
    assert milli_value(text) == milli
    assert int_value(text) == whole


def test_numbers_are_accepted() -> None:
    assert parse_quantity(5) == 5
    assert milli_value(5) == 5000
    assert int_value(5) == 5
    assert parse_quantity(0.1) == Fraction(1, 10)  # the written decimal, not the binary float
    assert milli_value(0.5) == 500
    assert int_value(1.5) == 2


@pytest.mark.parametrize(
    ("value", "milli", "text"),
    [
        (1500, True, "1500m"),
        (2000, True, "2"),
        (0, True, "0"),
        (4294967296, False, "4Gi"),
        (3000, False, "3k"),
        (110, False, "110"),
        (0, False, "0"),
        (-2048, False, "-2Ki"),
        (10**9, False, "1G"),
    ],
)
def test_format_known_values(value: int, milli: bool, text: str) -> None:
    assert format_quantity(value, milli=milli) == text


@given(st.integers(-(2**70), 2**70), st.booleans())
def test_format_round_trips(value: int, milli: bool) -> None:
    text = format_quantity(value, milli=milli)
    assert GO_GRAMMAR.fullmatch(text)
    expected = Fraction(value, 1000) if milli else Fraction(value)
    assert parse_quantity(text) == expected
    assert Fraction(k8s_exact(text)) == expected
