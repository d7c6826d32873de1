"""Fake nodes on a real API server, KWOK's way.

``FakeNodes`` plays the kubelet of every Node annotated ``kwok.x-k8s.io/node: fake`` (the annotation KWOK
uses) and of no other: it marks the node Ready, runs the pods bound to it for their duration (see
:mod:`pumice.nodes.duration`), finishes them, and completes the deletion of its pods (an API server only
marks a bound pod for deletion, its kubelet removes it). It also renews each node's Lease in
``kube-node-lease``, as a kubelet's heartbeat, so a cluster's node lifecycle controller keeps the nodes Ready.
A whole cluster of thousands of nodes then runs on the real API server without a kubelet.
"""

from __future__ import annotations

import contextlib
import heapq
import inspect
import time
from typing import Any

from pumice.clock import Clock
from pumice.store import AlreadyExists, NotFound, Store, StoreError

from .kubelet import SimulatedKubelet

__all__ = ["FAKE_ANNOTATION", "FAKE_VALUE", "HEARTBEAT", "FakeNodes", "is_fake"]

FAKE_ANNOTATION = "kwok.x-k8s.io/node"
FAKE_VALUE = "fake"
NODE_LEASES = "kube-node-lease"
LEASES = "leases.coordination.k8s.io"
#: Seconds (wall) between two heartbeats of a node: a node lifecycle controller waits 40 s by default.
HEARTBEAT = 20.0
LEASE_SECONDS = 40


def is_fake(node: dict[str, Any]) -> bool:
    """Whether KWOK (and ``FakeNodes``) serve this node."""
    return ((node.get("metadata") or {}).get("annotations") or {}).get(FAKE_ANNOTATION) == FAKE_VALUE


def _micro_time(seconds: float) -> str:
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{whole}.{int((seconds % 1) * 1e6):06d}Z"


class FakeNodes(SimulatedKubelet):
    """The kubelets of the fake nodes of ``store`` (see the module docstring); ``heartbeat=None``: no Leases."""

    def __init__(self, store: Store, clock: Clock, *, heartbeat: float | None = HEARTBEAT) -> None:
        force: dict[str, Any] | None = None
        if "grace_period_seconds" in inspect.signature(store.delete).parameters:
            force = {"grace_period_seconds": 0}
        self.heartbeat = heartbeat
        self._beats: list[tuple[float, str]] = []  # (monotonic due time, node)
        self._beating: set[str] = set()
        super().__init__(store, clock, serves=is_fake, force_delete=force)

    def sync(self) -> bool:
        wrote = super().sync()
        if self.heartbeat is not None:
            self._beat()
        return wrote

    def _beat(self) -> None:
        now = time.monotonic()
        for name in self._nodes.keys() - self._beating:  # new nodes: first beat now, then spread out
            self._beating.add(name)
            heapq.heappush(self._beats, (now, name))
        beats = self._beats
        while beats and beats[0][0] <= now:
            _, name = heapq.heappop(beats)
            if name not in self._nodes:
                self._beating.discard(name)
                continue
            self._renew(name)
            heapq.heappush(beats, (now + self.heartbeat, name))  # type: ignore[operator]

    def _renew(self, name: str) -> None:
        stamp = _micro_time(time.time())
        with contextlib.suppress(StoreError):
            try:
                self.store.patch(LEASES, NODE_LEASES, name, {"spec": {"renewTime": stamp}})
            except NotFound:
                with contextlib.suppress(AlreadyExists):
                    self.store.create(LEASES, {
                        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": name, "namespace": NODE_LEASES},
                        "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS,
                                 "renewTime": stamp},
                    })

    def next_wakeup(self) -> float | None:
        """The next pod completion (cluster time); heartbeats are polled by ``sync``."""
        return super().next_wakeup()
