"""Which nodes a HyperNode member selects (exactMatch / regexMatch / labelMatch), as index arrays."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pumice.scheduler.model import NodeTable


def _expr_ok(labels: dict[str, str], expr: dict[str, Any]) -> bool:
    key = expr.get("key", "")
    op = expr.get("operator", "")
    values = expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def label_selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes LabelSelector (matchLabels AND matchExpressions)."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != str(v):
            return False
    return all(_expr_ok(labels, e) for e in selector.get("matchExpressions") or [])


def select_nodes(selector: dict[str, Any], nodes: NodeTable) -> np.ndarray:
    """Indices of the session's nodes a ``type: Node`` member selects (Volcano ``GetMembers``).

    Names that match no schedulable node select nothing: the session only places on nodes it has.
    """
    picked: set[int] = set()
    exact = selector.get("exactMatch")
    if exact and exact.get("name"):
        j = nodes.index.get(exact["name"])
        if j is not None:
            picked.add(j)
    regex = selector.get("regexMatch")
    if regex and regex.get("pattern") is not None:
        try:
            pattern = re.compile(regex["pattern"])
        except re.error:
            return np.zeros(0, dtype=np.int64)  # Volcano: a bad pattern selects nothing
        picked.update(j for j, name in enumerate(nodes.names) if pattern.search(name))
    label = selector.get("labelMatch")
    if label and (label.get("matchLabels") or label.get("matchExpressions")):
        picked.update(j for j, lb in enumerate(nodes.labels) if label_selector_matches(label, lb))
    return np.array(sorted(picked), dtype=np.int64)
