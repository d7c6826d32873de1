"""``topology.volcano.sh/v1alpha1`` HyperNode: a network performance domain (switch, rack, fabric)."""

from __future__ import annotations

from typing import ClassVar

from pumice.api.base import ApiModel, Int
from pumice.api.meta import Condition, KubeObject, LabelSelector

__all__ = [
    "ExactMatch",
    "HyperNode",
    "HyperNodeSpec",
    "HyperNodeStatus",
    "MemberSelector",
    "MemberSpec",
    "RegexMatch",
]


class ExactMatch(ApiModel):
    name: str | None = None


class RegexMatch(ApiModel):
    pattern: str | None = None


class MemberSelector(ApiModel):
    """Exactly one of the three is set (CEL rule); ``labelMatch`` only for ``Node`` members."""

    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelSelector | None = None


class MemberSpec(ApiModel):
    #: ``Node`` or ``HyperNode``.
    type: str | None = None
    selector: MemberSelector | None = None


class HyperNodeSpec(ApiModel):
    #: Lower tier = faster network domain.
    tier: Int | None = None
    tier_name: str | None = None
    members: list[MemberSpec] | None = None


class HyperNodeStatus(ApiModel):
    conditions: list[Condition] | None = None
    node_count: Int | None = None


class HyperNode(KubeObject):
    API_VERSION: ClassVar[str] = "topology.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "HyperNode"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "hypernodes"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("hn",)

    spec: HyperNodeSpec | None = None
    status: HyperNodeStatus | None = None
