"""``nodeinfo.volcano.sh/v1alpha1`` Numatopology: a node's NUMA layout, published by Volcano's resource exporter."""

from __future__ import annotations

from typing import Any, ClassVar

from pumice.api.base import ApiModel, Int
from pumice.api.meta import KubeObject

__all__ = ["CPUInfo", "Numatopology", "NumatopologySpec", "ResourceInfo"]


class ResourceInfo(ApiModel):
    #: A cpuset (``"0-3"``) for ``cpu``, a quantity for other resources.
    allocatable: str | None = None
    capacity: Int | None = None


class CPUInfo(ApiModel):
    numa: Int | None = None
    socket: Int | None = None
    core: Int | None = None


class NumatopologySpec(ApiModel):
    #: Kubelet policy name (``CPUManagerPolicy``, ``TopologyManagerPolicy``) -> value.
    policies: dict[str, str] | None = None
    res_reserved: dict[str, str] | None = None
    numares: dict[str, ResourceInfo] | None = None
    cpu_detail: dict[str, CPUInfo] | None = None
    pod_allocations: list[dict[str, Any]] | None = None


class Numatopology(KubeObject):
    """Cluster-scoped, named after its node; no status subresource."""

    API_VERSION: ClassVar[str] = "nodeinfo.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Numatopology"
    NAMESPACED: ClassVar[bool] = False
    PLURAL: ClassVar[str] = "numatopologies"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("numatopo",)

    spec: NumatopologySpec | None = None
