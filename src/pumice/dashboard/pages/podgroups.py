"""The PodGroups page: every PodGroup with its queue, gang size, phase and pods."""

from __future__ import annotations

from pumice.api.resources import PODGROUPS

from .objects import Obj, created_of, key_of, name_of, namespace_of, owner, pending_reason, spec_of, status_of
from .snapshot import PODS, Snapshot, Source

__all__ = ["podgroups"]


def podgroups(store: Source) -> Obj:
    snap = Snapshot.take(store, resources=(PODS, PODGROUPS))
    by_group = snap.pods_by_group()
    rows = []
    for pg in snap.podgroups:
        st, sp = status_of(pg), spec_of(pg)
        ref = owner(pg, "Job")
        rows.append({
            "namespace": namespace_of(pg), "name": name_of(pg), "queue": sp.get("queue") or "default",
            "minMember": sp.get("minMember", 1), "phase": st.get("phase") or "Pending",
            "running": st.get("running", 0), "succeeded": st.get("succeeded", 0), "failed": st.get("failed", 0),
            "pods": len(by_group.get(key_of(pg), [])), "owner": ref.get("name") if ref else None,
            "created": created_of(pg), "pendingReason": pending_reason(pg),
        })
    rows.sort(key=lambda r: (r["namespace"], r["name"]))
    return {"resourceVersion": snap.resource_version, "items": rows}
