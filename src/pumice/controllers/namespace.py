"""The namespace controller (kube-controller-manager's): a Namespace being deleted empties itself, then goes.

Deleting a Namespace whose ``spec.finalizers`` holds ``kubernetes`` (every namespace created through the API
server) leaves it ``Terminating``: no new object may be created in it, this controller deletes every object in it
(of every namespaced resource the store serves, with their own finalizers honoured), and once it is empty removes
``kubernetes`` from its finalizers, which deletes it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pumice.clock import Clock
from pumice.store import Conflict, NotFound, Store

from .mirror import Mirror

__all__ = ["NamespaceController"]

NAMESPACES = "namespaces"
FINALIZER = "kubernetes"
Obj = dict[str, Any]


class NamespaceController:
    """Empties and finalizes namespaces being deleted."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.namespaces = Mirror(store, NAMESPACES)
        self._terminating: set[str] = set()

    def pending(self) -> bool:
        return bool(self._terminating) or self.namespaces.pending()

    def next_wakeup(self) -> float | None:
        return None

    def sync(self) -> bool:
        for delta in self.namespaces.drain():
            name = delta.key[1]
            if delta.new is not None and (delta.new.get("metadata") or {}).get("deletionTimestamp"):
                self._terminating.add(name)
            else:
                self._terminating.discard(name)
        wrote = False
        for name in sorted(self._terminating):
            wrote = self._empty(name) or wrote
        return wrote

    def _namespaced(self) -> list[str]:
        registry = getattr(self.store, "resources", None)
        return [r for r in registry or () if registry[r].namespaced]  # type: ignore[index]

    def _empty(self, namespace: str) -> bool:
        """Delete what is left in ``namespace``; finalize it once nothing is. True if anything was written."""
        wrote = False
        left = False
        for resource in self._namespaced():
            items, _ = self.store.list(resource, namespace, copy=False)
            for obj in items:
                left = True
                meta = obj.get("metadata") or {}
                if meta.get("deletionTimestamp"):
                    continue  # its own finalizers hold it: wait
                with contextlib.suppress(NotFound):
                    self.store.delete(resource, namespace, meta.get("name") or "", copy=False)
                    wrote = True
        if left:
            return wrote
        try:
            ns = self.store.get(NAMESPACES, None, namespace)
        except NotFound:
            self._terminating.discard(namespace)
            return wrote
        finalizers = [f for f in (ns.get("spec") or {}).get("finalizers") or () if f != FINALIZER]
        with contextlib.suppress(NotFound, Conflict):
            self.store.patch(NAMESPACES, None, namespace, {"spec": {"finalizers": finalizers or None}})
            self._terminating.discard(namespace)
            return True
        return wrote
