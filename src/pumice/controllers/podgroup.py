"""PodGroups for plain pods and for the pods of other controllers (``pkg/controllers/podgroup``).

A pod with ``schedulerName: volcano`` and no ``scheduling.k8s.io/group-name`` annotation gets a PodGroup
``podgroup-<uid of its controller, or of the pod>`` and the annotation pointing at it, so the scheduler can
place it like any job. As Volcano builds it (``buildPodGroupFromPod``): ``minMember`` from the owner's
(ReplicaSet, StatefulSet, batch Job) ``scheduling.volcano.sh/group-min-member`` annotation (default 1; a
Deployment's annotations reach its ReplicaSets), ``minResources`` the pod's requests times ``minMember``, the
owner's ``volcano.sh/`` annotations inherited, the pod's ``scheduling.volcano.sh/queue-name`` as queue, its
preemptable, cooldown, revocable-zone and disruption-budget annotations, its priority class, and a network
topology from ``volcano.sh/network-topology-mode``/``-highest-tier``. A ReplicaSet or StatefulSet scaled to
zero loses its PodGroup; one scaled up or changed gets it made or brought up to date from a new pod.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from pumice.api.quantity import format_quantity
from pumice.api.resources import BATCH_JOBS, REPLICASETS, STATEFULSETS
from pumice.clock import Clock
from pumice.store import AlreadyExists, NotFound, Store, StoreError

from .dormant import Dormant
from .job_build import pod_requests
from .mirror import Delta, Mirror
from .names import (
    GROUP_MIN_MEMBER,
    GROUP_NAME,
    PODGROUPS,
    PODS,
    QUEUE_NAME_POD,
    annotations_of,
    labels,
    meta,
    name_of,
    uid_of,
)

__all__ = ["SCHEDULER_NAMES", "PodGroupController", "podgroup_for_pod"]

Obj = dict[str, Any]
SCHEDULER_NAMES = frozenset({"volcano"})
log = logging.getLogger("pumice.controllers")
_TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
_TOPOLOGY_TIER = "volcano.sh/network-topology-highest-tier"
_INHERITED_PREFIX = "volcano.sh/"
_FROM_POD = ("volcano.sh/preemptable", "volcano.sh/cooldown-time", "volcano.sh/revocable-zone")
_LABELS_FROM_POD = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")
_JDB = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
#: Owner kinds whose annotations a PodGroup inherits (DaemonSets are not served here).
_OWNER_RESOURCES = {"ReplicaSet": REPLICASETS, "StatefulSet": STATEFULSETS, "Job": BATCH_JOBS}
_REVISION_LABEL = "controller-revision-hash"


def _controller(pod: Obj) -> Obj | None:
    refs = meta(pod).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def _min_member(owner_annotations: dict[str, str]) -> int:
    """``getMinMemberFromUpperRes``: the owner's annotation if it is a number >= 0, else 1."""
    text = owner_annotations.get(GROUP_MIN_MEMBER)
    if text is None:
        return 1
    try:
        value = int(text)
    except ValueError:
        return 1
    return value if value >= 0 else 1


def _network_topology(pod: Obj) -> Obj | None:
    notes = annotations_of(pod)
    if _TOPOLOGY_MODE not in notes and _TOPOLOGY_TIER not in notes:
        return None
    mode = notes.get(_TOPOLOGY_MODE, "").lower()
    topology: Obj = {"mode": mode if mode in ("hard", "soft") else "hard"}
    tier = notes.get(_TOPOLOGY_TIER, "")
    with contextlib.suppress(ValueError):
        topology["highestTierAllowed"] = int(tier)
    return topology


def podgroup_for_pod(pod: Obj, owner_annotations: dict[str, str] | None = None) -> Obj:
    """The PodGroup Volcano creates for a pod (its controller owner's, or the pod's own); ``owner_annotations``
    are those of the pod's owners (ReplicaSet, StatefulSet, batch Job)."""
    owner_annotations = owner_annotations or {}
    owner = _controller(pod)
    group_uid = str(owner.get("uid")) if owner else uid_of(pod)
    refs = meta(pod).get("ownerReferences") if owner else [
        {"apiVersion": "v1", "kind": "Pod", "name": name_of(pod), "uid": uid_of(pod), "controller": True,
         "blockOwnerDeletion": True}]
    members = _min_member(owner_annotations)
    requests = pod_requests(pod.get("spec") or {})
    spec: Obj = {"minMember": members}
    queue = annotations_of(pod).get(QUEUE_NAME_POD)
    if queue:
        spec["queue"] = queue
    if (pod.get("spec") or {}).get("priorityClassName"):
        spec["priorityClassName"] = pod["spec"]["priorityClassName"]
    if requests:
        spec["minResources"] = {k: format_quantity(v * members, milli=True) for k, v in sorted(requests.items()) if v}
    topology = _network_topology(pod)
    if topology is not None:
        spec["networkTopology"] = topology
    notes = {k: v for k, v in owner_annotations.items() if k.startswith(_INHERITED_PREFIX)}
    pod_notes = annotations_of(pod)
    notes |= {k: pod_notes[k] for k in _FROM_POD if k in pod_notes}
    jdb = next((k for k in _JDB if k in pod_notes), None)
    if jdb is not None:
        notes[jdb] = pod_notes[jdb]
    pg_labels = {k: labels(pod)[k] for k in _LABELS_FROM_POD if k in labels(pod)}
    pg_meta: Obj = {"name": f"podgroup-{group_uid}", "namespace": meta(pod).get("namespace") or "default",
                    "ownerReferences": [dict(r) for r in refs or []]}
    if notes:
        pg_meta["annotations"] = notes
    if pg_labels:
        pg_meta["labels"] = pg_labels
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": pg_meta, "spec": spec,
            "status": {"phase": "Pending"}}


class PodGroupController:
    """Gives Volcano pods without a group a PodGroup; follows ReplicaSets and StatefulSets as Volcano does;
    deletes a pod's own PodGroup when the pod goes."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.pods = Mirror(store, PODS)
        self._ro = {"copy": False}  # write results go to the mirror, which only reads them
        self._backlog: list[Delta] = [Delta(k, None, p) for k, p in sorted(self.pods.objects.items())]
        self.pods.drain()
        # ReplicaSets and StatefulSets are followed once one exists (most simulations have none)
        self.owners = Dormant(store, clock, (REPLICASETS, STATEFULSETS), lambda: (_OwnerFollower(self),))

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        """Whether ``sync`` has anything to do (see ``ControllerManager.sync``)."""
        return bool(self._backlog) or self.pods.pending() or self.owners.pending()

    def sync(self) -> bool:
        deltas, self._backlog = [*self._backlog, *self.pods.drain()], []
        wrote = False
        for d in deltas:
            wrote |= self._deleted(d.old) if d.new is None else self._seen(d.new)
        if self.owners.pending():
            wrote |= self.owners.sync()
        return wrote

    def _owner_annotations(self, pod: Obj) -> dict[str, str]:
        """``getAnnotationsFromUpperRes``: the annotations of the pod's owners (the first owner's win)."""
        out: dict[str, str] = {}
        namespace = meta(pod).get("namespace") or "default"
        for ref in meta(pod).get("ownerReferences") or []:
            resource = _OWNER_RESOURCES.get(str(ref.get("kind") or ""))
            if resource is None or not ref.get("name"):
                continue
            try:
                owner = self.store.get(resource, namespace, str(ref["name"]), copy=False)
            except StoreError:
                continue
            for key, value in (meta(owner).get("annotations") or {}).items():
                out.setdefault(key, value)
        return out

    def _seen(self, pod: Obj) -> bool:
        spec = pod.get("spec") or {}
        if spec.get("schedulerName") not in SCHEDULER_NAMES or GROUP_NAME in annotations_of(pod):
            return False
        if meta(pod).get("deletionTimestamp"):
            return False
        pg = podgroup_for_pod(pod, self._owner_annotations(pod))
        try:
            self.store.create(PODGROUPS, pg, copy=False)
        except AlreadyExists:
            pass
        except StoreError as err:  # refused (say, its queue is not open): this pod waits, the others go on
            log.warning("no PodGroup for pod %s/%s: %s", meta(pod).get("namespace"), name_of(pod), err)
            return False
        return self._annotate(pod, pg["metadata"]["name"])

    def _annotate(self, pod: Obj, pg_name: str) -> bool:
        try:
            updated = self.store.patch(PODS, meta(pod).get("namespace") or "default", name_of(pod),
                                       {"metadata": {"annotations": {GROUP_NAME: pg_name}}}, copy=False)
        except NotFound:
            return True
        self.pods.put(updated)
        return True

    def owner_changed(self, resource: str, owner: Obj) -> bool:
        """``addReplicaSet``/``addStatefulSet``: no replicas, no PodGroup; else make or update it from a pod of the
        owner's current template that has no group yet."""
        spec = owner.get("spec") or {}
        namespace = meta(owner).get("namespace") or "default"
        if int(spec.get("replicas", 1) or 0) == 0:
            try:
                self.store.delete(PODGROUPS, namespace, f"podgroup-{uid_of(owner)}", copy=False)
            except NotFound:
                return False
            return True
        wanted = dict((spec.get("selector") or {}).get("matchLabels") or {})
        if resource == STATEFULSETS:
            wanted[_REVISION_LABEL] = str((owner.get("status") or {}).get("updateRevision") or "")
        pod = next((p for (ns, _), p in sorted(self.pods.objects.items())
                    if ns == namespace and wanted.items() <= (meta(p).get("labels") or {}).items()), None)
        if pod is None or (pod.get("spec") or {}).get("schedulerName") not in SCHEDULER_NAMES:
            return False
        if GROUP_NAME in annotations_of(pod) or meta(pod).get("deletionTimestamp"):
            return False
        pg = podgroup_for_pod(pod, self._owner_annotations(pod))
        pg_name = pg["metadata"]["name"]
        wrote = False
        try:
            current = self.store.get(PODGROUPS, namespace, pg_name, copy=False)
        except NotFound:
            with contextlib.suppress(AlreadyExists):
                self.store.create(PODGROUPS, pg, copy=False)
                wrote = True
        else:
            changes = {key: pg[key] if key == "spec" else pg["metadata"].get(key)
                       for key in ("spec", "labels", "annotations")
                       if (current.get(key) if key == "spec" else meta(current).get(key))
                       != (pg[key] if key == "spec" else pg["metadata"].get(key))}
            if changes:
                body: Obj = {"metadata": {k: v for k, v in changes.items() if k != "spec"}}
                if "spec" in changes:
                    body["spec"] = changes["spec"]
                with contextlib.suppress(NotFound):
                    self.store.update(PODGROUPS, _replaced(current, body), copy=False)
                    wrote = True
        return self._annotate(pod, pg_name) or wrote

    def _deleted(self, pod: Obj | None) -> bool:
        if pod is None:
            return False
        group = annotations_of(pod).get(GROUP_NAME, "")
        if group != f"podgroup-{uid_of(pod)}":
            return False  # a job's or an owner's group: not ours to remove
        try:
            self.store.delete(PODGROUPS, meta(pod).get("namespace") or "default", group, copy=False)
        except NotFound:
            return False
        return True

    def close(self) -> None:
        self.pods.close()
        self.owners.close()


class _OwnerFollower:
    """The ReplicaSet and StatefulSet handlers of Volcano's PodGroup controller (``addReplicaSet``...)."""

    def __init__(self, groups: PodGroupController) -> None:
        self.groups = groups
        self.sets = {REPLICASETS: Mirror(groups.store, REPLICASETS), STATEFULSETS: Mirror(groups.store, STATEFULSETS)}
        self._backlog: set[tuple[str, tuple[str, str]]] = set()
        for resource, mirror in self.sets.items():
            self._backlog |= {(resource, key) for key in mirror.objects}
            mirror.drain()

    def pending(self) -> bool:
        return bool(self._backlog) or any(m.pending() for m in self.sets.values())

    def next_wakeup(self) -> float | None:
        return None

    def sync(self) -> bool:
        changed, self._backlog = self._backlog, set()
        for resource, mirror in self.sets.items():
            changed |= {(resource, d.key) for d in mirror.drain() if d.new is not None and _matters(d)}
        wrote = False
        for resource, key in sorted(changed):  # each owner as it is now, not every state it went through
            owner = self.sets[resource].get(*key)
            if owner is not None:
                wrote |= self.groups.owner_changed(resource, owner)
        return wrote

    def close(self) -> None:
        for mirror in self.sets.values():
            mirror.close()


def _matters(d: Delta) -> bool:
    """Whether an owner's change can change its PodGroup: new, a spec or annotation change, a new revision (not
    the status writes that follow every pod's progress)."""
    old, new = d.old, d.new
    if old is None or new is None:
        return True
    return (old.get("spec") != new.get("spec") or meta(old).get("annotations") != meta(new).get("annotations")
            or (old.get("status") or {}).get("updateRevision") != (new.get("status") or {}).get("updateRevision"))


def _replaced(current: Obj, body: Obj) -> Obj:
    """``current`` with the spec, labels and annotations of ``body`` in place of its own (an Update, as Volcano's)."""
    out_meta = {k: v for k, v in meta(current).items() if k != "resourceVersion"}
    for key in ("labels", "annotations"):
        if key in body["metadata"]:
            if body["metadata"][key] is None:
                out_meta.pop(key, None)
            else:
                out_meta[key] = body["metadata"][key]
    out = {**current, "metadata": out_meta}
    if "spec" in body:
        out["spec"] = body["spec"]
    return out
