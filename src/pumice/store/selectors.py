"""The selectors of list and watch requests, compiled once and matched many times.

Label selectors come as strings (``app=web,tier in (a,b),!canary``) or as the ``metav1.LabelSelector``
dict (``matchLabels`` / ``matchExpressions``); both compile to the same ``pumice.api.labels.Selector``, whose
``str()`` is the canonical string form (what a client sends as ``labelSelector=``). Field selectors accept any
dotted path; a missing field reads as the empty string, so ``spec.nodeName=`` selects unbound pods.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pumice.api.labels import EVERYTHING, Selector, SelectorError, label_selector, parse_selector

from .errors import BadRequest

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "parse_field_selector",
    "parse_label_selector",
]

FieldOperator = Literal["=", "!="]

_FIELD_PATH = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*")


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """``path = value`` or ``path != value`` on a dotted field path."""

    path: str
    operator: FieldOperator
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Compare the field's string form (missing reads as "") with the wanted value."""
        equal = _field_value(obj, self.path) == self.value
        return equal if self.operator == "=" else not equal

    def __str__(self) -> str:
        value = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.path}{self.operator}{value}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """A conjunction of field requirements; the empty selector matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector matches every object."""
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether every requirement holds for ``obj``."""
        for req in self.requirements:  # noqa: SIM110 - hot path, no generator
            if not req.matches(obj):
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(req) for req in self.requirements)


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


_ALL_FIELDS = FieldSelector()  # selectors are immutable: the empty one can be shared


def parse_label_selector(selector: str | Mapping[str, Any] | Selector | None) -> Selector:
    """Compile a label selector as a request gives it: the string form or a ``metav1.LabelSelector`` map (``None``
    and ``""`` select everything); ``BadRequest`` if malformed (see ``pumice.api.labels``)."""
    if selector is None:
        return EVERYTHING
    if isinstance(selector, Selector):
        return selector
    try:
        if isinstance(selector, Mapping):
            return label_selector(selector)
        return parse_selector(selector)
    except SelectorError as err:
        raise BadRequest(str(err)) from None


def _split_escaped(text: str, sep: str) -> list[str]:
    """Split on ``sep`` unless escaped with a backslash; escapes are kept for the next stage."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str, selector: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text) or text[i + 1] not in "\\,=":
                raise BadRequest(f"invalid field selector {selector!r}: bad escape in {text!r}")
            out.append(text[i + 1])
            i += 2
            continue
        if ch in ",=":
            raise BadRequest(f"invalid field selector {selector!r}: unescaped {ch!r} in value {text!r}")
        out.append(ch)
        i += 1
    return "".join(out)


def _parse_field_term(term: str, selector: str) -> FieldRequirement:
    for token, op in (("!=", "!="), ("==", "="), ("=", "=")):
        idx = _find_unescaped(term, token)
        if idx >= 0:
            path = term[:idx].strip()
            if not _FIELD_PATH.fullmatch(path):
                raise BadRequest(f"invalid field selector {selector!r}: bad field path {path!r}")
            value = _unescape(term[idx + len(token) :].strip(), selector)
            return FieldRequirement(path, op, value)  # type: ignore[arg-type]
    raise BadRequest(f"invalid field selector {selector!r}: {term!r} has no operator (=, ==, !=)")


def _find_unescaped(text: str, token: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(token, i):
            return i
        i += 1
    return -1


def parse_field_selector(selector: str | FieldSelector | None) -> FieldSelector:
    """Compile a field selector such as ``spec.nodeName=,status.phase!=Running``; raises ``BadRequest``."""
    if selector is None:
        return _ALL_FIELDS
    if isinstance(selector, FieldSelector):
        return selector
    if not isinstance(selector, str):
        raise BadRequest(f"invalid field selector {selector!r}: expected a string")
    if not selector.strip():
        return FieldSelector()
    return FieldSelector(tuple(_parse_field_term(term, selector) for term in _split_escaped(selector, ",")))
