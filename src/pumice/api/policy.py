"""``policy/v1`` PodDisruptionBudget (also served as ``policy/v1beta1``, as kube-apiserver 1.21-1.24 do).

The budget's status is worked out by :func:`pumice.api.disruption.budget_status`, the arithmetic of
Kubernetes' disruption controller, shared by the embedded controller and the scheduler's ``pdb`` plugin.
"""

from __future__ import annotations

from typing import ClassVar

from pumice.api.base import ApiModel, Int
from pumice.api.meta import Condition, KubeObject, LabelSelector

__all__ = ["PodDisruptionBudget", "PodDisruptionBudgetSpec", "PodDisruptionBudgetStatus"]

#: ``intstr.IntOrString``: a count or a percentage such as ``"25%"``.
IntOrString = Int | str


class PodDisruptionBudgetSpec(ApiModel):
    min_available: IntOrString | None = None
    max_unavailable: IntOrString | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(ApiModel):
    observed_generation: Int | None = None
    #: pod name -> when the eviction was admitted (pods counted as gone already).
    disrupted_pods: dict[str, str] | None = None
    disruptions_allowed: Int | None = None
    current_healthy: Int | None = None
    desired_healthy: Int | None = None
    expected_pods: Int | None = None
    conditions: list[Condition] | None = None


class PodDisruptionBudget(KubeObject):
    """How many of a set of pods voluntary evictions (preempt, reclaim, shuffle) may take down at once."""

    API_VERSION: ClassVar[str] = "policy/v1"
    KIND: ClassVar[str] = "PodDisruptionBudget"
    PLURAL: ClassVar[str] = "poddisruptionbudgets"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pdb",)

    spec: PodDisruptionBudgetSpec | None = None
    status: PodDisruptionBudgetStatus | None = None
