"""Resource lists for admission rules: parse to exact thousandths, compare per dimension, print."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pumice.api.quantity import format_quantity, milli_value

__all__ = ["Amounts", "amounts", "exceeding", "show", "total"]

Amounts = dict[str, int]


def amounts(resources: Mapping[str, Any] | None) -> Amounts:
    """``{"cpu": "2"} -> {"cpu": 2000}`` (thousandths); invalid quantities raise ``QuantityError``."""
    return {str(name): milli_value(value) for name, value in (resources or {}).items()}


def total(lists: Iterable[Amounts]) -> Amounts:
    out: Amounts = {}
    for one in lists:
        for name, value in one.items():
            out[name] = out.get(name, 0) + value
    return out


def exceeding(small: Amounts, big: Amounts, *, missing_is_zero: bool) -> list[str]:
    """Dimensions where ``small`` > ``big``; a dimension absent from ``big`` is 0 or unlimited."""
    out = []
    for name in sorted(small):
        if name not in big and not missing_is_zero:
            continue
        if small[name] > big.get(name, 0):
            out.append(name)
    return out


def show(values: Amounts, names: Iterable[str] | None = None) -> str:
    """``cpu=2,memory=4Gi`` for the chosen dimensions (all by default)."""
    keys = sorted(values) if names is None else list(names)
    return ",".join(f"{k}={format_quantity(values.get(k, 0), milli=True)}" for k in keys)

