"""The Deployment controller of kube-controller-manager (embedded clusters only): ReplicaSets per template.

The ReplicaSet of the current template is ``<deployment>-<pod-template-hash>`` (the hash labels its selector,
template and pods); a template seen before brings its old ReplicaSet back (a rollback). ``RollingUpdate``
scales the new ReplicaSet up to ``replicas + maxSurge`` pods in all and the old ones down while at least
``replicas - maxUnavailable`` pods stay available (``maxSurge`` rounds up, ``maxUnavailable`` down, 25% each
by default; both zero is refused); ``Recreate`` scales the old ones to zero first and starts the new one once
their pods are gone. Old ReplicaSets beyond ``revisionHistoryLimit`` are deleted; ``paused`` stops a rollout
(scaling goes on). The Deployment's annotations reach its ReplicaSets, so Volcano's PodGroup controller sees
``scheduling.volcano.sh/group-min-member`` there, as on a real cluster.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from pumice.api.resources import DEPLOYMENTS, REPLICASETS
from pumice.clock import Clock
from pumice.store import AlreadyExists, NotFound, Store

from .mirror import Mirror
from .names import meta, name_of, uid_of
from .owned import controller_of, hash_text, owner_reference

__all__ = ["HASH_LABEL", "REVISION", "DeploymentController", "resolve_fenceposts"]

Obj = dict[str, Any]
Key = tuple[str, str]
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
#: Deployment annotations not copied to its ReplicaSets (``skipCopyAnnotation``).
_NOT_COPIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration", REVISION,
                         "deployment.kubernetes.io/revision-history", DESIRED, MAX_REPLICAS})


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    percent = int(str(value).rstrip("%") or 0)
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def resolve_fenceposts(deployment: Obj) -> tuple[int, int]:
    """``(maxSurge, maxUnavailable)`` as pod counts (``deploymentutil.ResolveFenceposts``)."""
    spec = deployment.get("spec") or {}
    replicas = int(spec.get("replicas", 1) or 0)
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    surge = _scaled(rolling.get("maxSurge", "25%"), replicas, True)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _template_key(template: Obj) -> Obj:
    """A template without its pod-template-hash label (``EqualIgnoreHash``)."""
    tmeta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (tmeta.get("labels") or {}).items() if k != HASH_LABEL}
    if labels:
        tmeta["labels"] = labels
    else:
        tmeta.pop("labels", None)
    return {**template, "metadata": tmeta} if tmeta else {k: v for k, v in template.items() if k != "metadata"}


def _replicas(rs: Obj) -> int:
    return int((rs.get("spec") or {}).get("replicas", 0) or 0)


def _status(rs: Obj, field: str) -> int:
    return int((rs.get("status") or {}).get(field) or 0)


def _revision(rs: Obj) -> int:
    text = (meta(rs).get("annotations") or {}).get(REVISION, "0")
    return int(text) if str(text).isdigit() else 0


class DeploymentController:
    """Rolls Deployments out through ReplicaSets (the ReplicaSet controller makes the pods)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._ro = {"copy": False}
        self.deployments = Mirror(store, DEPLOYMENTS)
        self.sets = Mirror(store, REPLICASETS)
        self._dirty: set[Key] = set(self.deployments.objects)
        self.deployments.drain()
        self.sets.drain()

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        return bool(self._dirty) or self.deployments.pending() or self.sets.pending()

    def sync(self) -> bool:
        wrote = False
        for d in self.deployments.drain():
            self._dirty.add(d.key)
            if d.new is None and d.old is not None:  # gone: its ReplicaSets go too (and with them their pods)
                for rs in self._owned(d.old):
                    with contextlib.suppress(NotFound):
                        self.sets.forget(self.store.delete(REPLICASETS, d.key[0], name_of(rs), copy=False))
                        wrote = True
        for d in self.sets.drain():
            for state in (d.old, d.new):
                ref = None if state is None else controller_of(state)
                if ref is not None and ref.get("kind") == "Deployment":
                    self._dirty.add((d.key[0], str(ref.get("name"))))
        for key in sorted(self._dirty):
            deployment = self.deployments.get(*key)
            if deployment is not None and not meta(deployment).get("deletionTimestamp"):
                wrote |= self._reconcile(key, deployment)
        self._dirty.clear()
        return wrote

    # --- one deployment -------------------------------------------------------------------------------------

    def _owned(self, deployment: Obj) -> list[Obj]:
        uid = uid_of(deployment)
        ns = meta(deployment).get("namespace") or "default"
        return [rs for (rs_ns, _), rs in self.sets.objects.items()
                if rs_ns == ns and (controller_of(rs) or {}).get("uid") == uid]

    def _reconcile(self, key: Key, deployment: Obj) -> bool:
        spec = deployment.get("spec") or {}
        owned = self._owned(deployment)
        template = spec.get("template") or {}
        wanted = _template_key(template)
        new = next((rs for rs in owned if _template_key((rs.get("spec") or {}).get("template") or {}) == wanted),
                   None)
        old = sorted((rs for rs in owned if rs is not new), key=lambda rs: meta(rs).get("creationTimestamp") or "")
        replicas = int(spec.get("replicas", 1) or 0)
        wrote = False
        if spec.get("paused"):
            if new is not None and not any(_replicas(rs) for rs in old):
                wrote |= self._scale(new, replicas, deployment)
            return self._sync_status(key, deployment, new, old) or wrote
        if new is None:
            new, created = self._new_set(key, deployment, template, old)
            wrote |= created
            if new is None:
                return wrote
        else:
            wrote |= self._annotate(new, deployment, old)
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            wrote |= self._recreate(deployment, new, old, replicas)
        else:
            wrote |= self._rolling(deployment, new, old, replicas)
        wrote |= self._cleanup(deployment, old)
        return self._sync_status(key, deployment, new, old) or wrote

    def _new_set(self, key: Key, deployment: Obj, template: Obj, old: list[Obj]) -> tuple[Obj | None, bool]:
        spec = deployment.get("spec") or {}
        collisions = int((deployment.get("status") or {}).get("collisionCount") or 0)
        pod_hash = hash_text([template, collisions])
        tmeta = dict(template.get("metadata") or {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: pod_hash}
        selector = dict(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_hash}
        replicas = int(spec.get("replicas", 1) or 0)
        surge = resolve_fenceposts(deployment)[0]
        total = sum(_replicas(rs) for rs in old)
        strategy = (spec.get("strategy") or {}).get("type")
        if strategy == "Recreate" or not total:
            start = 0 if strategy == "Recreate" and total else replicas
        else:
            start = max(0, min(replicas, replicas + surge - total))
        rs = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{key[1]}-{pod_hash}", "namespace": key[0],
                         "labels": dict(tmeta["labels"]),
                         "annotations": self._annotations(deployment, old, replicas, surge),
                         "ownerReferences": [owner_reference(deployment)]},
            "spec": {"replicas": start, "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                     "selector": selector, "template": {**template, "metadata": tmeta}},
        }
        try:
            created = self.store.create(REPLICASETS, rs, copy=False)
        except AlreadyExists:  # a hash collision with a ReplicaSet of another template: count it, try anew
            with contextlib.suppress(NotFound):
                self.store.patch(DEPLOYMENTS, key[0], key[1], {"status": {"collisionCount": collisions + 1}},
                                 subresource="status", copy=False)
            self._dirty.add(key)
            return None, True
        self.sets.put(created)
        return created, True

    def _annotations(self, deployment: Obj, old: list[Obj], replicas: int, surge: int) -> dict[str, str]:
        out = {k: v for k, v in (meta(deployment).get("annotations") or {}).items() if k not in _NOT_COPIED}
        out[REVISION] = str(max((_revision(rs) for rs in old), default=0) + 1)
        out[DESIRED] = str(replicas)
        out[MAX_REPLICAS] = str(replicas + surge)
        return out

    def _annotate(self, new: Obj, deployment: Obj, old: list[Obj]) -> bool:
        """Keep the new ReplicaSet's copied annotations and revision current (a rollback bumps it)."""
        replicas = int((deployment.get("spec") or {}).get("replicas", 1) or 0)
        wanted = self._annotations(deployment, old, replicas, resolve_fenceposts(deployment)[0])
        current = meta(new).get("annotations") or {}
        if _revision(new) > max((_revision(rs) for rs in old), default=0):
            wanted[REVISION] = current.get(REVISION, wanted[REVISION])
        if all(current.get(k) == v for k, v in wanted.items()):
            return False
        return self._patch(new, {"metadata": {"annotations": wanted}})

    def _patch(self, rs: Obj, body: Obj) -> bool:
        try:
            self.sets.put(self.store.patch(REPLICASETS, meta(rs).get("namespace"), name_of(rs), body, copy=False))
        except NotFound:
            return False
        return True

    def _scale(self, rs: Obj, replicas: int, deployment: Obj) -> bool:
        if _replicas(rs) == replicas:
            return False
        surge = resolve_fenceposts(deployment)[0]
        spec_replicas = int((deployment.get("spec") or {}).get("replicas", 1) or 0)
        return self._patch(rs, {"spec": {"replicas": replicas},
                                "metadata": {"annotations": {DESIRED: str(spec_replicas),
                                                             MAX_REPLICAS: str(spec_replicas + surge)}}})

    def _recreate(self, deployment: Obj, new: Obj, old: list[Obj], replicas: int) -> bool:
        wrote = False
        for rs in old:
            wrote |= self._scale(rs, 0, deployment)
        if any(_replicas(rs) or _status(rs, "replicas") for rs in old):
            return wrote  # the old pods must be gone before the new ones start
        return self._scale(new, replicas, deployment) or wrote

    def _rolling(self, deployment: Obj, new: Obj, old: list[Obj], replicas: int) -> bool:
        surge, unavailable = resolve_fenceposts(deployment)
        wrote = False
        active_old = [rs for rs in old if _replicas(rs)]
        if not active_old:
            return self._scale(new, replicas, deployment)
        # scale up the new ReplicaSet within replicas + maxSurge pods in all (``NewRSNewReplicas``)
        total = _replicas(new) + sum(_replicas(rs) for rs in old)
        room = replicas + surge - total
        if room > 0 and _replicas(new) < replicas:
            wanted = _replicas(new) + min(room, replicas - _replicas(new))
            wrote |= self._scale(new, wanted, deployment)
            new = self.sets.get(meta(new).get("namespace") or "", name_of(new)) or new
        elif _replicas(new) > replicas:
            wrote |= self._scale(new, replicas, deployment)
        # scale down the old ones while replicas - maxUnavailable stay available (``reconcileOldReplicaSets``)
        total = _replicas(new) + sum(_replicas(rs) for rs in old)
        min_available = replicas - unavailable
        new_unavailable = _replicas(new) - _status(new, "availableReplicas")
        budget = total - min_available - new_unavailable
        if budget <= 0:
            return wrote
        for rs in active_old:  # unhealthy pods of old sets go first (``cleanupUnhealthyReplicas``)
            unhealthy = _replicas(rs) - _status(rs, "availableReplicas")
            cut = min(budget, max(0, unhealthy))
            if cut:
                wrote |= self._scale(rs, _replicas(rs) - cut, deployment)
                budget -= cut
        available = _status(new, "availableReplicas") + sum(
            min(_status(rs, "availableReplicas"), _replicas(self._fresh(rs))) for rs in old)
        budget = min(budget, available - min_available)
        for rs in active_old:  # oldest first
            rs = self._fresh(rs)
            cut = min(budget, _replicas(rs))
            if cut <= 0:
                continue
            wrote |= self._scale(rs, _replicas(rs) - cut, deployment)
            budget -= cut
        return wrote

    def _fresh(self, rs: Obj) -> Obj:
        return self.sets.get(meta(rs).get("namespace") or "", name_of(rs)) or rs

    def _cleanup(self, deployment: Obj, old: list[Obj]) -> bool:
        limit = int((deployment.get("spec") or {}).get("revisionHistoryLimit", 10))
        idle = [rs for rs in (self._fresh(r) for r in old) if not _replicas(rs) and not _status(rs, "replicas")]
        wrote = False
        for rs in sorted(idle, key=_revision)[: max(0, len(idle) - limit)]:
            with contextlib.suppress(NotFound):
                self.sets.forget(self.store.delete(REPLICASETS, meta(rs).get("namespace"), name_of(rs), copy=False))
                wrote = True
        return wrote

    def _sync_status(self, key: Key, deployment: Obj, new: Obj | None, old: list[Obj]) -> bool:
        spec = deployment.get("spec") or {}
        sets = [self._fresh(rs) for rs in ([new] if new is not None else []) + old]
        sets = [rs for rs in sets if self.sets.get(meta(rs).get("namespace") or "", name_of(rs)) is not None]
        replicas = int(spec.get("replicas", 1) or 0)
        available = sum(_status(rs, "availableReplicas") for rs in sets)
        total = sum(_status(rs, "replicas") for rs in sets)
        updated = _status(self._fresh(new), "replicas") if new is not None else 0
        unavailable_budget = resolve_fenceposts(deployment)[1] if (spec.get("strategy") or {}).get(
            "type") != "Recreate" else 0
        status: Obj = {
            "observedGeneration": meta(deployment).get("generation") or 1,
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": sum(_status(rs, "readyReplicas") for rs in sets),
            "availableReplicas": available,
            "unavailableReplicas": max(replicas - available, 0),
        }
        old_status = deployment.get("status") or {}
        complete = updated == replicas and total == replicas and available == replicas
        conditions = [
            self._condition(old_status, "Available", available >= replicas - unavailable_budget,
                            "MinimumReplicasAvailable" if available >= replicas - unavailable_budget
                            else "MinimumReplicasUnavailable",
                            "Deployment has minimum availability." if available >= replicas - unavailable_budget
                            else "Deployment does not have minimum availability."),
            self._condition(old_status, "Progressing", True,
                            "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
                            f'ReplicaSet "{name_of(new) if new else ""}" '
                            + ("has successfully progressed." if complete else "is progressing.")),
        ]
        status["conditions"] = conditions
        if all(old_status.get(k) == v for k, v in status.items()):
            return False
        revision = str(_revision(new)) if new is not None else None
        wrote = False
        if revision and (meta(deployment).get("annotations") or {}).get(REVISION) != revision:
            with contextlib.suppress(NotFound):
                deployment = self.store.patch(DEPLOYMENTS, key[0], key[1],
                                              {"metadata": {"annotations": {REVISION: revision}}}, copy=False)
                self.deployments.put(deployment)
                wrote = True
        try:
            self.deployments.put(self.store.patch(DEPLOYMENTS, key[0], key[1], {"status": status},
                                                  subresource="status", copy=False))
        except NotFound:
            return wrote
        return True

    def _condition(self, old_status: Obj, kind: str, ok: bool, reason: str, message: str) -> Obj:
        previous = next((c for c in old_status.get("conditions") or [] if c.get("type") == kind), None)
        status = "True" if ok else "False"
        now = self._now()
        if previous is not None and previous.get("status") == status and previous.get("reason") == reason:
            return previous
        since = previous.get("lastTransitionTime") if previous is not None and previous.get("status") == status \
            else now
        return {"type": kind, "status": status, "lastUpdateTime": now, "lastTransitionTime": since,
                "reason": reason, "message": message}

    def _now(self) -> str:
        from pumice.clock import rfc3339

        return rfc3339(self.clock.now())

    def close(self) -> None:
        self.deployments.close()
        self.sets.close()
