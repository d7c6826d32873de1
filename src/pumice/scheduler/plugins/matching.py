"""Kubernetes matching rules the predicates and scorers share: node selectors, node affinity terms,
label selectors, tolerations."""

from __future__ import annotations

from typing import Any


def match_expression(labels: dict[str, str], expr: dict[str, Any]) -> bool:
    key = expr.get("key", "")
    op = expr.get("operator", "")
    values = expr.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def match_node_selector_term(labels: dict[str, str], name: str, term: dict[str, Any]) -> bool:
    """A NodeSelectorTerm: all expressions and fields must match; an empty term matches nothing."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(match_expression(labels, e) for e in exprs):
        return False
    return all(match_expression({"metadata.name": name}, f) for f in fields)


def match_label_selector(labels: dict[str, str], selector: dict[str, Any] | None) -> bool:
    """metav1.LabelSelector; None selects nothing, {} selects everything."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    return all(match_expression(labels, e) for e in selector.get("matchExpressions") or [])


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(
    taints: list[dict[str, Any]], tolerations: list[dict[str, Any]], effects: tuple[str, ...]
) -> list[dict[str, Any]]:
    return [t for t in taints if t.get("effect") in effects and not any(tolerates(tol, t) for tol in tolerations)]
