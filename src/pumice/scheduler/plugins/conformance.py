"""conformance: never pick critical system pods as victims."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import PERMIT, PREEMPTABLE, RECLAIMABLE, UNIFIED_EVICTABLE, EvictionContext
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import TaskInfo

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def is_critical(task: TaskInfo) -> bool:
    spec = task.pod.get("spec") or {}
    return spec.get("priorityClassName") in CRITICAL_CLASSES or task.namespace == "kube-system"


class ConformancePlugin(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(PREEMPTABLE, self.name, self.evictable)
        ssn.add(RECLAIMABLE, self.name, self.evictable)
        ssn.add(UNIFIED_EVICTABLE, self.name, self.unified_evictable)

    def evictable(self, actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        return [t for t in candidates if not is_critical(t)], PERMIT

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        return [t for t in candidates if not is_critical(t)], PERMIT
