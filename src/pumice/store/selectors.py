"""Kubernetes label and field selectors, compiled once and matched many times.

Label selectors come as strings (``app=web,tier in (a,b),!canary``) or as the ``metav1.LabelSelector``
dict (``matchLabels`` / ``matchExpressions``); both compile to the same ``LabelSelector``, whose ``str()``
is the canonical string form (what a client sends as ``labelSelector=``). Field selectors accept any dotted
path; a missing field reads as the empty string, so ``spec.nodeName=`` selects unbound pods.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .errors import BadRequest

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "parse_field_selector",
    "parse_label_selector",
]

LabelOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
FieldOperator = Literal["=", "!="]

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = rf"(?:[a-z0-9](?:[-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}"
_KEY_RE = re.compile(_KEY)
_VALUE_RE = re.compile(rf"(?:{_NAME})?")
_SET_TERM = re.compile(rf"\s*({_KEY})\s+(in|notin)\s*\((.*)\)\s*", re.DOTALL)
_CMP_TERM = re.compile(rf"\s*({_KEY})\s*(==|=|!=|>|<)\s*(\S*)\s*")
_EXISTS_TERM = re.compile(rf"\s*(!?)\s*({_KEY})\s*")
_FIELD_PATH = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*")


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One clause of a label selector (all clauses must hold)."""

    key: str
    operator: LabelOperator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this clause (absent keys satisfy NotIn and DoesNotExist)."""
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            have = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return have > bound if op == "Gt" else have < bound

    def __str__(self) -> str:
        op, key, values = self.operator, self.key, self.values
        if op == "Exists":
            return key
        if op == "DoesNotExist":
            return f"!{key}"
        if op == "Gt":
            return f"{key}>{values[0]}"
        if op == "Lt":
            return f"{key}<{values[0]}"
        if op == "In" and len(values) == 1:
            return f"{key}={values[0]}"
        if op == "NotIn" and len(values) == 1:
            return f"{key}!={values[0]}"
        return f"{key} {op.lower()} ({','.join(values)})"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A conjunction of label requirements; the empty selector matches everything."""

    requirements: tuple[LabelRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector matches every object."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a label map satisfies every requirement."""
        labels = labels or {}
        for req in self.requirements:  # noqa: SIM110 - hot path (every watched write), no generator
            if not req.matches(labels):
                return False
        return True

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Whether an object's ``metadata.labels`` satisfy the selector."""
        return self.matches((obj.get("metadata") or {}).get("labels"))

    def __str__(self) -> str:
        return ",".join(str(req) for req in self.requirements)


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


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise BadRequest(f"invalid label selector {text!r}: unbalanced ')'")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise BadRequest(f"invalid label selector {text!r}: unbalanced '('")
    parts.append(text[start:])
    return parts


def _check_value(value: str, selector: object) -> str:
    if not isinstance(value, str) or not _VALUE_RE.fullmatch(value):
        raise BadRequest(f"invalid label selector {selector!r}: invalid label value {value!r}")
    return value


def _check_key(key: object, selector: object) -> str:
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        raise BadRequest(f"invalid label selector {selector!r}: invalid label key {key!r}")
    return key


def _parse_term(term: str, selector: str) -> LabelRequirement:
    match = _SET_TERM.fullmatch(term)
    if match:
        key, op, inner = match.groups()
        if not inner.strip():
            raise BadRequest(f"invalid label selector {selector!r}: {op} needs at least one value")
        values = tuple(sorted({_check_value(v.strip(), selector) for v in inner.split(",")}))
        return LabelRequirement(key, "In" if op == "in" else "NotIn", values)
    match = _CMP_TERM.fullmatch(term)
    if match:
        key, op, value = match.groups()
        if op in (">", "<"):
            if not re.fullmatch(r"-?\d+", value):
                raise BadRequest(f"invalid label selector {selector!r}: {op} needs an integer, got {value!r}")
            return LabelRequirement(key, "Gt" if op == ">" else "Lt", (value,))
        _check_value(value, selector)
        return LabelRequirement(key, "NotIn" if op == "!=" else "In", (value,))
    match = _EXISTS_TERM.fullmatch(term)
    if match:
        bang, key = match.groups()
        return LabelRequirement(key, "DoesNotExist" if bang else "Exists")
    raise BadRequest(f"invalid label selector {selector!r}: cannot parse {term.strip()!r}")


def _parse_label_dict(selector: Mapping[str, Any]) -> LabelSelector:
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise BadRequest(
            f"invalid label selector {dict(selector)!r}: unknown keys {sorted(unknown)} "
            "(expected matchLabels and/or matchExpressions)"
        )
    reqs: list[LabelRequirement] = []
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise BadRequest(f"invalid label selector: matchLabels must be a map, got {match_labels!r}")
    for key, value in match_labels.items():
        reqs.append(LabelRequirement(_check_key(key, selector), "In", (_check_value(value, selector),)))
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise BadRequest(f"invalid label selector: matchExpressions must be a list, got {expressions!r}")
    for expr in expressions:
        if not isinstance(expr, Mapping):
            raise BadRequest(f"invalid label selector: bad matchExpression {expr!r}")
        key = _check_key(expr.get("key"), selector)
        op = expr.get("operator")
        values = expr.get("values") or []
        if not isinstance(values, list):
            raise BadRequest(f"invalid label selector: values of {key!r} must be a list")
        if op in ("In", "NotIn"):
            if not values:
                raise BadRequest(f"invalid label selector: operator {op} on {key!r} needs values")
            checked = tuple(sorted({_check_value(v, selector) for v in values}))
            reqs.append(LabelRequirement(key, op, checked))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise BadRequest(f"invalid label selector: operator {op} on {key!r} takes no values")
            reqs.append(LabelRequirement(key, op))
        else:
            raise BadRequest(f"invalid label selector: unknown operator {op!r} on {key!r}")
    return LabelSelector(tuple(reqs))


_ALL_LABELS = LabelSelector()  # selectors are immutable: the empty ones can be shared
_ALL_FIELDS = FieldSelector()


def parse_label_selector(selector: str | Mapping[str, Any] | LabelSelector | None) -> LabelSelector:
    """Compile a label selector (``None`` and ``""`` select everything); ``BadRequest`` if malformed."""
    if selector is None:
        return _ALL_LABELS
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, Mapping):
        return _parse_label_dict(selector)
    if not isinstance(selector, str):
        raise BadRequest(f"invalid label selector {selector!r}: expected a string or a map")
    if not selector.strip():
        return LabelSelector()
    return LabelSelector(tuple(_parse_term(term, selector) for term in _split_top_level(selector)))


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
