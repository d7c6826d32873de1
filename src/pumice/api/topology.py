"""``topology.volcano.sh/v1alpha1`` HyperNode: a network performance domain (switch, rack, fabric)."""

from __future__ import annotations

from typing import ClassVar

from pumice.api.base import ApiModel, Int, openapi
from pumice.api.meta import Condition, KubeObject, LabelSelector, PrinterColumn
from pumice.api.scheduling import DNS1123_SUBDOMAIN

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
    name: str | None = openapi(required=True, minLength=1, maxLength=253, pattern=DNS1123_SUBDOMAIN)


class RegexMatch(ApiModel):
    pattern: str | None = openapi(required=True, minLength=1)


class MemberSelector(ApiModel):
    """Exactly one of the three is set (CEL rule); ``labelMatch`` only for ``Node`` members."""

    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelSelector | None = None


class MemberSpec(ApiModel):
    #: ``Node`` or ``HyperNode``.
    type: str | None = openapi(required=True, enum=["Node", "HyperNode"])
    selector: MemberSelector | None = None


class HyperNodeSpec(ApiModel):
    #: Lower tier = faster network domain.
    tier: Int | None = openapi(required=True, minimum=0)
    tier_name: str | None = openapi(maxLength=253)
    members: list[MemberSpec] | None = openapi(minItems=1)


class HyperNodeStatus(ApiModel):
    conditions: list[Condition] | None = None
    node_count: Int | None = openapi(minimum=0)


class HyperNode(KubeObject):
    API_VERSION: ClassVar[str] = "topology.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "HyperNode"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "hypernodes"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("hn",)
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Tier", "string", ".spec.tier"),
        PrinterColumn("TierName", "string", ".spec.tierName"),
        PrinterColumn("NodeCount", "integer", ".status.nodeCount"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    )

    spec: HyperNodeSpec | None = None
    status: HyperNodeStatus | None = None
