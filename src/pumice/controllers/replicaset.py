"""The ReplicaSet controller of kube-controller-manager (embedded clusters only): keep ``replicas`` pods.

Too few active pods (not terminated, not being deleted): create the difference from the template
(``<name>-<random>``); too many: delete the surplus, least valuable first (unscheduled, then pending, then not
ready, then the youngest), as ``controller.ActivePods`` ranks them. Status counts replicas, fully labeled,
ready and available (ready for ``minReadySeconds``) pods. On a real cluster Kubernetes' own controller does
this; Volcano's PodGroup controller then groups the pods under ``podgroup-<replicaset uid>``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pumice.api.resources import REPLICASETS
from pumice.clock import Clock
from pumice.store import NotFound, Store, StoreError

from .mirror import Mirror
from .names import PODS, meta, name_of, uid_of
from .owned import OwnedPods, available_at, is_active, is_available, is_ready, pod_from_template

__all__ = ["ReplicaSetController", "deletion_rank"]

Obj = dict[str, Any]
Key = tuple[str, str]


def deletion_rank(pod: Obj) -> tuple[int, int, int, str]:
    """Sort key of pods to delete first: unassigned, pending, not ready, then newest (``ActivePods``)."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    return (0 if not (pod.get("spec") or {}).get("nodeName") else 1,
            {"Pending": 0, "Unknown": 1}.get(phase, 2),
            1 if is_ready(pod) else 0,
            _negate(str(meta(pod).get("creationTimestamp") or "")))


def _negate(stamp: str) -> str:
    return "".join(chr(0x10FFFF - ord(c)) for c in stamp)  # newest first under an ascending sort


class ReplicaSetController:
    """Scales ReplicaSets' pods; ``pods`` may be shared with the other workload controllers."""

    def __init__(self, store: Store, clock: Clock, pods: OwnedPods | None = None) -> None:
        self.store = store
        self.clock = clock
        self.pods = pods or OwnedPods(store, clock)
        self.sets = Mirror(store, REPLICASETS)
        self._gone: list[Obj] = []
        self._dirty: set[Key] = set(self.sets.objects)
        self._by_uid: dict[str, Key] = {uid_of(rs): k for k, rs in self.sets.objects.items()}
        self.sets.drain()
        self._timers: dict[Key, float] = {}

    def next_wakeup(self) -> float | None:
        return min(self._timers.values(), default=None)

    def pending(self) -> bool:
        if self._dirty or self.sets.pending() or self.pods.pending() or self.pods.dirty("ReplicaSet"):
            return True
        due = self.next_wakeup()
        return due is not None and due <= self.clock.now()

    def sync(self) -> bool:
        for d in self.sets.drain():
            self._dirty.add(d.key)
            if d.new is not None:
                self._by_uid[uid_of(d.new)] = d.key
            elif d.old is not None:
                self._by_uid.pop(uid_of(d.old), None)
                self._gone.append(d.old)
        self.pods.refresh()
        owners = self.pods.dirty("ReplicaSet")
        self._dirty |= {self._by_uid[uid] for uid in owners if uid in self._by_uid}
        owners.clear()
        now = self.clock.now()
        self._dirty |= {k for k, due in self._timers.items() if due <= now}
        wrote = False
        for owner in self._gone:  # background cascading deletion, as Kubernetes' garbage collector
            wrote |= self.pods.delete_dependents(owner)
        self._gone.clear()
        for key in sorted(self._dirty):
            self._timers.pop(key, None)
            rs = self.sets.get(*key)
            if rs is not None and not meta(rs).get("deletionTimestamp"):
                wrote |= self._reconcile(key, rs)
        self._dirty.clear()
        return wrote

    def _reconcile(self, key: Key, rs: Obj) -> bool:
        spec = rs.get("spec") or {}
        owned = list(self.pods.of(uid_of(rs)).values())
        active = [p for p in owned if is_active(p)]
        want = int(spec.get("replicas", 1) or 0)
        wrote = False
        if len(active) < want:
            template = spec.get("template") or {}
            for _ in range(want - len(active)):
                pod = pod_from_template(template, rs, key[0], generate_name=f"{name_of(rs)}-")
                try:
                    created = self.store.create(PODS, pod, copy=False)
                except StoreError:
                    break  # refused (admission): the status says how many there are; the next event retries
                self.pods.created(created)
                active.append(created)
                wrote = True
        elif len(active) > want:
            for pod in sorted(active, key=deletion_rank)[: len(active) - want]:
                with contextlib.suppress(NotFound):
                    self.pods.deleted(self.store.delete(PODS, key[0], name_of(pod), copy=False))
                    active.remove(pod)
                    wrote = True
        return self._status(key, rs, active) or wrote

    def _status(self, key: Key, rs: Obj, active: list[Obj]) -> bool:
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.clock.now()
        wanted = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        status = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(1 for p in active
                                        if wanted.items() <= (meta(p).get("labels") or {}).items()),
            "readyReplicas": sum(1 for p in active if is_ready(p)),
            "availableReplicas": sum(1 for p in active if is_available(p, min_ready, now)),
            "observedGeneration": meta(rs).get("generation") or 1,
        }
        waiting = [t for p in active if not is_available(p, min_ready, now)
                   and (t := available_at(p, min_ready)) is not None]
        if waiting:
            self._timers[key] = min(waiting)
        old = rs.get("status") or {}
        if all(old.get(k) == v for k, v in status.items()):
            return False
        try:
            self.sets.put(self.store.patch(REPLICASETS, key[0], key[1], {"status": status}, subresource="status",
                                           copy=False))
        except NotFound:
            return False
        return True

    def close(self) -> None:
        self.sets.close()
