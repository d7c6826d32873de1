"""The pods page: every pod with its phase, node, PodGroup, requests and what its status says."""

from __future__ import annotations

from .objects import (
    JOB_NAME,
    Obj,
    created_of,
    group_of,
    meta_of,
    name_of,
    namespace_of,
    pod_message,
    pod_phase,
    spec_of,
    status_of,
    task_of,
)
from .resources import clean, pod_requests
from .snapshot import PODS, Snapshot, Source

__all__ = ["pod_row", "pods"]


def pod_row(pod: Obj) -> Obj:
    st = status_of(pod)
    req = pod_requests(pod)
    return {
        "namespace": namespace_of(pod),
        "name": name_of(pod),
        "phase": pod_phase(pod),
        "node": spec_of(pod).get("nodeName"),
        "podGroup": group_of(pod),
        "job": (meta_of(pod).get("labels") or {}).get(JOB_NAME),
        "task": task_of(pod) or None,
        "requests": {d: clean(req.get(d, 0.0)) for d in ("cpu", "memory", "gpu")},
        "created": created_of(pod),
        "startTime": st.get("startTime"),
        "message": pod_message(pod),
    }


def pods(store: Source) -> Obj:
    snap = Snapshot.take(store, resources=(PODS,))
    rows = sorted((pod_row(p) for p in snap.pods), key=lambda r: (r["namespace"], r["name"]))
    return {"resourceVersion": snap.resource_version, "items": rows}
