"""Small accessors on wire-format objects, shared by every page."""

from __future__ import annotations

from typing import Any

from pumice.api.group_name import group_name

__all__ = [
    "JOB_NAME",
    "TASK_SPEC",
    "Obj",
    "condition",
    "conditions",
    "created_of",
    "group_of",
    "key_of",
    "meta_of",
    "name_of",
    "namespace_of",
    "occupies",
    "owner",
    "pending_reason",
    "pod_message",
    "pod_phase",
    "spec_of",
    "status_of",
    "task_of",
]

Obj = dict[str, Any]

TASK_SPEC = "volcano.sh/task-spec"
JOB_NAME = "volcano.sh/job-name"
_TERMINAL = ("Succeeded", "Failed")


def meta_of(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def name_of(obj: Obj) -> str:
    return str(meta_of(obj).get("name") or "")


def namespace_of(obj: Obj) -> str:
    return str(meta_of(obj).get("namespace") or "")


def key_of(obj: Obj) -> str:
    """``namespace/name``."""
    return f"{namespace_of(obj)}/{name_of(obj)}"


def spec_of(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def status_of(obj: Obj) -> Obj:
    return obj.get("status") or {}


def created_of(obj: Obj) -> str | None:
    return meta_of(obj).get("creationTimestamp")


def occupies(pod: Obj) -> bool:
    """Whether a pod holds its node's resources: bound and not finished."""
    return bool(spec_of(pod).get("nodeName")) and status_of(pod).get("phase") not in _TERMINAL


def pod_phase(pod: Obj) -> str:
    """The phase as ``kubectl get pods`` shows it: ``Terminating`` while being deleted."""
    if meta_of(pod).get("deletionTimestamp"):
        return "Terminating"
    return status_of(pod).get("phase") or "Pending"


def group_of(pod: Obj) -> str | None:
    """The PodGroup a pod belongs to, as the scheduler reads it (``None`` if none)."""
    return group_name(pod) or None


def task_of(pod: Obj) -> str:
    m = meta_of(pod)
    return str((m.get("labels") or {}).get(TASK_SPEC) or (m.get("annotations") or {}).get(TASK_SPEC) or "")


def owner(obj: Obj, kind: str) -> Obj | None:
    """The first owner reference of that kind."""
    for ref in meta_of(obj).get("ownerReferences") or []:
        if ref.get("kind") == kind:
            return ref
    return None


def condition(obj: Obj, type_: str) -> Obj | None:
    for cond in status_of(obj).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def conditions(obj: Obj | None) -> list[Obj]:
    """The conditions, with the fields a page shows."""
    if obj is None:
        return []
    return [{k: c.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime")}
            for c in status_of(obj).get("conditions") or []]


def pending_reason(pg: Obj | None) -> str | None:
    """Why the scheduler says a PodGroup waits (its ``Unschedulable`` condition), if it does."""
    if pg is None:
        return None
    cond = condition(pg, "Unschedulable")
    if cond is None or str(cond.get("status")) != "True":
        return None
    return str(cond.get("message") or cond.get("reason") or "Unschedulable")


def pod_message(pod: Obj) -> str:
    """What a pod's status says about it: why it is unscheduled, a container's state, or its own message."""
    st = status_of(pod)
    cond = condition(pod, "PodScheduled")
    if cond is not None and str(cond.get("status")) == "False":
        return str(cond.get("message") or cond.get("reason") or "")
    for cs in st.get("containerStatuses") or []:
        for state in (cs.get("state") or {}).values():
            if isinstance(state, dict) and (state.get("reason") or state.get("message")):
                return str(state.get("message") or state.get("reason"))
    return str(st.get("message") or st.get("reason") or "")
