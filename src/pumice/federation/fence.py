"""Fencing: how a member stops the federation's jobs when the federation can no longer reach it.

The federation renews a lease (ConfigMap ``pumice-system/pumice-federation-fence``) in every member each probe.
The member's ``FenceAgent`` (run by ``pumice up`` and ``pumice run`` with the controllers) watches it: once
``leaseDurationSeconds`` pass on the member's own clock without a renewal while the lease is ``active``, it
deletes every Job the federation placed there, with their pods. The federation re-dispatches a lost member's
jobs only after ``gracePeriod`` (longer than the lease) since its last contact, and only if the member's agent
acknowledged the lease: so a member cut off from the federation has stopped its copies before they start
elsewhere, and no job runs in two members at once. A federation that stops cleanly marks the lease
``released``: the agents then leave the jobs running.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from pumice.clock import Clock
from pumice.controllers.mirror import Mirror
from pumice.store import NotFound, Store, StoreError

from . import names
from .propagate import delete_part

__all__ = ["FENCE_LABEL", "FenceAgent", "add_fence_agent"]

log = logging.getLogger("pumice.federation.fence")
Obj = dict[str, Any]
#: Label on the lease ConfigMap, so the agent watches it without reading every ConfigMap.
FENCE_LABEL = "federation.pumice.io/fence"


class FenceAgent:
    """A member-side controller (``sync``/``next_wakeup``/``pending``) over the member's own store."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.leases = Mirror(store, names.CONFIGMAPS, label_selector=f"{FENCE_LABEL}=true")
        self.renew_time = ""
        self.seen_at: float | None = None
        self.duration = 0.0
        self.state = ""
        self.fenced = 0  # jobs stopped so far
        self._acted = ""  # the renewal after which it fenced (it waits for a new one)

    def next_wakeup(self) -> float | None:
        """When the lease runs out (None: released, never seen, or already acted on)."""
        if self.state != "active" or self.seen_at is None or self.duration <= 0 or self._acted == self.renew_time:
            return None
        return self.seen_at + self.duration

    def pending(self) -> bool:
        due = self.next_wakeup()
        return self.leases.pending() or (due is not None and due <= self.clock.now())

    def sync(self) -> bool:
        wrote = False
        for d in self.leases.drain():
            lease = d.new
            if lease is None or (lease.get("metadata") or {}).get("name") != names.FENCE_NAME:
                continue
            data = lease.get("data") or {}
            try:
                self.duration = float(data.get("leaseDurationSeconds") or 0)
            except ValueError:
                self.duration = 0.0
            self.state = str(data.get("state") or "")
            renew = str(data.get("renewTime") or "")
            if renew != self.renew_time:
                self.renew_time = renew
                self.seen_at = self.clock.now()
                wrote |= self._acknowledge(lease, renew)
        due = self.next_wakeup()
        if due is not None and due <= self.clock.now():
            self._acted = self.renew_time
            wrote |= self._fence()
        return wrote

    def _acknowledge(self, lease: Obj, renew: str) -> bool:
        """Tell the federation this member fences (the renewal it saw), so it may re-dispatch after the grace."""
        meta = lease.get("metadata") or {}
        try:
            stored = self.store.patch(names.CONFIGMAPS, str(meta.get("namespace")), str(meta.get("name")),
                                      {"metadata": {"annotations": {names.FENCE_ACK: renew}}})
        except StoreError:
            return False
        self.leases.put(stored)
        return True

    def _fence(self) -> bool:
        jobs, _ = self.store.list(names.JOBS, label_selector=f"{names.MANAGED_LABEL}=true")
        if not jobs:
            return False
        for job in jobs:
            meta = job.get("metadata") or {}
            log.warning("federation lease expired: stopping federated job %s/%s", meta.get("namespace"),
                        meta.get("name"))
            with contextlib.suppress(NotFound):
                delete_part(self.store, str(meta.get("namespace")), str(meta.get("name")))
            self.fenced += 1
        return True

    def close(self) -> None:
        self.leases.close()


def add_fence_agent(cluster: Any) -> FenceAgent | None:
    """Run a ``FenceAgent`` among an embedded ``runtime.Cluster``'s controllers (None without controllers)."""
    manager = getattr(cluster, "controllers", None)
    if manager is None:
        return None
    agent = FenceAgent(cluster.store, cluster.clock)
    manager.controllers = (*manager.controllers, agent)
    return agent
