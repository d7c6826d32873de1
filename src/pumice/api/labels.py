"""Kubernetes label selectors, compiled once and matched many times: the one implementation the store, the
API server, the scheduler and the dashboard share (as ``k8s.io/apimachinery/pkg/labels``).

Three wire forms, each with Kubernetes' own rules:

- the string form, ``app=web,tier in (a,b),!canary,gpu>1`` (``labels.Parse``): ``parse_selector``;
- ``metav1.LabelSelector``, ``{matchLabels, matchExpressions}`` with In, NotIn, Exists and DoesNotExist
  (``LabelSelectorAsSelector``): ``label_selector``; ``None`` selects nothing, ``{}`` everything;
- ``NodeSelectorTerm``, ``{matchExpressions, matchFields}`` with In, NotIn, Exists, DoesNotExist, Gt and Lt,
  fields only ``metadata.name`` (``nodeaffinity``): ``node_selector_term``; an empty term selects nothing.

A malformed selector (an unknown operator, values where none belong or none where some must be, a bad key
or value) is an error: ``SelectorError``. Readers of objects already stored (the scheduler, the dashboard)
compile with ``label_selector_or_nothing`` / ``node_selector_term`` instead, where a malformed selector selects
nothing and says why (``error``), as kube-scheduler's node affinity and Volcano's HyperNode members do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "NodeSelectorTerm",
    "Operator",
    "Requirement",
    "Selector",
    "SelectorError",
    "label_selector",
    "label_selector_or_nothing",
    "node_selector_term",
    "parse_selector",
]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
Labels = Mapping[str, str]

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = rf"(?:[a-z0-9](?:[-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}"
_KEY_RE = re.compile(_KEY)
_VALUE_RE = re.compile(rf"(?:{_NAME})?")
_INTEGER_RE = re.compile(r"-?\d+")
_SET_TERM = re.compile(rf"\s*({_KEY})\s+(in|notin)\s*\((.*)\)\s*", re.DOTALL)
_CMP_TERM = re.compile(rf"\s*({_KEY})\s*(==|=|!=|>|<)\s*(\S*)\s*")
_EXISTS_TERM = re.compile(rf"\s*(!?)\s*({_KEY})\s*")
#: the operators of a ``metav1.LabelSelectorRequirement``, and of a ``NodeSelectorRequirement`` (which adds Gt, Lt)
_LABEL_OPERATORS: frozenset[str] = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
_NODE_OPERATORS: frozenset[str] = _LABEL_OPERATORS | {"Gt", "Lt"}
_NAME_FIELD = "metadata.name"
#: how many compiled selectors of stored objects are kept (see ``_compiled``)
_MEMO_SIZE = 4096
_T = TypeVar("_T")


class SelectorError(ValueError):
    """A malformed label selector; the message names the selector and what is wrong with it."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a selector (all clauses must hold)."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Labels) -> bool:
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
class Selector:
    """A conjunction of requirements: the empty selector matches everything, ``NOTHING`` matches nothing.

    ``error`` says why a selector read with ``label_selector_or_nothing`` failed to compile (it then selects
    nothing).
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False
    error: str = ""

    @property
    def empty(self) -> bool:
        """True when the selector matches every object."""
        return not self.requirements and not self.nothing

    def matches(self, labels: Labels | None) -> bool:
        """Whether a label map satisfies every requirement."""
        if self.nothing:
            return False
        labels = labels or {}
        for req in self.requirements:  # noqa: SIM110 - hot path (every watched write), no generator
            if not req.matches(labels):
                return False
        return True

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Whether an object's ``metadata.labels`` satisfy the selector."""
        return self.matches((obj.get("metadata") or {}).get("labels"))

    def __str__(self) -> str:
        """The string form (what a client sends as ``labelSelector=``); "" for ``NOTHING`` too, as Kubernetes."""
        return ",".join(str(req) for req in self.requirements)


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


# --- checks -----------------------------------------------------------------------------------------------------


def _check_key(key: object, selector: object) -> str:
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        raise SelectorError(f"invalid label selector {selector!r}: invalid label key {key!r}")
    return key


def _check_value(value: object, selector: object) -> str:
    if not isinstance(value, str) or not _VALUE_RE.fullmatch(value):
        raise SelectorError(f"invalid label selector {selector!r}: invalid label value {value!r}")
    return value


def _requirement(expr: object, operators: frozenset[str], selector: object) -> Requirement:
    """A ``matchExpressions`` entry: ``{key, operator, values}``."""
    if not isinstance(expr, Mapping):
        raise SelectorError(f"invalid label selector: bad matchExpression {expr!r}")
    key = _check_key(expr.get("key"), selector)
    op = expr.get("operator")
    values = expr.get("values") or []
    if not isinstance(values, list):
        raise SelectorError(f"invalid label selector: values of {key!r} must be a list")
    if op not in operators:
        raise SelectorError(f"invalid label selector: unknown operator {op!r} on {key!r}")
    if op in ("In", "NotIn"):
        if not values:
            raise SelectorError(f"invalid label selector: operator {op} on {key!r} needs values")
        return Requirement(key, op, tuple(sorted({_check_value(v, selector) for v in values})))
    if op in ("Exists", "DoesNotExist"):
        if values:
            raise SelectorError(f"invalid label selector: operator {op} on {key!r} takes no values")
        return Requirement(key, op)
    if len(values) != 1 or not isinstance(values[0], str) or not _INTEGER_RE.fullmatch(values[0]):
        raise SelectorError(f"invalid label selector: operator {op} on {key!r} needs one integer value, got {values!r}")
    return Requirement(key, op, (values[0],))


# --- the string form --------------------------------------------------------------------------------------------


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
                raise SelectorError(f"invalid label selector {text!r}: unbalanced ')'")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise SelectorError(f"invalid label selector {text!r}: unbalanced '('")
    parts.append(text[start:])
    return parts


def _parse_term(term: str, selector: str) -> Requirement:
    match = _SET_TERM.fullmatch(term)
    if match:
        key, op, inner = match.groups()
        if not inner.strip():
            raise SelectorError(f"invalid label selector {selector!r}: {op} needs at least one value")
        values = tuple(sorted({_check_value(v.strip(), selector) for v in inner.split(",")}))
        return Requirement(key, "In" if op == "in" else "NotIn", values)
    match = _CMP_TERM.fullmatch(term)
    if match:
        key, op, value = match.groups()
        if op in (">", "<"):
            if not _INTEGER_RE.fullmatch(value):
                raise SelectorError(f"invalid label selector {selector!r}: {op} needs an integer, got {value!r}")
            return Requirement(key, "Gt" if op == ">" else "Lt", (value,))
        _check_value(value, selector)
        return Requirement(key, "NotIn" if op == "!=" else "In", (value,))
    match = _EXISTS_TERM.fullmatch(term)
    if match:
        bang, key = match.groups()
        return Requirement(key, "DoesNotExist" if bang else "Exists")
    raise SelectorError(f"invalid label selector {selector!r}: cannot parse {term.strip()!r}")


def parse_selector(text: str) -> Selector:
    """Compile the string form (``""`` selects everything); ``SelectorError`` if malformed."""
    if not isinstance(text, str):
        raise SelectorError(f"invalid label selector {text!r}: expected a string")
    if not text.strip():
        return EVERYTHING
    return Selector(tuple(_parse_term(term, text) for term in _split_top_level(text)))


# --- metav1.LabelSelector ---------------------------------------------------------------------------------------


def label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """Compile a ``metav1.LabelSelector``: ``None`` selects nothing, ``{}`` everything; ``SelectorError`` if
    malformed (as ``LabelSelectorAsSelector``: Gt and Lt are node-selector operators, not label ones)."""
    if selector is None:
        return NOTHING
    if not isinstance(selector, Mapping):
        raise SelectorError(f"invalid label selector {selector!r}: expected a string or a map")
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise SelectorError(
            f"invalid label selector {dict(selector)!r}: unknown keys {sorted(unknown)} "
            "(expected matchLabels and/or matchExpressions)"
        )
    reqs: list[Requirement] = []
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"invalid label selector: matchLabels must be a map, got {match_labels!r}")
    for key, value in match_labels.items():
        reqs.append(Requirement(_check_key(key, selector), "In", (_check_value(value, selector),)))
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError(f"invalid label selector: matchExpressions must be a list, got {expressions!r}")
    reqs.extend(_requirement(expr, _LABEL_OPERATORS, selector) for expr in expressions)
    return Selector(tuple(reqs)) if reqs else EVERYTHING


def _compiled(memo: dict[int, tuple[object, _T]], wire: object, compile_: Callable[[Any], _T]) -> _T:
    """``compile_(wire)``, kept by the identity of ``wire`` (a bounded memo, as ``re`` keeps compiled patterns).

    For selectors of stored objects, which nobody mutates: a reader (the scheduler matching one pod's affinity
    against every placed pod, the dashboard) compiles each once, and compiling costs some twenty matches.
    """
    hit = memo.get(id(wire))
    if hit is not None and hit[0] is wire:  # the entry keeps ``wire`` alive: its id cannot be reused meanwhile
        return hit[1]
    value = compile_(wire)
    if len(memo) >= _MEMO_SIZE:
        memo.clear()
    memo[id(wire)] = (wire, value)
    return value


def _label_selector_or_nothing(selector: Mapping[str, Any]) -> Selector:
    try:
        return label_selector(selector)
    except SelectorError as err:
        return Selector(nothing=True, error=str(err))


_SELECTORS: dict[int, tuple[object, Selector]] = {}


def label_selector_or_nothing(selector: Mapping[str, Any] | None) -> Selector:
    """``label_selector``, for a selector read from a stored object (never mutated): a malformed one selects nothing
    (``NOTHING`` with its ``error``) instead of raising. Compiled once per selector object."""
    if selector is None:
        return NOTHING
    return _compiled(_SELECTORS, selector, _label_selector_or_nothing)


# --- NodeSelectorTerm -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A compiled ``NodeSelectorTerm``: its label expressions and its ``metadata.name`` fields must all hold."""

    labels: Selector
    names: Selector  # over ``{"metadata.name": <the node's name>}``

    @property
    def error(self) -> str:
        """Why the term failed to compile ("" if it did not); it then selects no node."""
        return self.labels.error

    def matches(self, labels: Labels | None, name: str) -> bool:
        """Whether a node with these labels and this name satisfies the term."""
        if not self.labels.matches(labels):
            return False
        return self.names.empty or self.names.matches({_NAME_FIELD: name})


def _field_requirement(expr: object, term: object) -> Requirement:
    """A ``matchFields`` entry: only ``metadata.name``, In or NotIn one name (as Kubernetes' node affinity)."""
    if not isinstance(expr, Mapping):
        raise SelectorError(f"invalid node selector term {term!r}: bad matchField {expr!r}")
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if key != _NAME_FIELD:
        raise SelectorError(f"invalid node selector term {term!r}: field {key!r} is not supported (only metadata.name)")
    if op not in ("In", "NotIn") or not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], str):
        raise SelectorError(f"invalid node selector term {term!r}: {key} needs In or NotIn with one value")
    return Requirement(_NAME_FIELD, op, (values[0],))


_TERMS: dict[int, tuple[object, NodeSelectorTerm]] = {}


def node_selector_term(term: Mapping[str, Any] | None) -> NodeSelectorTerm:
    """Compile a ``NodeSelectorTerm`` of a stored object (never mutated; compiled once per term object). An empty
    term, or a malformed one (then with its ``error``), selects no node: kube-scheduler skips a term that fails to
    parse and keeps matching the others."""
    if not term:
        return NodeSelectorTerm(NOTHING, EVERYTHING)
    return _compiled(_TERMS, term, _node_selector_term)


def _node_selector_term(term: Mapping[str, Any]) -> NodeSelectorTerm:
    try:
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not isinstance(exprs, list) or not isinstance(fields, list):
            raise SelectorError(f"invalid node selector term {dict(term)!r}: expressions and fields must be lists")
        if not exprs and not fields:
            return NodeSelectorTerm(NOTHING, EVERYTHING)
        labels = Selector(tuple(_requirement(e, _NODE_OPERATORS, term) for e in exprs))
        names = Selector(tuple(_field_requirement(f, term) for f in fields))
    except SelectorError as err:
        return NodeSelectorTerm(Selector(nothing=True, error=str(err)), EVERYTHING)
    return NodeSelectorTerm(labels, names)
