"""Fencing: how a member stops the federation's jobs when the federation can no longer reach it.

The federation renews a ``coordination.k8s.io/v1`` Lease (``pumice-system/pumice-federation-fence``) in every
member each probe. The member's ``FenceAgent`` (run by ``pumice up``, and by ``pumice run`` with its
controllers) reads it every tenth of its duration, with a plain ``get`` (no right to read other Leases is
needed): once ``leaseDurationSeconds`` pass on the member's own clock without a new ``renewTime`` while the
Lease has a holder, it deletes every Job the federation placed there, with their pods. It measures from the
moment it *saw* the renewal, never from the time written in it (the two clocks may disagree), as client-go's
leader election does.

The federation re-dispatches a lost member's jobs only after ``gracePeriod`` (at least 1.2 x the lease: the
agent reads the Lease every tenth of its duration, so it may notice a renewal that late) since its last contact,
and only if the member's agent acknowledged one of its recent renewals (an annotation on the Lease): so a member
cut off from the federation has stopped its copies before they start elsewhere, and no job runs in two members at
once. A federation that stops cleanly releases the Lease (no holder): the agents then leave the jobs running.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from pumice.clock import Clock
from pumice.store import Conflict, NotFound, Store, StoreError

from . import names
from .propagate import delete_part

__all__ = ["LEASES", "FenceAgent", "add_fence_agent", "lease_body"]

log = logging.getLogger("pumice.federation.fence")
Obj = dict[str, Any]
LEASES = "leases.coordination.k8s.io"
#: The agent reads the Lease this often, as a share of its duration.
POLL_SHARE = 0.1


def lease_body(holder: str, renew_time: str, duration: float) -> Obj:
    """The fence Lease as the federation writes it (``holder`` "" releases it)."""
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": names.FENCE_NAME, "namespace": names.FENCE_NAMESPACE},
            "spec": {"holderIdentity": holder or None, "leaseDurationSeconds": max(1, round(duration)),
                     "renewTime": renew_time}}


class FenceAgent:
    """A member-side controller (``sync``/``next_wakeup``/``pending``) over the member's own store.

    ``clock`` is the clock of whatever drives it (its ``next_wakeup`` is on that clock); ``lease_clock`` the one
    leases are counted on (default: the same). They differ in a sped-up member (``--time-scale``): the
    federation renews in real seconds, so the agent counts in real seconds too, and ``scale`` (``clock`` seconds
    per ``lease_clock`` second) turns its deadlines into the driver's time.
    """

    def __init__(self, store: Store, clock: Clock, *, lease_clock: Clock | None = None, scale: float = 1.0) -> None:
        self.store = store
        self.clock = clock
        self.lease_clock = lease_clock or clock
        self.scale = scale
        self.renew_time = ""
        self.seen_at: float | None = None
        self.duration = 0.0
        self.held = False
        self.fenced = 0  # jobs stopped so far
        self._acted = ""  # the renewal after which it fenced (it waits for a new one)
        self._read_at = -1e18
        self._marker: object = None

    def _due(self) -> float | None:
        """When the Lease runs out (None: released, never seen, or already acted on)."""
        if not self.held or self.seen_at is None or self.duration <= 0 or self._acted == self.renew_time:
            return None
        return self.seen_at + self.duration

    def _next_read(self) -> float | None:
        """While a federation holds the Lease: read it every tenth of its duration (None: only on activity)."""
        if not self.held or self.duration <= 0:
            return None
        return self._read_at + max(1.0, POLL_SHARE * self.duration)

    def _wakeup(self) -> float | None:
        """The next deadline on the lease clock."""
        times = [t for t in (self._due(), self._next_read()) if t is not None]
        return min(times) if times else None

    def next_wakeup(self) -> float | None:
        due = self._wakeup()
        if due is None or self.lease_clock is self.clock:
            return due
        return self.clock.now() + max(0.0, due - self.lease_clock.now()) * self.scale

    def pending(self) -> bool:
        now = self.lease_clock.now()
        due = self._wakeup()
        if due is not None and due <= now:
            return True
        # no federation seen (yet): look when the member's store moves, at most once a second
        return not self.held and now - self._read_at >= 1.0 and self.store.change_marker() != self._marker

    def sync(self) -> bool:
        if not self.pending():
            return False
        now = self.lease_clock.now()
        self._read_at = now
        self._marker = self.store.change_marker()
        wrote = self._read(now)  # always read before fencing: a renewal may have come since
        due = self._due()
        if due is not None and due <= now:
            self._acted = self.renew_time
            wrote |= self._fence()
        return wrote

    def _read(self, now: float) -> bool:
        try:
            lease = self.store.get(LEASES, names.FENCE_NAMESPACE, names.FENCE_NAME)
        except NotFound:
            self.held = False
            return False
        except StoreError as err:  # this member's own API server: try again at the next read
            log.warning("fence lease not read: %s", err)
            return False
        spec = lease.get("spec") or {}
        self.held = bool(spec.get("holderIdentity"))
        try:
            self.duration = float(spec.get("leaseDurationSeconds") or 0)
        except (TypeError, ValueError):
            self.duration = 0.0
        renew = str(spec.get("renewTime") or "")
        if renew == self.renew_time:
            return False
        self.renew_time = renew
        self.seen_at = now
        return self._acknowledge(lease, renew)

    def _acknowledge(self, lease: Obj, renew: str) -> bool:
        """Tell the federation this member fences (the renewal it saw), so it may re-dispatch after the grace."""
        meta = dict(lease.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), names.FENCE_ACK: renew}
        try:
            self.store.update(LEASES, {**lease, "metadata": meta})
        except (Conflict, StoreError):
            return False  # renewed again meanwhile: acknowledged at the next read
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
        pass


def add_fence_agent(manager: Any, store: Store, clock: Clock, *, lease_clock: Clock | None = None,
                    scale: float = 1.0) -> FenceAgent | None:
    """Run a ``FenceAgent`` among a ``ControllerManager``'s controllers (None without a manager); ``clock`` is
    the manager's, ``lease_clock`` and ``scale`` as ``FenceAgent`` takes them."""
    if manager is None:
        return None
    agent = FenceAgent(store, clock, lease_clock=lease_clock, scale=scale)
    manager.controllers = (*manager.controllers, agent)
    return agent
