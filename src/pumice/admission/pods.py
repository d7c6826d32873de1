"""Pod defaulting of kube-apiserver: a resource given only in ``limits`` is requested at its limit.

``SetDefaults_Pod`` (pkg/apis/core/v1/defaults.go) sets, for every container and init container, each
request that is missing to the limit of the same resource. It runs for Pods only, not for pod templates:
a Deployment's template keeps its limits-only resources, its pods get the requests. Every resource fit in
the scheduler (and every quota) reads requests, so without it two pods that each ask a GPU in ``limits``
would share one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["default_pod"]

Obj = dict[str, Any]


def _defaulted(containers: Any) -> list[Obj] | None:
    """The containers with requests defaulted from limits (new dicts where changed), or None if none changes."""
    if type(containers) is not list:
        return None
    out: list[Obj] | None = None
    for i, container in enumerate(containers):
        resources = container.get("resources") if type(container) is dict else None
        limits = resources.get("limits") if type(resources) is dict else None
        if type(limits) is not dict or not limits:
            continue
        requests = resources.get("requests")  # type: ignore[union-attr]
        if requests is None:
            requests = {}
        elif type(requests) is not dict:
            continue  # malformed: the schema check refuses it
        missing = {name: value for name, value in limits.items() if name not in requests}
        if not missing:
            continue
        if out is None:
            out = list(containers)
        # new dicts along the path: the parts below may be shared with a template the caller still holds
        out[i] = {**container, "resources": {**resources, "requests": {**requests, **missing}}}  # type: ignore[dict-item]
    return out


def default_pod(pod: Obj) -> bool:
    """Fill in requests from limits in ``pod`` (its top level and ``spec`` are replaced, never the caller's
    nested parts); True if anything changed."""
    spec = pod.get("spec")
    if type(spec) is not dict:
        return False
    containers = _defaulted(spec.get("containers"))
    init = _defaulted(spec.get("initContainers"))
    if containers is None and init is None:
        return False
    spec = dict(spec)
    if containers is not None:
        spec["containers"] = containers
    if init is not None:
        spec["initContainers"] = init
    pod["spec"] = spec
    return True
