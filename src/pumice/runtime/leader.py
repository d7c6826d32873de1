"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's ``leaderelection`` semantics.

A candidate tries to acquire the Lease every ``retry_period``: it takes it when it does not exist, when it
holds it already, or when the holder has not renewed it for ``lease_duration`` — measured on the candidate's
own clock from the moment it last *saw the record change*, never from the timestamps written in it (clocks of
two machines may disagree). The leader renews every ``retry_period``; when it has not managed to renew for
``renew_deadline`` it stops leading (``leading`` turns False, ``on_lost`` is called). Since
``renew_deadline < lease_duration``, a leader cut off stops before anyone else may take over: two replicas
never lead at once. Writes use the Lease's resourceVersion (optimistic concurrency), so two candidates racing
for an expired Lease cannot both win.

Defaults as client-go's and Volcano's: lease duration 15 s, renew deadline 10 s, retry period 2 s.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pumice.store import AlreadyExists, Conflict, NotFound, Store, StoreError

__all__ = ["LEASES", "LeaderElector", "default_identity"]

log = logging.getLogger("pumice.leader")

LEASES = "leases.coordination.k8s.io"
JITTER = 1.2  # client-go's JitterFactor for the retry period


def default_identity() -> str:
    """``<hostname>_<uuid>``, as client-go builds a candidate's identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _micro_time(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Elects one leader among the replicas that share ``namespace/name`` (see the module docstring)."""

    def __init__(self, store: Store, name: str, namespace: str, identity: str | None = None, *,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 on_started: Callable[[], None] | None = None, on_lost: Callable[[], None] | None = None,
                 monotonic: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        if not lease_duration > renew_deadline > retry_period * JITTER:
            raise ValueError("need lease_duration > renew_deadline > retry_period * 1.2 (as client-go)")
        self.store = store
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started = on_started
        self.on_lost = on_lost
        self._monotonic = monotonic
        self._wall = wall
        self._observed: dict[str, Any] | None = None  # the last record seen (holder, renewTime, ...)
        self._observed_at = 0.0  # when it was seen changing (our clock)
        self._renewed_at: float | None = None  # when we last renewed successfully (our clock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.transitions = 0

    # --- state ------------------------------------------------------------------------------------------

    @property
    def leading(self) -> bool:
        """True while this replica holds the Lease and renewed it less than ``renew_deadline`` ago."""
        renewed = self._renewed_at
        return renewed is not None and self._monotonic() - renewed < self.renew_deadline

    @property
    def holder(self) -> str:
        return str((self._observed or {}).get("holderIdentity") or "")

    # --- one attempt ------------------------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt, as client-go's ``tryAcquireOrRenew``; True if we hold the Lease afterwards."""
        now_wall = self._wall()
        now = self._monotonic()
        mine = {"holderIdentity": self.identity, "leaseDurationSeconds": round(self.lease_duration),
                "acquireTime": _micro_time(now_wall), "renewTime": _micro_time(now_wall), "leaseTransitions": 0}
        try:
            lease = self.store.get(LEASES, self.namespace, self.name)
        except NotFound:
            try:
                self.store.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                           "metadata": {"name": self.name, "namespace": self.namespace},
                                           "spec": mine})
            except (AlreadyExists, Conflict):
                return False
            self._observe(mine, now)
            self._renewed_at = now
            return True
        spec = dict(lease.get("spec") or {})
        if spec != self._observed:
            self._observe(spec, now)
        holder = spec.get("holderIdentity") or ""
        held_by_me = holder == self.identity
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and not held_by_me and self._observed_at + duration > now:
            return False  # somebody else holds an unexpired Lease
        if held_by_me:
            mine["acquireTime"] = spec.get("acquireTime") or mine["acquireTime"]
            mine["leaseTransitions"] = int(spec.get("leaseTransitions") or 0)
        else:
            mine["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        body = {**lease, "spec": {**spec, **mine}}
        try:
            updated = self.store.update(LEASES, body)
        except (Conflict, NotFound):
            return False
        self._observe(dict(updated.get("spec") or mine), now)
        self._renewed_at = now
        return True

    def _observe(self, record: dict[str, Any], now: float) -> None:
        self._observed = dict(record)
        self._observed_at = now

    # --- the loop ---------------------------------------------------------------------------------------

    def start(self) -> LeaderElector:
        self._thread = threading.Thread(target=self.run, name=f"leader-{self.name}", daemon=True)
        self._thread.start()
        return self

    def halt(self) -> None:
        """Stop campaigning and renewing (the Lease is kept until ``stop`` releases it or it expires)."""
        self._stop.set()

    def stop(self, release: bool = True, timeout: float | None = None) -> None:
        """Stop campaigning; the leader gives the Lease up (an empty holder) so a successor need not wait.
        ``timeout``: the longest the release may take (client-go bounds it too); past it the Lease is left to
        expire."""
        self._stop.set()
        by = None if timeout is None else time.monotonic() + timeout  # one budget for the loop and the release
        if self._thread is not None:
            self._thread.join(self.retry_period * 3 if by is None else min(timeout or 0.0, self.retry_period * 3))
        if release and self.leading:
            if by is None:
                self._release()
            else:
                releasing = threading.Thread(target=self._release, name=f"release-{self.name}", daemon=True)
                releasing.start()
                releasing.join(max(0.0, by - time.monotonic()))
                if releasing.is_alive():
                    log.warning("lease %s/%s: not released within %.0f s (the API server did not answer); it "
                                "expires on its own", self.namespace, self.name, timeout)
        self._renewed_at = None

    def _release(self) -> None:
        try:
            lease = self.store.get(LEASES, self.namespace, self.name)
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                spec = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1}
                self.store.update(LEASES, {**lease, "spec": spec})
        except StoreError:
            pass

    def wait_leading(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else self._monotonic() + timeout
        while not self.leading:
            if self._stop.is_set() or (deadline is not None and self._monotonic() >= deadline):
                return False
            time.sleep(0.05)
        return True

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except StoreError as err:
            log.warning("lease %s/%s: %s", self.namespace, self.name, err.message)
            return False

    def run(self) -> None:
        """Acquire (retrying), then renew until it fails for ``renew_deadline`` or ``stop``."""
        while not self._stop.is_set():
            if self._attempt():
                break
            # sleep to the next retry, or to the moment the holder's Lease expires when that comes first
            expires = self._observed_at + float((self._observed or {}).get("leaseDurationSeconds")
                                                or self.lease_duration)
            wait = self.retry_period * (1 + random.random() * (JITTER - 1))
            wait = max(0.05, min(wait, expires - self._monotonic() + 0.01))
            self._stop.wait(wait)
        else:
            return
        log.info("lease %s/%s acquired by %s", self.namespace, self.name, self.identity)
        self.transitions += 1
        if self.on_started is not None:
            self.on_started()
        while not self._stop.wait(self.retry_period):
            if self._attempt():
                continue
            if self._stop.is_set():
                return
            if not self.leading:  # no renewal within the renew deadline
                holder = self.holder
                log.error("lease %s/%s lost by %s (%s)", self.namespace, self.name, self.identity,
                          f"now held by {holder!r}" if holder and holder != self.identity
                          else f"not renewed within {self.renew_deadline:.0f} s")
                self._renewed_at = None
                if self.on_lost is not None:
                    self.on_lost()
                return
