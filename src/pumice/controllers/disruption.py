"""The disruption controller of kube-controller-manager (embedded clusters only): ``status`` of every
PodDisruptionBudget (expected, healthy and desired pods, disruptions allowed), kept current as pods come
and go, with the arithmetic of :func:`pumice.api.disruption.budget_status` that the scheduler's ``pdb``
plugin shares. ``disruptedPods`` is kept as written by whoever admitted an eviction."""

from __future__ import annotations

import contextlib
from typing import Any

from pumice.api.disruption import budget_status
from pumice.api.resources import PODDISRUPTIONBUDGETS
from pumice.clock import Clock
from pumice.store import NotFound, Store

from .mirror import Mirror
from .owned import OwnedPods

__all__ = ["DisruptionController"]

Obj = dict[str, Any]
Key = tuple[str, str]


class DisruptionController:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.pods = OwnedPods(store, clock)  # its own: ``changed_namespaces`` is emptied by its reader
        self.pods.changed_namespaces.clear()
        self.budgets = Mirror(store, PODDISRUPTIONBUDGETS)
        self._dirty: set[Key] = set(self.budgets.objects)
        self.budgets.drain()

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        if self._dirty or self.budgets.pending():
            return True
        return bool(self.budgets.objects) and (self.pods.pending() or bool(self.pods.changed_namespaces))

    def sync(self) -> bool:
        for d in self.budgets.drain():
            if d.new is not None:
                self._dirty.add(d.key)
        self.pods.refresh()
        changed, self.pods.changed_namespaces = self.pods.changed_namespaces, set()
        if changed:
            self._dirty |= {key for key in self.budgets.objects if key[0] in changed}
        wrote = False
        for key in sorted(self._dirty):
            budget = self.budgets.get(*key)
            if budget is not None:
                wrote |= self._reconcile(key, budget)
        self._dirty.clear()
        return wrote

    def _reconcile(self, key: Key, budget: Obj) -> bool:
        pods = self.pods.by_namespace.get(key[0], {}).values()
        old = budget.get("status") or {}
        generation = (budget.get("metadata") or {}).get("generation")
        status = budget_status(budget, pods).as_status(generation, old.get("disruptedPods"))
        if old.get("conditions") is not None:
            status["conditions"] = old["conditions"]
        if old == status:
            return False
        with contextlib.suppress(NotFound):
            current = {k: v for k, v in (budget.get("metadata") or {}).items() if k != "resourceVersion"}
            self.budgets.put(self.store.update(PODDISRUPTIONBUDGETS, {**budget, "metadata": current, "status": status},
                                               subresource="status", copy=False))
            return True
        return False

    def close(self) -> None:
        self.budgets.close()
