"""cdp: cooldown protection — a pod that started recently is not preempted or reclaimed.

A pod labelled (or else annotated) ``volcano.sh/cooldown-time: <Go duration>`` is protected while it
is Running and its ``PodScheduled`` condition turned true less than that long ago (the session's
clock). Pods without a valid duration, or not Running, stay candidates (Volcano's cdp plugin).
"""

from __future__ import annotations

import logging

from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import PERMIT, PREEMPTABLE, RECLAIMABLE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import TaskInfo
from pumice.scheduler.plugins.sla import parse_duration
from pumice.scheduler.snapshot import parse_time

COOLDOWN_TIME = "volcano.sh/cooldown-time"

log = logging.getLogger("pumice.scheduler")


def cooldown(task: TaskInfo) -> float | None:
    """The pod's cooldown in seconds, or None (no key, or not a duration)."""
    meta = task.pod.get("metadata") or {}
    value = (meta.get("labels") or {}).get(COOLDOWN_TIME)
    if value is None:
        value = (meta.get("annotations") or {}).get(COOLDOWN_TIME)
        if value is None:
            return None
    seconds = parse_duration(str(value))
    if seconds is None:
        log.warning("pod %s: invalid time duration %s=%s", task.key, COOLDOWN_TIME, value)
    return seconds


def protected(task: TaskInfo, now: float) -> bool:
    """Still cooling down at ``now``."""
    seconds = cooldown(task)
    if seconds is None:
        return False
    status = task.pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            return parse_time(cond.get("lastTransitionTime")) + seconds > now
    return False


class CdpPlugin(Plugin):
    name = "cdp"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.add(PREEMPTABLE, self.name, self.victims)
        ssn.add(RECLAIMABLE, self.name, self.victims)

    def victims(self, actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        now = self.ssn.now
        return [t for t in candidates if not protected(t, now)], PERMIT
