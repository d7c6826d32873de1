"""Kubernetes toleration rules the predicates and scorers share (label and node selectors: ``pumice.api.labels``)."""

from __future__ import annotations

from typing import Any


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
