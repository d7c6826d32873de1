"""Resource strings (``pods``, ``podgroups.scheduling.volcano.sh``) to API server paths."""

from __future__ import annotations

from urllib.parse import quote

from pumice.store.resources import ResourceInfo

__all__ = ["collection_path", "object_path"]


def _base(info: ResourceInfo) -> str:
    group, _, version = info.api_version.rpartition("/")
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def collection_path(info: ResourceInfo, namespace: str | None) -> str:
    """``/api/v1/namespaces/NS/pods`` (or every namespace's, for ``namespace=None``)."""
    plural = info.name.split(".", 1)[0]
    if info.namespaced and namespace:
        return f"{_base(info)}/namespaces/{quote(namespace, safe='')}/{plural}"
    return f"{_base(info)}/{plural}"


def object_path(info: ResourceInfo, namespace: str | None, name: str, subresource: str | None = None) -> str:
    path = f"{collection_path(info, namespace)}/{quote(name, safe='')}"
    return f"{path}/{subresource}" if subresource else path
