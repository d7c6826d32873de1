"""The arithmetic of Kubernetes' disruption controller (``pkg/controller/disruption``): which pods a
PodDisruptionBudget covers, how many of them must stay healthy, and how many may be disrupted now.

One implementation for the embedded controller that writes a budget's ``status`` and for the scheduler's
``pdb`` plugin, which recomputes it inside a session as its own evictions take pods down.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pumice.api.labels import Selector, label_selector_or_nothing

__all__ = ["BudgetStatus", "budget_selector", "budget_status", "desired_healthy", "is_healthy", "scaled"]


def budget_selector(pdb: Mapping[str, Any]) -> Selector:
    """The pods a budget covers (in its namespace). As Volcano's ``pdb`` plugin and ``policy/v1beta1``: a
    missing or empty selector covers nothing (``policy/v1`` reads ``{}`` as every pod; see the README)."""
    selector = (pdb.get("spec") or {}).get("selector")
    compiled = label_selector_or_nothing(selector)
    return compiled if not compiled.empty else label_selector_or_nothing(None)


def scaled(value: int | str, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)``: a count, or a percentage of
    ``total`` rounded up. A malformed value counts as 0 (the apiserver's validation refuses it)."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        try:
            return math.ceil(int(text[:-1]) * total / 100)
        except ValueError:
            return 0
    try:
        return int(text)
    except ValueError:
        return 0


def desired_healthy(pdb: Mapping[str, Any], expected: int) -> int:
    """How many covered pods must stay healthy, ``expected`` being how many there should be.

    ``maxUnavailable``: expected - max unavailable; ``minAvailable``: the count, or the percentage of
    expected rounded up; neither: 0. (Kubernetes takes ``expected`` from the pods' controllers' scale for
    percentages and ``maxUnavailable``; callers pass the number of covered pods.)"""
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        return max(0, expected - scaled(spec["maxUnavailable"], expected))
    if spec.get("minAvailable") is not None:
        return scaled(spec["minAvailable"], expected)
    return 0


def is_healthy(pod: Mapping[str, Any]) -> bool:
    """Running, not being deleted, and Ready (a pod that reports no Ready condition at all counts as ready:
    simulated kubelets and case files often leave conditions out)."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return True


@dataclass(frozen=True)
class BudgetStatus:
    expected_pods: int
    current_healthy: int
    desired_healthy: int
    disruptions_allowed: int

    def as_status(self, generation: int | None, disrupted: Mapping[str, str] | None) -> dict[str, Any]:
        """The budget's ``status`` as the disruption controller writes it."""
        out: dict[str, Any] = {
            "currentHealthy": self.current_healthy,
            "desiredHealthy": self.desired_healthy,
            "disruptionsAllowed": self.disruptions_allowed,
            "expectedPods": self.expected_pods,
        }
        if generation is not None:
            out["observedGeneration"] = generation
        if disrupted:
            out["disruptedPods"] = dict(disrupted)
        return out


def budget_status(pdb: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> BudgetStatus:
    """The status of ``pdb`` over ``pods`` (any pods: those outside its namespace or selector are skipped;
    finished pods are not expected)."""
    namespace = (pdb.get("metadata") or {}).get("namespace") or "default"
    selector = budget_selector(pdb)
    disrupted = (pdb.get("status") or {}).get("disruptedPods") or {}
    expected = healthy = 0
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("namespace") or "default") != namespace or not selector.matches(meta.get("labels")):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        expected += 1
        if meta.get("name") not in disrupted and is_healthy(pod):
            healthy += 1
    desired = desired_healthy(pdb, expected)
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return BudgetStatus(expected, healthy, desired, allowed)
