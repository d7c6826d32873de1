"""Manifest builders shared by the store tests."""

from __future__ import annotations

from typing import Any


def pod(
    name: str,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    node: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A minimal pod manifest."""
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}], "schedulerName": "volcano"}
    if node:
        spec["nodeName"] = node
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }
    obj.update(extra)
    return obj
