"""The status a kubelet reports: pod phases with conditions and container states, node conditions.

Pure functions from (object, time) to a status patch, so the kubelet only decides *when*.
"""

from __future__ import annotations

from typing import Any

__all__ = ["node_ready_patch", "pod_failed_patch", "pod_running_patch", "pod_terminated_patch"]


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list((pod.get("spec") or {}).get("containers") or [])


def _conditions(ready: bool, ts: str) -> list[dict[str, Any]]:
    status = "True" if ready else "False"
    return [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts},
        {"type": "Initialized", "status": "True", "lastTransitionTime": ts},
        {"type": "ContainersReady", "status": status, "lastTransitionTime": ts},
        {"type": "Ready", "status": status, "lastTransitionTime": ts},
    ]


def pod_running_patch(pod: dict[str, Any], ts: str) -> dict[str, Any]:
    """Pending -> Running: every container started at ``ts`` and ready."""
    statuses = [
        {
            "name": c.get("name", ""),
            "image": c.get("image", ""),
            "imageID": "",
            "containerID": f"pumice://{c.get('name', '')}",
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": ts}},
        }
        for c in _containers(pod)
    ]
    return {"status": {"phase": "Running", "startTime": ts, "conditions": _conditions(True, ts),
                       "containerStatuses": statuses, "hostIP": "10.0.0.1", "podIP": "10.244.0.1"}}


def pod_terminated_patch(pod: dict[str, Any], ts: str, code: int, reason: str | None = None) -> dict[str, Any]:
    """Running -> Succeeded (``code`` 0) or Failed: every container terminated with ``code``."""
    status = pod.get("status") or {}
    started = status.get("startTime") or ts
    why = reason or ("Completed" if code == 0 else "Error")
    statuses = [
        {
            "name": c.get("name", ""),
            "image": c.get("image", ""),
            "imageID": "",
            "containerID": f"pumice://{c.get('name', '')}",
            "ready": False,
            "started": False,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": code, "reason": why, "startedAt": started, "finishedAt": ts}},
        }
        for c in _containers(pod)
    ]
    phase = "Succeeded" if code == 0 else "Failed"
    return {"status": {"phase": phase, "conditions": _conditions(False, ts), "containerStatuses": statuses}}


def pod_failed_patch(pod: dict[str, Any], ts: str, reason: str, message: str) -> dict[str, Any]:
    """A pod killed by its node (node failure): Failed with a reason, as the node lifecycle does."""
    patch = pod_terminated_patch(pod, ts, 137, reason)
    patch["status"]["reason"] = reason
    patch["status"]["message"] = message
    return patch


def node_ready_patch(node: dict[str, Any], ready: bool, ts: str) -> dict[str, Any]:
    """Set the node's Ready condition (other conditions kept); allocatable defaults to capacity."""
    status = node.get("status") or {}
    others = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
    cond = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "NodeStatusUnknown",
        "message": "simulated kubelet is posting ready status" if ready else "simulated node failure",
        "lastHeartbeatTime": ts,
        "lastTransitionTime": ts,
    }
    new: dict[str, Any] = {"conditions": [*others, cond]}
    if not status.get("allocatable") and status.get("capacity"):
        new["allocatable"] = status["capacity"]
    return {"status": new}
