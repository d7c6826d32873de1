"""Requests to the job controller and how lifecycle policies turn them into actions.

Mirrors ``applyPolicies`` (``pkg/controllers/job/job_controller_util.go``): an explicit action (from a
Command) wins; out-of-sync and stale-version requests just sync; then the pod's task policies, then the
job's policies; otherwise sync. A policy with ``timeout`` delays its action.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .job_state import SYNC_JOB

__all__ = ["ANY_EVENT", "OUT_OF_SYNC", "POD_PENDING", "Request", "apply_policies", "format_duration", "parse_duration"]

OUT_OF_SYNC = "OutOfSync"
POD_PENDING = "PodPending"
ANY_EVENT = "*"

Obj = dict[str, Any]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string (``"1h30m"``, ``"90s"``); ``ValueError`` if malformed."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"invalid duration {text!r}")
    return total


def format_duration(seconds: float) -> str:
    """Go's ``time.Duration.String``: ``10m0s``, ``1h0m0s``, ``1.5s``, ``500ms``, ``0s``."""
    nanos = round(seconds * 1e9)
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return f"{sign}{_trim(nanos / size)}{unit}"
    whole, frac = divmod(nanos, 1_000_000_000)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{_trim(secs + frac / 1e9)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _trim(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".")


@dataclass(frozen=True, slots=True)
class Request:
    """Something happened to a job: ``event`` (PodFailed, ...) or an explicit ``action`` (a Command)."""

    namespace: str
    job: str
    event: str = OUT_OF_SYNC
    action: str = ""
    task: str = ""
    pod: str = ""
    exit_code: int | None = None
    job_version: int | None = None


def _events(policy: Obj) -> list[str]:
    events = list(policy.get("events") or [])
    if policy.get("event"):
        events.append(policy["event"])
    return events


def _match(policies: list[Obj], req: Request) -> tuple[str, float | None] | None:
    for policy in policies:
        timeout = parse_duration(policy["timeout"]) if policy.get("timeout") else None
        events = _events(policy)
        if events and req.event and (req.event in events or ANY_EVENT in events):
            if req.event == POD_PENDING and timeout is None:
                continue  # PodPending only means something after a timeout
            return str(policy.get("action") or SYNC_JOB), timeout
        if policy.get("exitCode") is not None and req.exit_code is not None and policy["exitCode"] == req.exit_code:
            return str(policy.get("action") or SYNC_JOB), timeout
    return None


def apply_policies(job: Obj, req: Request) -> tuple[str, float | None]:
    """``(action, delay in seconds or None)`` for ``req`` on ``job``."""
    if req.action:
        return req.action, None
    if req.event == OUT_OF_SYNC:
        return SYNC_JOB, None
    version = int(((job.get("status") or {}).get("version")) or 0)
    if req.job_version is not None and req.job_version < version:
        return SYNC_JOB, None
    spec = job.get("spec") or {}
    if req.task:
        for task in spec.get("tasks") or []:
            if task.get("name") == req.task:
                found = _match(task.get("policies") or [], req)
                if found is not None:
                    return found
                break
    return _match(spec.get("policies") or [], req) or (SYNC_JOB, None)
