"""The host Job's status: the member's copy verbatim, the parts of a split job added up, or why it waits.

``kubectl get vcjob`` on the host then reads as on a single cluster: STATUS the member's phase, RUNNINGS its
running pods; the CLUSTER label (and column on ``pumice up --federation``) names the member.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FINISHED", "TERMINAL", "host_status", "phase_of", "waiting_status"]

Obj = dict[str, Any]
#: Phases after which a job holds nothing and is not taken back from a lost member.
TERMINAL = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
#: Phases after which the job is over for good (dependencies, TTL).
FINISHED = frozenset({"Completed", "Failed", "Terminated"})
_COUNTS = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
_COPIED = ("state", "minAvailable", "taskStatusCount", *_COUNTS, "version", "retryCount", "runningDuration",
           "conditions", "controlledResources")
#: When parts disagree, the phase the whole job shows: the first one found in this order.
_PRECEDENCE = ("Failed", "Aborting", "Aborted", "Terminating", "Terminated", "Restarting", "Pending",
               "Completing", "Running", "Completed")


def phase_of(job: Obj | None) -> str:
    return str((((job or {}).get("status") or {}).get("state") or {}).get("phase") or "")


def waiting_status(reason: str, message: str, min_available: int, *, phase: str = "Pending",
                   now: str = "") -> Obj:
    state: Obj = {"phase": phase, "reason": reason, "message": message}
    if now:
        state["lastTransitionTime"] = now
    return {"state": state, "minAvailable": min_available}


def host_status(parts: Sequence[Obj]) -> Obj:
    """The host's status from the members' copies (one: copied; several: summed, phase by precedence)."""
    if len(parts) == 1:
        status = parts[0].get("status") or {}
        return {k: status[k] for k in _COPIED if k in status}
    out: Obj = {k: 0 for k in _COUNTS}
    out["minAvailable"] = 0
    tasks: Obj = {}
    phases = []
    for part in parts:
        status = part.get("status") or {}
        for k in _COUNTS:
            out[k] += int(status.get(k) or 0)
        out["minAvailable"] += int(status.get("minAvailable") or 0)
        tasks.update(status.get("taskStatusCount") or {})
        phases.append(phase_of(part) or "Pending")
    if tasks:
        out["taskStatusCount"] = tasks
    phase = next((p for p in _PRECEDENCE if p in phases), phases[0] if phases else "Pending")
    out["state"] = {"phase": phase}
    return out
