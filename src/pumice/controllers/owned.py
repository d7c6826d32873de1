"""What the workload controllers share: one watch of pods indexed by controlling owner, and pod helpers.

Kubernetes' ReplicaSet, StatefulSet and Job controllers each find their pods through the pods' controller
``ownerReference``; here one ``Mirror`` of pods serves them all (a pod event costs one watch, not one per
controller), and each controller learns which of its owners (by uid) saw a pod change.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
from typing import Any

from pumice.clock import Clock
from pumice.store import NotFound, Store

from .mirror import Mirror
from .names import PODGROUPS, PODS, meta, uid_of

__all__ = [
    "OwnedPods",
    "controller_of",
    "hash_text",
    "is_active",
    "is_available",
    "is_ready",
    "owner_reference",
    "pod_from_template",
    "seconds_of",
]

Obj = dict[str, Any]
Key = tuple[str, str]
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' rand.SafeEncodeString alphabet


def controller_of(obj: Obj) -> Obj | None:
    """The ``ownerReference`` with ``controller: true``, if any."""
    return next((r for r in meta(obj).get("ownerReferences") or [] if r.get("controller")), None)


def owner_reference(owner: Obj) -> Obj:
    """A controller reference to ``owner`` (as ``metav1.NewControllerRef``)."""
    m = meta(owner)
    return {"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"), "name": m.get("name"),
            "uid": m.get("uid"), "controller": True, "blockOwnerDeletion": True}


def hash_text(value: Any, length: int = 10) -> str:
    """A short stable hash of a JSON value in Kubernetes' safe alphabet (as a pod-template-hash looks)."""
    digest = int.from_bytes(hashlib.sha256(repr(_canonical(value)).encode()).digest()[:8], "big")
    out = ""
    while len(out) < length:
        digest, rest = divmod(digest, len(_SAFE))
        out += _SAFE[rest]
    return out


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_canonical(v) for v in value)
    return value


def pod_from_template(template: Obj, owner: Obj, namespace: str, *, name: str | None = None,
                      generate_name: str | None = None, labels: dict[str, str] | None = None,
                      annotations: dict[str, str] | None = None) -> Obj:
    """A pod of ``owner`` built from its pod template (a fresh object: nothing shared with the template)."""
    tmeta = template.get("metadata") or {}
    pod_meta: Obj = {"namespace": namespace}
    if name:
        pod_meta["name"] = name
    else:
        pod_meta["generateName"] = generate_name
    all_labels = {**(tmeta.get("labels") or {}), **(labels or {})}
    all_annotations = {**(tmeta.get("annotations") or {}), **(annotations or {})}
    if all_labels:
        pod_meta["labels"] = all_labels
    if all_annotations:
        pod_meta["annotations"] = all_annotations
    pod_meta["ownerReferences"] = [owner_reference(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


def is_active(pod: Obj) -> bool:
    """Not terminated (``Succeeded``/``Failed``) and not being deleted: ``controller.FilterActivePods``."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def _ready_since(pod: Obj) -> str | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("lastTransitionTime") or "") if cond.get("status") == "True" else None
    return None


def is_ready(pod: Obj) -> bool:
    """Running with its ``Ready`` condition true."""
    return (pod.get("status") or {}).get("phase") == "Running" and _ready_since(pod) is not None


def seconds_of(stamp: str | None) -> float | None:
    """An RFC 3339 time as seconds since the epoch."""
    if not stamp:
        return None
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least ``min_ready_seconds`` (``podutil.IsPodAvailable``)."""
    if not is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = seconds_of(_ready_since(pod))
    return since is None or since + min_ready_seconds <= now


def available_at(pod: Obj, min_ready_seconds: int) -> float | None:
    """When a ready pod becomes available (for a controller's next wake-up)."""
    since = seconds_of(_ready_since(pod)) if is_ready(pod) else None
    return None if since is None else since + min_ready_seconds


class OwnedPods:
    """Pods by the uid of their controller; ``dirty(kind)`` is the set of owner uids of that kind whose pods
    changed since the owner's controller last emptied it."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.ro = {"copy": False}
        self.mirror = Mirror(store, PODS)
        self.by_owner: dict[str, dict[Key, Obj]] = {}
        self.by_namespace: dict[str, dict[Key, Obj]] = {}
        #: namespaces whose pods changed since the quota controller last emptied it
        self.changed_namespaces: set[str] = set()
        self._dirty: dict[str, set[str]] = {}
        for key, pod in self.mirror.objects.items():
            self._index(key, None, pod)
        self.mirror.drain()

    def dirty(self, kind: str) -> set[str]:
        return self._dirty.setdefault(kind, set())

    def pending(self) -> bool:
        return self.mirror.pending()

    def refresh(self) -> None:
        """Take in the pod events since the last call."""
        for d in self.mirror.drain():
            self._index(d.key, d.old, d.new)

    def of(self, uid: str) -> dict[Key, Obj]:
        """The pods controlled by the owner ``uid`` (read-only)."""
        return self.by_owner.get(uid, {})

    def _index(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        in_namespace = self.by_namespace.setdefault(key[0], {})
        if new is None:
            in_namespace.pop(key, None)
        else:
            in_namespace[key] = new
        self.changed_namespaces.add(key[0])
        for pod, present in ((old, False), (new, True)):
            ref = None if pod is None else controller_of(pod)
            if ref is None:
                continue
            uid = str(ref.get("uid") or "")
            owned = self.by_owner.setdefault(uid, {})
            if present:
                owned[key] = pod  # type: ignore[assignment]
            else:
                owned.pop(key, None)
                if not owned:
                    del self.by_owner[uid]
            self.dirty(str(ref.get("kind") or "")).add(uid)

    def created(self, pod: Obj) -> None:
        """Record a pod this process just wrote (the store's answer)."""
        key = (meta(pod).get("namespace") or "", meta(pod).get("name") or "")
        old = self.mirror.get(*key)
        self.mirror.put(pod)
        self._index(key, old, pod)

    def deleted(self, pod: Obj) -> None:
        """Record a pod this process just deleted (the store's answer)."""
        key = (meta(pod).get("namespace") or "", meta(pod).get("name") or "")
        old = self.mirror.get(*key)
        if meta(pod).get("deletionTimestamp") and meta(pod).get("finalizers"):
            self.mirror.put(pod)
            self._index(key, old, pod)
            return
        self.mirror.forget(pod)
        self._index(key, old, None)

    def delete_dependents(self, owner: Obj) -> bool:
        """Delete what the garbage collector would once ``owner`` is gone (background cascading deletion): its
        pods, and the PodGroup Volcano made for them (``podgroup-<owner uid>``, owned by the same owner)."""
        uid = uid_of(owner)
        namespace = meta(owner).get("namespace") or "default"
        wrote = False
        for pod in list(self.of(uid).values()):
            with contextlib.suppress(NotFound):
                self.deleted(self.store.delete(PODS, namespace, str(meta(pod).get("name")), copy=False))
                wrote = True
        with contextlib.suppress(NotFound):
            self.store.delete(PODGROUPS, namespace, f"podgroup-{uid}", copy=False)
            wrote = True
        return wrote
