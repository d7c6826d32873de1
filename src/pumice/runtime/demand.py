"""``Demand``: whether a scheduling cycle has anything to decide, kept current by watch events."""

from __future__ import annotations

from typing import Any

from pumice.api.resources import PODGROUPS
from pumice.store import Gone, Store, WatchEvent

__all__ = ["Demand"]



class Demand:
    """Is there anything for a scheduling cycle to decide? Pending pods or PodGroups, kept by watch events.

    Without demand a cycle would only refresh PodGroup and Queue status; those refreshes are deferred
    to the next cycle with demand (or ``Cluster.flush``), which keeps long traces cheap.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pods: set[tuple[Any, Any]] = set()  # (namespace, name)
        self.groups: set[tuple[Any, Any]] = set()
        self._watches = {r: store.watch(r) for r in ("pods", PODGROUPS)}

    def sync(self) -> None:
        for resource, watch in self._watches.items():
            try:
                events = watch.drain()
            except Gone:  # fell behind: relist
                watch.close()
                items, rv = self.store.list(resource)
                self._watches[resource] = self.store.watch(resource, resource_version=rv)
                (self.pods if resource == "pods" else self.groups).clear()
                events = [WatchEvent("ADDED", o) for o in items]
            if not events:
                continue
            target = self.pods if resource == "pods" else self.groups
            waiting = _pod_waiting if resource == "pods" else _group_waiting
            for ev in events:
                obj = ev.object
                meta = obj.get("metadata") or _EMPTY
                key = (meta.get("namespace"), meta.get("name"))
                if ev.type != "DELETED" and waiting(obj):
                    target.add(key)
                else:
                    target.discard(key)

    def __bool__(self) -> bool:
        self.sync()
        return bool(self.pods or self.groups)

    def close(self) -> None:
        for watch in self._watches.values():
            watch.close()


_EMPTY: dict[str, Any] = {}  # read-only


def _part(obj: dict[str, Any], key: str) -> dict[str, Any]:
    part = obj.get(key)
    return part if type(part) is dict else _EMPTY  # a part of the wrong type (a poisoned object) reads as empty


def _pod_waiting(pod: dict[str, Any]) -> bool:
    return (not _part(pod, "spec").get("nodeName") and not _part(pod, "metadata").get("deletionTimestamp")
            and (_part(pod, "status").get("phase") or "Pending") == "Pending")


def _group_waiting(group: dict[str, Any]) -> bool:
    return (_part(group, "status").get("phase") or "Pending") == "Pending"
