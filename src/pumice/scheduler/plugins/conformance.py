"""conformance: never pick critical system pods as victims."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import PERMIT, Session
from pumice.scheduler.model import TaskInfo

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def is_critical(task: TaskInfo) -> bool:
    spec = task.pod.get("spec") or {}
    return spec.get("priorityClassName") in CRITICAL_CLASSES or task.namespace == "kube-system"


@register_plugin
class ConformancePlugin(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        def evictable(actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return [t for t in candidates if not is_critical(t)], PERMIT

        ssn.add("preemptable", self.name, evictable)
        ssn.add("reclaimable", self.name, evictable)
