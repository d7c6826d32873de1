"""Discovery documents: ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/{group}/{version}``.

Plain (unaggregated) discovery: kubectl asks for the aggregated form first and falls back to these when the
answer's content type is ``application/json``.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Any

from .resources import ResourceIndex

__all__ = ["KUBERNETES_VERSION", "api_group_list", "api_resource_list", "api_versions", "version_info"]

#: The Kubernetes API version this server imitates (kubectl 1.27-1.33 are within its skew).
KUBERNETES_VERSION = (1, 32)


def version_info() -> dict[str, Any]:
    major, minor = KUBERNETES_VERSION
    try:
        pumice_version = metadata.version("pumice")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        pumice_version = "dev"

    return {
        "major": str(major),
        "minor": str(minor),
        "gitVersion": f"v{major}.{minor}.0-pumice.{pumice_version}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "compiler": "cpython",
        "platform": f"{sys.platform}/{platform.machine().lower() or 'unknown'}",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list(index: ResourceIndex) -> dict[str, Any]:
    groups = []
    for name, versions in index.groups().items():
        if not name:
            continue
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(index: ResourceIndex, group: str) -> dict[str, Any] | None:
    versions = index.groups().get(group)
    if not group or not versions:
        return None
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries, "preferredVersion": entries[0]}


def api_resource_list(index: ResourceIndex, group: str, version: str) -> dict[str, Any] | None:
    resources = index.in_group_version(group, version)
    if not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for r in resources for entry in r.discovery()],
    }
