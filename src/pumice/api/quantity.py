"""Kubernetes resource quantities as exact numbers.

Grammar (``k8s.io/apimachinery/pkg/api/resource``)::

    <quantity> ::= <sign>? <digits> [ "." <digits>? ] <suffix> | <sign>? "." <digits> <suffix>
    <suffix>   ::= "" | n | u | m | k | M | G | T | P | E | Ki | Mi | Gi | Ti | Pi | Ei
                 | ( e | E ) <sign>? <digits>

Values are exact :class:`fractions.Fraction` objects; the integer views round like
Go's ``Quantity.MilliValue()`` / ``Quantity.Value()``: up, away from zero (so a negative
``-1.5`` has ``int_value == -2``). The common forms (``"4"``, ``"100m"``, ``"4Gi"``, ``"1G"``)
take an integer-only fast path, and string results are memoised because a cluster
repeats the same few quantity strings many times.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "QuantityError",
    "format_quantity",
    "int_value",
    "is_valid_quantity",
    "is_valid_quantity_text",
    "milli_value",
    "parse_quantity",
]

# Multipliers for the suffixes, as exact integers or fractions.
_BINARY: dict[str, int] = {
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "Pi": 1 << 50,
    "Ei": 1 << 60,
}
_DECIMAL_EXP: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
# Suffixes that are whole multiples of 1/1000 (used by the integer fast path).
_MILLI_MULT: dict[str, int] = {s: 10 ** (e + 3) for s, e in _DECIMAL_EXP.items() if e >= -3}
_MILLI_MULT.update({s: m * 1000 for s, m in _BINARY.items()})

# Go accepts any int64 exponent; we bound it so that "1e999999999" cannot exhaust memory (zero stays zero).
_MAX_EXPONENT = 1000

_QUANTITY_RE = re.compile(
    r"""
    (?P<sign>[+-]?)
    (?P<int>[0-9]*)
    (?:\.(?P<frac>[0-9]*))?
    (?:
        [eE](?P<exp>[+-]?[0-9]+)
      | (?P<suffix>[KMGTPE]i|[numkMGTPE])
    )?
    """,
    re.VERBOSE | re.ASCII,
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""

    def __init__(self, value: object, reason: str | None = None) -> None:
        shown = f'"{value}"' if isinstance(value, str) else repr(value)
        message = f"invalid quantity {shown}"
        if reason:
            message += f": {reason}"
        super().__init__(message)
        self.value = value


def _to_text(value: str | int | float) -> str:
    """Return the textual form of a quantity given as str, int or float."""
    if isinstance(value, bool):  # bool is an int subclass but never a quantity
        raise QuantityError(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # repr() gives the shortest string that round-trips (0.1 -> "0.1"), which is
        # what the user wrote in YAML; inf/nan fail the grammar below.
        return repr(value)
    raise QuantityError(value, f"expected a string or a number, got {type(value).__name__}")


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise QuantityError(text)
    int_part, frac_part = match["int"], match["frac"] or ""
    if not int_part and not frac_part:
        raise QuantityError(text)
    try:
        mantissa = int(int_part + frac_part or "0")
    except ValueError as err:  # more digits than int() accepts
        raise QuantityError(text, "too many digits") from err
    if match["sign"] == "-":
        mantissa = -mantissa
    value = Fraction(mantissa, 10 ** len(frac_part))
    if match["exp"] is not None:
        exponent = int(match["exp"])
        if abs(exponent) > _MAX_EXPONENT:
            if mantissa == 0 and abs(exponent) < 2**63:  # zero at any exponent Go reads (an int64)
                return Fraction(0)
            raise QuantityError(text, "exponent out of range")
        return value * Fraction(10) ** exponent
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    return value * Fraction(10) ** _DECIMAL_EXP[suffix]


def parse_quantity(value: str | int | float) -> Fraction:
    """Exact value of a quantity: ``parse_quantity("1.5Gi") == 1610612736``.

    Unlike Go, which rounds values finer than 1n up to the next nano on parse, the value
    is kept exact; :func:`milli_value` and :func:`int_value` are unaffected by that.
    Raises :class:`QuantityError` for anything outside the grammar.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    return _parse_text(_to_text(value))


def is_valid_quantity(value: object) -> bool:
    """True when ``value`` parses as a quantity."""
    try:
        parse_quantity(value)  # type: ignore[arg-type]
    except QuantityError:
        return False
    return True


_VALID_TEXTS: dict[str, bool] = {}  # quantity text -> valid? (a workload repeats a few hundred of them)


def is_valid_quantity_text(text: str) -> bool:
    """``is_valid_quantity`` of a string, its answers kept (bounded): for the checks every write goes through."""
    valid = _VALID_TEXTS.get(text)
    if valid is None:
        if len(_VALID_TEXTS) >= 4096:
            _VALID_TEXTS.clear()
        valid = _VALID_TEXTS[text] = is_valid_quantity(text)
    return valid


def _ceil_away(value: Fraction) -> int:
    """Round to an integer, up in magnitude (Go's ``inf.RoundUp`` / ``negativeScaleInt64``)."""
    num, den = value.numerator, value.denominator
    magnitude = -(-abs(num) // den)
    return magnitude if num >= 0 else -magnitude


def _split_simple(text: str) -> tuple[int, str] | None:
    """``"4Gi" -> (4, "Gi")`` for unsigned integer mantissas with a plain suffix, else None."""
    if len(text) >= 3 and text[-1] == "i":
        head, suffix = text[:-2], text[-2:]
    elif text and not text[-1].isdigit():
        head, suffix = text[:-1], text[-1]
    else:
        head, suffix = text, ""
    if head.isascii() and head.isdigit():
        return int(head), suffix
    return None


@lru_cache(maxsize=8192)
def _milli_text(text: str) -> int:
    simple = _split_simple(text)
    if simple is not None:
        number, suffix = simple
        mult = _MILLI_MULT.get(suffix)
        if mult is not None:
            return number * mult
    return _ceil_away(_parse_text(text) * 1000)


@lru_cache(maxsize=8192)
def _int_text(text: str) -> int:
    simple = _split_simple(text)
    if simple is not None:
        number, suffix = simple
        mult = _MILLI_MULT.get(suffix)
        if mult is not None:
            return -(-number * mult // 1000)
    return _ceil_away(_parse_text(text))


def milli_value(value: str | int | float) -> int:
    """Value in thousandths, rounded up (away from zero): Go's ``Quantity.MilliValue()``.

    ``milli_value("100m") == 100``, ``milli_value("2") == 2000``, ``milli_value("0.1m") == 1``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value * 1000
    return _milli_text(_to_text(value))


def int_value(value: str | int | float) -> int:
    """Value as an integer, rounded up (away from zero): Go's ``Quantity.Value()``.

    ``int_value("4Gi") == 4294967296``, ``int_value("100m") == 1``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return _int_text(_to_text(value))


_BINARY_DESC = sorted(_BINARY.items(), key=lambda item: -item[1])
_DECIMAL_DESC = [(s, 10**e) for s, e in sorted(_DECIMAL_EXP.items(), key=lambda item: -item[1]) if e > 0]


def format_quantity(value: int, *, milli: bool = False) -> str:
    """Exact short text for an integer amount (``milli=True``: amount in thousandths).

    The largest exact suffix is chosen, binary before decimal: ``4294967296 -> "4Gi"``,
    ``3000 -> "3k"``, ``110 -> "110"``; milli amounts that are not whole units keep the
    ``m`` suffix (``1500 -> "1500m"``, ``2000 -> "2"``). The result always parses back
    to the same value.
    """
    if milli:
        whole, rest = divmod(value, 1000)
        if rest:
            return f"{value}m"
        value = whole
    if value == 0:
        return "0"
    magnitude = abs(value)
    for suffix, mult in _BINARY_DESC:
        if magnitude % mult == 0:
            return f"{value // mult}{suffix}"
    for suffix, mult in _DECIMAL_DESC:
        if magnitude % mult == 0:
            return f"{value // mult}{suffix}"
    return str(value)
