"""PodGroups for plain pods (``pkg/controllers/podgroup``).

A pod with ``schedulerName: volcano`` and no ``scheduling.k8s.io/group-name`` annotation gets a
PodGroup ``podgroup-<owner uid or pod uid>`` (a gang of ``scheduling.volcano.sh/group-min-member``,
default 1) and the annotation pointing at it, so the scheduler can place it like any job.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pumice.api.quantity import format_quantity
from pumice.clock import Clock
from pumice.store import AlreadyExists, NotFound, Store

from .job_build import pod_requests
from .mirror import Delta, Mirror
from .names import GROUP_MIN_MEMBER, GROUP_NAME, PODGROUPS, PODS, QUEUE_NAME_POD, annotations_of, meta, name_of, uid_of

__all__ = ["SCHEDULER_NAMES", "PodGroupController", "podgroup_for_pod"]

Obj = dict[str, Any]
SCHEDULER_NAMES = frozenset({"volcano"})
_TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
_TOPOLOGY_TIER = "volcano.sh/network-topology-highest-tier"


def _owner(pod: Obj) -> Obj | None:
    refs = meta(pod).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def _min_member(pod: Obj) -> int:
    text = annotations_of(pod).get(GROUP_MIN_MEMBER, "")
    return int(text) if text.isdigit() and int(text) > 0 else 1


def podgroup_for_pod(pod: Obj) -> Obj:
    """The PodGroup Volcano creates for a plain pod (its controller owner's, or the pod's own)."""
    owner = _owner(pod)
    group_uid = str(owner.get("uid")) if owner else uid_of(pod)
    owner_ref = owner or {"apiVersion": "v1", "kind": "Pod", "name": name_of(pod), "uid": uid_of(pod),
                          "controller": True}
    members = _min_member(pod)
    requests = pod_requests(pod.get("spec") or {})
    spec: Obj = {"minMember": members}
    queue = annotations_of(pod).get(QUEUE_NAME_POD)
    if queue:
        spec["queue"] = queue
    if (pod.get("spec") or {}).get("priorityClassName"):
        spec["priorityClassName"] = pod["spec"]["priorityClassName"]
    if requests:
        spec["minResources"] = {k: format_quantity(v * members, milli=True) for k, v in sorted(requests.items()) if v}
    mode = annotations_of(pod).get(_TOPOLOGY_MODE)
    if mode:
        topology: Obj = {"mode": mode}
        tier = annotations_of(pod).get(_TOPOLOGY_TIER, "")
        if tier.isdigit():
            topology["highestTierAllowed"] = int(tier)
        spec["networkTopology"] = topology
    inherited = {k: v for k, v in annotations_of(pod).items() if k.startswith("volcano.sh/")}
    pg_meta: Obj = {"name": f"podgroup-{group_uid}", "namespace": meta(pod).get("namespace") or "default",
                    "ownerReferences": [owner_ref]}
    if inherited:
        pg_meta["annotations"] = inherited
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": pg_meta, "spec": spec,
            "status": {"phase": "Pending"}}


class PodGroupController:
    """Gives plain Volcano pods a PodGroup; deletes a pod's own PodGroup when the pod goes."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.pods = Mirror(store, PODS)
        self._backlog: list[Delta] = [Delta(k, None, p) for k, p in sorted(self.pods.objects.items())]
        self.pods.drain()

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        """Whether ``sync`` has anything to do (see ``ControllerManager.sync``)."""
        return bool(self._backlog) or self.pods.pending()

    def sync(self) -> bool:
        deltas, self._backlog = [*self._backlog, *self.pods.drain()], []
        wrote = False
        for d in deltas:
            wrote |= self._deleted(d.old) if d.new is None else self._seen(d.new)
        return wrote

    def _seen(self, pod: Obj) -> bool:
        spec = pod.get("spec") or {}
        if spec.get("schedulerName") not in SCHEDULER_NAMES or GROUP_NAME in annotations_of(pod):
            return False
        if meta(pod).get("deletionTimestamp"):
            return False
        pg = podgroup_for_pod(pod)
        ns, pg_name = pg["metadata"]["namespace"], pg["metadata"]["name"]
        with contextlib.suppress(AlreadyExists):
            self.store.create(PODGROUPS, pg, copy=False)
        try:
            updated = self.store.patch(PODS, ns, name_of(pod), {"metadata": {"annotations": {GROUP_NAME: pg_name}}},
                                       copy=False)
        except NotFound:
            return True
        self.pods.put(updated)
        return True

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
