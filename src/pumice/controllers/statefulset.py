"""The StatefulSet controller of kube-controller-manager (embedded clusters only): pods with stable names.

Pods are ``<name>-<ordinal>`` for ordinals ``ordinals.start`` .. ``+replicas-1``, labelled with their name,
their index and the ``controller-revision-hash`` of the template they were made from (the set's
``status.updateRevision``, ``<name>-<hash>``), with ``hostname``/``subdomain`` set from ``serviceName``.
``OrderedReady`` (the default) creates them one at a time in ordinal order, each once the ones before it run
and are ready, and removes surplus ones from the highest ordinal down, one at a time; ``Parallel`` creates and
removes them all at once. A failed pod is deleted and made anew. ``RollingUpdate`` replaces pods of an old
revision from the highest ordinal down to ``partition``, one at a time, each once all others are ready;
``OnDelete`` replaces only what the user deletes. Volume claim templates are kept but no volumes are made.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pumice.api.resources import STATEFULSETS
from pumice.clock import Clock
from pumice.store import AlreadyExists, NotFound, Store, StoreError

from .mirror import Mirror
from .names import PODS, labels, meta, name_of, uid_of
from .owned import OwnedPods, hash_text, is_available, is_ready, pod_from_template

__all__ = ["POD_INDEX_LABEL", "POD_NAME_LABEL", "REVISION_LABEL", "StatefulSetController"]

Obj = dict[str, Any]
Key = tuple[str, str]
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def _ordinal(pod: Obj, set_name: str) -> int | None:
    suffix = name_of(pod)[len(set_name) + 1:]
    return int(suffix) if name_of(pod).startswith(f"{set_name}-") and suffix.isdigit() else None


def _failed(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


class StatefulSetController:
    """Keeps StatefulSets' pods; ``pods`` may be shared with the other workload controllers."""

    def __init__(self, store: Store, clock: Clock, pods: OwnedPods | None = None) -> None:
        self.store = store
        self.clock = clock
        self.pods = pods or OwnedPods(store, clock)
        self.sets = Mirror(store, STATEFULSETS)
        self._gone: list[Obj] = []
        self._dirty: set[Key] = set(self.sets.objects)
        self._by_uid: dict[str, Key] = {uid_of(s): k for k, s in self.sets.objects.items()}
        self.sets.drain()

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        return bool(self._dirty) or self.sets.pending() or self.pods.pending() or bool(self.pods.dirty("StatefulSet"))

    def sync(self) -> bool:
        for d in self.sets.drain():
            self._dirty.add(d.key)
            if d.new is not None:
                self._by_uid[uid_of(d.new)] = d.key
            elif d.old is not None:
                self._by_uid.pop(uid_of(d.old), None)
                self._gone.append(d.old)
        self.pods.refresh()
        owners = self.pods.dirty("StatefulSet")
        self._dirty |= {self._by_uid[uid] for uid in owners if uid in self._by_uid}
        owners.clear()
        wrote = False
        for owner in self._gone:  # background cascading deletion, as Kubernetes' garbage collector
            wrote |= self.pods.delete_dependents(owner)
        self._gone.clear()
        for key in sorted(self._dirty):
            sts = self.sets.get(*key)
            if sts is not None and not meta(sts).get("deletionTimestamp"):
                wrote |= self._reconcile(key, sts)
        self._dirty.clear()
        return wrote

    def revision(self, sts: Obj) -> str:
        """``<name>-<hash of the pod template>``: the revision new pods are made at."""
        return f"{name_of(sts)}-{hash_text((sts.get('spec') or {}).get('template') or {})}"

    def _reconcile(self, key: Key, sts: Obj) -> bool:
        spec = sts.get("spec") or {}
        name = key[1]
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        replicas = int(spec.get("replicas", 1) or 0)
        wanted = range(start, start + replicas)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        update = self.revision(sts)
        pods: dict[int, Obj] = {}
        for owned in self.pods.of(uid_of(sts)).values():
            ordinal = _ordinal(owned, name)
            if ordinal is not None and not meta(owned).get("deletionTimestamp"):
                pods[ordinal] = owned
        wrote = False
        for ordinal in wanted:  # make the missing and replace the failed, in order
            pod = pods.get(ordinal)
            if pod is not None and _failed(pod):
                wrote |= self._delete(key[0], pod)
                pods.pop(ordinal)
                if not parallel:
                    break
                continue
            if pod is None:
                made = self._create(key, sts, ordinal, update)
                wrote |= made is not None
                if made is not None:
                    pods[ordinal] = made
                if not parallel:
                    break
                continue
            if not parallel and not is_ready(pod):
                break  # OrderedReady: the next one waits for this one
        else:
            wrote |= self._condemn(key, pods, wanted, parallel)
            if all(o in pods and is_ready(pods[o]) for o in wanted):
                wrote |= self._roll(key, sts, pods, wanted, update)
        return self._status(key, sts, pods, update) or wrote

    def _create(self, key: Key, sts: Obj, ordinal: int, revision: str) -> Obj | None:
        spec = sts.get("spec") or {}
        pod_name = f"{key[1]}-{ordinal}"
        pod = pod_from_template(spec.get("template") or {}, sts, key[0], name=pod_name,
                                labels={POD_NAME_LABEL: pod_name, POD_INDEX_LABEL: str(ordinal),
                                        REVISION_LABEL: revision})
        pod["spec"]["hostname"] = pod_name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        try:
            created = self.store.create(PODS, pod, copy=False)
        except AlreadyExists:
            return None  # the old incarnation is still going away
        except StoreError:
            return None
        self.pods.created(created)
        return created

    def _delete(self, namespace: str, pod: Obj) -> bool:
        with contextlib.suppress(NotFound):
            self.pods.deleted(self.store.delete(PODS, namespace, name_of(pod), copy=False))
            return True
        return False

    def _condemn(self, key: Key, pods: dict[int, Obj], wanted: range, parallel: bool) -> bool:
        surplus = sorted((o for o in pods if o not in wanted), reverse=True)
        wrote = False
        for ordinal in surplus:
            if not parallel and not all(is_ready(p) for o, p in pods.items() if o != ordinal):
                break
            wrote |= self._delete(key[0], pods.pop(ordinal))
            if not parallel:
                break
        return wrote

    def _roll(self, key: Key, sts: Obj, pods: dict[int, Obj], wanted: range, revision: str) -> bool:
        strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return False
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        for ordinal in sorted(wanted, reverse=True):
            if ordinal < partition:
                break
            pod = pods[ordinal]
            if labels(pod).get(REVISION_LABEL) != revision:
                return self._delete(key[0], pod)  # one at a time: the next once this one is back and ready
        return False

    def _status(self, key: Key, sts: Obj, pods: dict[int, Obj], update: str) -> bool:
        old = sts.get("status") or {}
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.clock.now()
        updated = sum(1 for p in pods.values() if labels(p).get(REVISION_LABEL) == update)
        current = old.get("currentRevision") or update
        if updated == len(pods) == int((sts.get("spec") or {}).get("replicas", 1) or 0):
            current = update
        status = {
            "observedGeneration": meta(sts).get("generation") or 1,
            "replicas": len(pods),
            "readyReplicas": sum(1 for p in pods.values() if is_ready(p)),
            "currentReplicas": sum(1 for p in pods.values() if labels(p).get(REVISION_LABEL) == current),
            "updatedReplicas": updated,
            "availableReplicas": sum(1 for p in pods.values() if is_available(p, min_ready, now)),
            "currentRevision": current,
            "updateRevision": update,
            "collisionCount": int(old.get("collisionCount") or 0),
        }
        if all(old.get(k) == v for k, v in status.items()):
            return False
        try:
            self.sets.put(self.store.patch(STATEFULSETS, key[0], key[1], {"status": status}, subresource="status",
                                           copy=False))
        except NotFound:
            return False
        return True

    def close(self) -> None:
        self.sets.close()
