"""pdb: victims of preempt, reclaim and shuffle never take a PodDisruptionBudget below what it must keep.

Volcano's plugin reads each budget's ``status.disruptionsAllowed`` and, walking the candidates in order,
lets a pod go while every budget covering it still has a disruption left (a pod listed in the budget's
``disruptedPods`` is gone already and costs nothing). pumice does the same, with the allowance worked
out again at every call from the session's own view (:func:`pumice.api.disruption.budget_status`: the
healthy covered pods, less what the budget must keep), capped by the status when the budget has one:
pods this session evicted earlier are no longer healthy, so two preemptions in one session cannot
spend one disruption twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pumice.api.disruption import budget_selector, desired_healthy, is_healthy
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import (
    PERMIT,
    PREEMPTABLE,
    RECLAIMABLE,
    UNIFIED_EVICTABLE,
    VICTIM_FILTER,
    EvictionContext,
)
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import COMPLETED_STATUS, TaskInfo, TaskStatus


@dataclass(eq=False)
class Budget:
    """One PodDisruptionBudget and the session's tasks it covers."""

    pdb: dict[str, Any]
    members: list[TaskInfo] = field(default_factory=list)
    disrupted: frozenset[str] = frozenset()
    #: ``status.disruptionsAllowed`` as read at open, or None when the budget has no status yet.
    reported: int | None = None

    def allowed(self) -> int:
        """Disruptions allowed now: the disruption controller's arithmetic over the session's tasks."""
        expected = healthy = 0
        for t in self.members:
            if t.status & COMPLETED_STATUS:
                continue
            expected += 1
            if t.status == TaskStatus.RUNNING and t.name not in self.disrupted and is_healthy(t.pod):
                healthy += 1
        allowed = healthy - desired_healthy(self.pdb, expected)
        if expected <= 0 or allowed <= 0:
            return 0
        return allowed if self.reported is None else min(allowed, self.reported)


class PdbPlugin(Plugin):
    name = "pdb"

    def on_session_open(self, ssn: Session) -> None:
        self.budgets: list[Budget] = []
        #: task uid -> indices of the budgets covering it
        self.covering: dict[str, list[int]] = {}
        pdbs = ssn.state.pdbs
        if pdbs:
            self._cover(ssn, pdbs)
        ssn.add(PREEMPTABLE, self.name, self.evictable)
        ssn.add(RECLAIMABLE, self.name, self.evictable)
        ssn.add(VICTIM_FILTER, self.name, self.keep_budgets)
        ssn.add(UNIFIED_EVICTABLE, self.name, self.gang_evictable)

    def _cover(self, ssn: Session, pdbs: list[dict[str, Any]]) -> None:
        by_namespace: dict[str, list[tuple[int, Any]]] = {}
        for pdb in pdbs:
            status = pdb.get("status") or {}
            reported = status.get("disruptionsAllowed")
            budget = Budget(pdb, disrupted=frozenset(status.get("disruptedPods") or ()),
                            reported=None if reported is None else int(reported))
            namespace = (pdb.get("metadata") or {}).get("namespace") or "default"
            by_namespace.setdefault(namespace, []).append((len(self.budgets), budget_selector(pdb)))
            self.budgets.append(budget)
        tasks: dict[str, TaskInfo] = {}
        for job in ssn.state.all_jobs.values():
            tasks.update(job.tasks)
        for placed in ssn.nodes.tasks:
            for uid, t in placed.items():
                tasks.setdefault(uid, t)
        for uid, t in tasks.items():
            candidates = by_namespace.get(t.namespace)
            if not candidates:
                continue
            labels = (t.pod.get("metadata") or {}).get("labels")
            for i, selector in candidates:
                if selector.matches(labels):
                    self.budgets[i].members.append(t)
                    self.covering.setdefault(uid, []).append(i)

    def keep_budgets(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """The tasks, in order, that may go without any budget covering them going below its minimum."""
        if not self.covering:
            return list(tasks)
        left: dict[int, int] = {}
        out = []
        for t in tasks:
            violated = False
            for i in self.covering.get(t.uid, ()):
                budget = self.budgets[i]
                if t.name in budget.disrupted:
                    continue  # the API server admitted its eviction already
                if i not in left:
                    left[i] = budget.allowed()
                left[i] -= 1
                if left[i] < 0:
                    violated = True
            if not violated:
                out.append(t)
        return out

    def evictable(self, actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        return self.keep_budgets(candidates), PERMIT

    def gang_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """gangpreempt / gangreclaim respect budgets too (Volcano's pdb plugin does not register here)."""
        return self.keep_budgets(candidates), PERMIT
