"""``SimulatedKubelet``: the nodes of an embedded cluster, like KWOK.

A pod bound to a simulated node becomes Running at once, runs for its duration (see
:mod:`pumice.nodes.duration`) and then Succeeded or Failed. Pending completions sit in a heap of
``(time, seq)`` timers, so a step costs the events that happened, never a scan of all pods.
The kubelet is driven: ``sync()`` applies what the store reports and fires due timers,
``next_wakeup()`` says when it next has something to do.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pumice.api.gpus import GPUSHARE, MILLI, assigned_ids, gpu_request, node_gpus
from pumice.api.wellformed import problem, screened
from pumice.clock import Clock, rfc3339
from pumice.node_metrics import NodeMetrics
from pumice.store import (
    Gone,
    Store,
    StoreError,
    Watch,
    Watcher,
    WatchEvent,
)

from .colocation import ColocationAgent
from .cpumanager import CpuManager
from .duration import exit_code, pod_duration
from .meter import UsageMeter
from .status import node_ready_patch, pod_failed_patch, pod_running_patch, pod_terminated_patch

__all__ = ["SimulatedKubelet"]

log = logging.getLogger(__name__)

_DONE = ("Succeeded", "Failed")


@dataclass(slots=True)
class _Running:
    """A pod this kubelet runs: which incarnation (uid), where, and when it ends (None: never)."""

    uid: str
    node: str
    pod: dict[str, Any]
    end: float | None
    #: (GPU index, amount) it holds on its node (milli, or MiB for Volcano's gpushare).
    gpus: tuple[tuple[int, float], ...] = ()


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _ready_condition(node: dict[str, Any]) -> str | None:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return None


def _readable(ev: WatchEvent) -> WatchEvent | None:
    """``ev`` if a kubelet can read its object (``pumice.api.wellformed``); else None (a version it cannot read
    is ignored: the last one it could read stays; the scheduler reports it), or for a deletion the deletion of
    what can be read of it."""
    if problem(ev.object) is None:
        return ev
    if ev.type != "DELETED":
        return None
    obj = ev.object
    spec = obj.get("spec")
    node = spec.get("nodeName") if isinstance(spec, dict) and isinstance(spec.get("nodeName"), str) else None
    return WatchEvent("DELETED", {"kind": obj.get("kind"), "metadata": obj.get("metadata") or {},
                                  "spec": {"nodeName": node} if node else {}})


class SimulatedKubelet:
    """Simulates the kubelets of ``nodes`` (all nodes in the store when ``None``).

    What it writes it does not read back (``copy=False``), and its status patches are built fresh for the
    store, which keeps them (``owned=True``).

    ``serves(node)`` narrows that to the nodes it accepts, decided again at every change of the node (KWOK's
    ``kwok.x-k8s.io/node: fake``, see ``pumice.nodes.kwok``); pods bound to other nodes are left alone.
    ``force_delete`` (the options of ``Store.delete``) finishes the deletion of a pod on a served node that an
    API server only marked for deletion (its kubelet's part, with a grace period).
    """

    def __init__(self, store: Store, clock: Clock, nodes: Iterable[str] | None = None, *,
                 serves: Callable[[dict[str, Any]], bool] | None = None,
                 force_delete: Mapping[str, Any] | None = None) -> None:
        self.store = store
        self.clock = clock
        self._screen = screened(store)  # check what is read (see ``pumice.api.wellformed``)
        self._only = set(nodes) if nodes is not None else None
        self._serves = serves
        self._force_delete = dict(force_delete) if force_delete is not None else None
        self._foreign: set[str] = set()  # nodes ``serves`` refused: their pods are someone else's
        self._nodes: dict[str, dict[str, Any]] = {}
        self._failed: set[str] = set()
        self._running: dict[str, _Running] = {}
        self._by_node: dict[str, set[str]] = {}
        #: node -> GPU index -> amount held by the pods running there (per-GPU accounting, as a device plugin).
        self._gpu_used: dict[str, dict[int, float]] = {}
        self._waiting: dict[str, dict[str, dict[str, Any]]] = {}  # node not (yet) known -> its bound pods
        #: whole CPUs of Guaranteed pods on nodes that declare NUMA, and their Numatopologies
        self.cpus = CpuManager(store)
        self._timers: list[tuple[float, int, str, str]] = []
        self._seq = itertools.count()
        self._stamp: tuple[float, str] = (math.nan, "")  # the last (time, RFC 3339 text) written
        #: what the running pods really use, per node (their ``pumice.io/usage`` profiles): its node metrics
        self.usage = UsageMeter()
        #: Volcano's agent on the nodes labelled ``volcano.sh/oversubscription=true`` (``pumice.nodes.colocation``)
        self.colocation = ColocationAgent(self)
        self._node_watch = self._watch("nodes")
        self._pod_watch = self._watch("pods")

    # --- public API -----------------------------------------------------------------------------------------

    @property
    def nodes(self) -> list[str]:
        """The simulated nodes seen so far."""
        return sorted(self._nodes)

    def running(self, node: str | None = None) -> list[str]:
        """``namespace/name`` of the pods running (on ``node``)."""
        if node is not None:
            return sorted(self._by_node.get(node, ()))
        return sorted(self._running)

    def node(self, name: str) -> dict[str, Any] | None:
        """The simulated node ``name`` as last seen (read-only), or None."""
        return self._nodes.get(name)

    def running_pods(self, node: str) -> list[dict[str, Any]]:
        """The pods running on ``node`` as last seen (read-only), in name order."""
        return [self._running[k].pod for k in sorted(self._by_node.get(node, ()))]

    def gpu_used(self, node: str) -> dict[int, float]:
        """GPU index -> what the pods running on ``node`` hold of it (milli, or MiB for gpushare)."""
        return dict(self._gpu_used.get(node, {}))

    def _gpu_claim(self, node: str, pod: dict[str, Any]) -> tuple[tuple[tuple[int, float], ...], str]:
        """(GPU index, amount) the pod's ``volcano.sh/gpu-index`` claims, and why they cannot be had ("" if
        they can): a GPU the node does not have, or more than it holds."""
        req = gpu_request(pod)
        ids = assigned_ids(pod)
        if req is None or ids is None or req.family not in (MILLI, GPUSHARE):
            return (), ""
        _, gpus = node_gpus(self._nodes[node])
        claim = tuple((g, gpus[g][0] if req.whole else req.share) for g in ids if 0 <= g < len(gpus))
        if len(claim) != len(ids):
            return (), f"GPU index {ids} is not on node {node}"
        used = self._gpu_used.get(node, {})
        for g, amount in claim:
            if used.get(g, 0.0) + amount > gpus[g][0] + 1e-6:
                return (), (f"GPU {g} of node {node} holds {used.get(g, 0.0):g} of {gpus[g][0]:g}: "
                            f"no room for {amount:g} more")
        return claim, ""

    def sync(self) -> bool:
        """Apply store events and fire due timers until quiet; True if anything was written."""
        if self._idle():
            return self.colocation.sync()
        wrote = False
        while True:
            acted = False
            try:
                events = self._node_watch.drain()
            except Gone:
                events = self._relist("nodes")
            for ev in events:
                seen = _readable(ev) if self._screen else ev
                if seen is not None:
                    acted |= self._on_node(seen)
            try:
                events = self._pod_watch.drain()
            except Gone:
                events = self._relist("pods")
            for ev in events:
                seen = _readable(ev) if self._screen else ev
                if seen is not None:
                    acted |= self._on_pod(seen)
            timers = self._timers
            if timers and timers[0][0] <= self.clock.now():
                acted |= self._fire_due()
            if not acted:
                published = self.cpus.flush()  # both run: neither may be skipped by the other's answer
                synced = self.colocation.sync()
                return published or synced or wrote
            wrote = True

    def _idle(self) -> bool:
        """Nothing to do: no queued watch event (as far as the watches tell) and no timer due."""
        nodes, pods = self._node_watch, self._pod_watch
        if not isinstance(nodes, Watcher) or not isinstance(pods, Watcher) or nodes.pending or pods.pending:
            return False
        return not self._timers or self._timers[0][0] > self.clock.now()

    def next_wakeup(self) -> float | None:
        """The virtual time of the next pod completion, or ``None``."""
        timers = self._timers
        agent = self.colocation.next_wakeup()
        while timers:
            t, _, key, uid = timers[0]
            run = self._running.get(key)
            if run is not None and run.uid == uid and run.end == t:
                return t if agent is None else min(t, agent)
            heapq.heappop(timers)
        return agent

    def drain(self, node: str) -> int:
        """``kubectl drain``: mark the node unschedulable and evict its pods; returns how many were evicted."""
        self.sync()
        with contextlib.suppress(StoreError):
            self.store.patch("nodes", None, node, {"spec": {"unschedulable": True}})
        evicted = 0
        for key in sorted(self._by_node.get(node, set()) | set(self._waiting.get(node, {}))):
            ns, name = key.split("/", 1)
            with contextlib.suppress(StoreError):
                self.store.delete("pods", ns, name)
                evicted += 1
        self.sync()
        return evicted

    def fail(self, node: str) -> int:
        """The node dies: Ready turns False and its pods fail; returns how many pods failed."""
        self.sync()
        self._failed.add(node)
        ts = rfc3339(self.clock.now())
        if node in self._nodes:
            with contextlib.suppress(StoreError):
                self.store.patch("nodes", None, node, node_ready_patch(self._nodes[node], False, ts),
                                 subresource="status")
        failed = 0
        for key in sorted(self._by_node.get(node, set())):
            run = self._running.get(key)
            if run is not None:
                failed += self._kill(key, run.pod, ts)
        self.sync()
        return failed

    def recover(self, node: str) -> None:
        """Bring a failed or drained node back: Ready and schedulable."""
        self._failed.discard(node)
        ts = rfc3339(self.clock.now())
        with contextlib.suppress(StoreError):
            self.store.patch("nodes", None, node, {"spec": {"unschedulable": None}})
            current = self.store.get("nodes", None, node)
            self.store.patch("nodes", None, node, node_ready_patch(current, True, ts), subresource="status")
        self.sync()

    def node_metrics(self, now: float) -> dict[str, NodeMetrics]:
        """A ``MetricsSource``: each simulated node's usage averaged over the meter's window."""
        return self.usage.node_metrics(now, self._nodes)

    def close(self) -> None:
        self._node_watch.close()
        self._pod_watch.close()

    def _timestamp(self, now: float) -> str:
        """``rfc3339(now)``, made once per instant."""
        if self._stamp[0] != now:
            self._stamp = (now, rfc3339(now))
        return self._stamp[1]

    # --- watches --------------------------------------------------------------------------------------------

    def _watch(self, resource: str) -> Watch:
        return self.store.watch(resource)  # synthetic ADDED for everything present, then live events

    def _relist(self, resource: str) -> list[WatchEvent]:
        """The watch fell behind the store's history: start over from a full list."""
        (self._node_watch if resource == "nodes" else self._pod_watch).close()
        items, rv = self.store.list(resource)
        new = self.store.watch(resource, resource_version=rv)
        if resource == "nodes":
            self._node_watch = new
        else:
            self._pod_watch = new
            present = {_key(p) for p in items}
            for key in [k for k in self._running if k not in present]:
                self._forget(key)
        return [WatchEvent("MODIFIED", obj) for obj in items]

    # --- nodes ----------------------------------------------------------------------------------------------

    def _on_node(self, ev: WatchEvent) -> bool:
        node = ev.object
        name = str((node.get("metadata") or {}).get("name"))
        if self._only is not None and name not in self._only:
            return False
        if self._serves is not None and ev.type != "DELETED" and not self._serves(node):
            self._foreign.add(name)
            if self._nodes.pop(name, None) is not None:  # no longer ours: its pods are left as they are
                for key in sorted(self._by_node.get(name, set())):
                    self._forget(key)
                self.cpus.forget_node(name)
            return False
        self._foreign.discard(name)
        self.colocation.node(name, None if ev.type == "DELETED" else node)
        if ev.type == "DELETED":
            self._nodes.pop(name, None)
            self.cpus.node_changed(name, None)
            ts = rfc3339(self.clock.now())
            acted = False
            for key in sorted(self._by_node.get(name, set())):
                run = self._running.get(key)
                if run is not None:
                    acted |= bool(self._kill(key, run.pod, ts, reason="NodeLost"))
            return acted
        self._nodes[name] = node
        self.cpus.node_changed(name, node)
        acted = False
        if name not in self._failed and _ready_condition(node) is None:
            with contextlib.suppress(StoreError):
                self.store.patch("nodes", None, name, node_ready_patch(node, True, rfc3339(self.clock.now())),
                                 subresource="status", copy=False, owned=True)
                acted = True
        for pod in self._waiting.pop(name, {}).values():
            acted |= self._on_pod(WatchEvent("MODIFIED", pod))
        return acted

    # --- pods -----------------------------------------------------------------------------------------------

    def _on_pod(self, ev: WatchEvent) -> bool:
        pod = ev.object
        key = _key(pod)
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if ev.type == "DELETED" or meta.get("deletionTimestamp") or phase in _DONE:
            self._forget(key)
            if (self._force_delete is not None and ev.type != "DELETED" and meta.get("deletionTimestamp")
                    and node in self._nodes):
                with contextlib.suppress(StoreError):
                    self.store.delete("pods", *key.split("/", 1), **self._force_delete)
            if node and node in self._waiting:
                self._waiting[node].pop(key, None)
            return False
        if not node:
            return False
        uid = str(meta.get("uid") or key)
        run = self._running.get(key)
        if run is not None and run.uid == uid:
            run.pod = pod
            return False
        if node not in self._nodes:
            if node in self._foreign:
                return False
            if self._only is None or node in self._only:
                self._waiting.setdefault(node, {})[key] = pod
            return False
        now = self.clock.now()
        ts = self._timestamp(now)
        if node in self._failed:
            return bool(self._kill(key, pod, ts))
        claim, refused = self._gpu_claim(node, pod)
        if phase == "Running":  # started before this kubelet looked: keep its clock
            start = _since(pod, now)
            self.cpus.admit(node, key, pod, running=True)
        elif refused:  # the device plugin's admission refuses it, as a kubelet does
            return bool(self._kill(key, pod, ts, reason="UnexpectedAdmissionError", message=refused))
        else:
            reason, message = self.cpus.admit(node, key, pod)
            if reason:  # the CPU / topology manager's admission refuses it
                return bool(self._kill(key, pod, ts, reason=reason, message=message))
            start = now
            ns, name = key.split("/", 1)
            try:
                self.store.patch("pods", ns, name, pod_running_patch(pod, ts), subresource="status", copy=False,
                                 owned=True)
            except StoreError:
                self.cpus.release(node, key)
                return False
        try:
            duration = pod_duration(pod)
        except ValueError as err:
            log.warning("pod %s: %s; it runs until deleted", key, err)
            duration = None
        end = None if duration is None else start + duration
        self._running[key] = _Running(uid, node, pod, end, claim)
        self.usage.start(key, node, pod, start, now)
        self._by_node.setdefault(node, set()).add(key)
        self.colocation.touch(node)
        if claim:
            used = self._gpu_used.setdefault(node, {})
            for g, amount in claim:
                used[g] = used.get(g, 0.0) + amount
        if end is not None:
            heapq.heappush(self._timers, (end, next(self._seq), key, uid))
        return True

    def _fire_due(self) -> bool:
        now = self.clock.now()
        timers = self._timers
        fired = False
        while timers and timers[0][0] <= now:
            t, _, key, uid = heapq.heappop(timers)
            run = self._running.get(key)
            if run is None or run.uid != uid or run.end != t:
                continue  # stale: deleted or restarted meanwhile
            pod = run.pod
            self._forget(key)
            with contextlib.suppress(StoreError):
                patch = pod_terminated_patch(pod, self._timestamp(now), exit_code(pod))
                ns, name = key.split("/", 1)
                self.store.patch("pods", ns, name, patch, subresource="status", copy=False, owned=True)
            fired = True
        return fired

    def _kill(self, key: str, pod: dict[str, Any], ts: str, reason: str = "NodeFailure",
              message: str = "the node running this pod failed") -> int:
        self._forget(key)
        ns, name = key.split("/", 1)
        with contextlib.suppress(StoreError):
            self.store.patch("pods", ns, name, pod_failed_patch(pod, ts, reason, message), subresource="status")
            return 1
        return 0

    def _forget(self, key: str) -> None:
        run = self._running.pop(key, None)
        if run is not None:
            self.usage.stop(key, self.clock.now())
            self.cpus.release(run.node, key)
            pods = self._by_node.get(run.node)
            if pods is not None:
                pods.discard(key)
            self.colocation.touch(run.node)
            used = self._gpu_used.get(run.node)
            for g, amount in run.gpus:
                if used is not None:
                    used[g] -= amount


def _since(pod: dict[str, Any], now: float) -> float:
    text = str((pod.get("status") or {}).get("startTime") or "")
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return now
