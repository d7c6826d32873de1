"""``Snapshot``: one read of what a page aggregates, with the indexes the pages share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pumice.api.resources import HYPERNODES, JOBFLOWS, JOBS, PODGROUPS, QUEUES
from pumice.store import StoreError

from .objects import Obj, group_of, key_of, meta_of, name_of, namespace_of, occupies, owner, spec_of
from .resources import add, pod_requests

__all__ = ["EVENTS", "NODES", "PODS", "RESOURCES", "Snapshot", "Source"]

PODS = "pods"
NODES = "nodes"
EVENTS = "events"
#: Every resource the dashboard reads.
RESOURCES = (NODES, PODS, JOBS, PODGROUPS, QUEUES, HYPERNODES, EVENTS, JOBFLOWS)


class Source(Protocol):
    """What the pages read: a ``pumice.store.Store`` or a ``StoreMirror`` of one."""

    @property
    def resource_version(self) -> str: ...

    def list(self, resource: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], str]: ...


def list_or_nothing(store: Source, resource: str, namespace: str | None = None) -> list[Obj]:
    """The objects of a resource (none when the store does not have that resource type)."""
    try:
        items, _ = store.list(resource, namespace)
    except StoreError:
        return []
    return items


@dataclass
class Snapshot:
    """One consistent-enough read of everything a page aggregates, with the indexes it needs."""

    store: Source
    resource_version: str = "0"
    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    jobs: list[Obj] = field(default_factory=list)
    podgroups: list[Obj] = field(default_factory=list)
    queues: list[Obj] = field(default_factory=list)
    hypernodes: list[Obj] = field(default_factory=list)

    @classmethod
    def take(cls, store: Source, *, resources: Iterable[str] | None = None) -> Snapshot:
        wanted = set(resources) if resources is not None else {NODES, PODS, JOBS, PODGROUPS, QUEUES, HYPERNODES}
        snap = cls(store=store, resource_version=store.resource_version)
        for attr, resource in (("nodes", NODES), ("pods", PODS), ("jobs", JOBS), ("podgroups", PODGROUPS),
                               ("queues", QUEUES), ("hypernodes", HYPERNODES)):
            if resource in wanted:
                setattr(snap, attr, list_or_nothing(store, resource))
        return snap

    def pods_by_group(self) -> dict[str, list[Obj]]:
        """``namespace/podgroup`` -> its pods."""
        out: dict[str, list[Obj]] = {}
        for pod in self.pods:
            group = group_of(pod)
            if group:
                out.setdefault(f"{namespace_of(pod)}/{group}", []).append(pod)
        return out

    def podgroup_of_job(self) -> dict[str, Obj]:
        """VolcanoJob key -> its PodGroup (owner reference, else the ``<job>-<uid>`` name)."""
        by_uid = {meta_of(j).get("uid"): key_of(j) for j in self.jobs}
        names = {f"{namespace_of(j)}/{name_of(j)}-{meta_of(j).get('uid')}": key_of(j) for j in self.jobs}
        out: dict[str, Obj] = {}
        for pg in self.podgroups:
            ref = owner(pg, "Job")
            job = by_uid.get(ref.get("uid")) if ref else None
            job = job or names.get(key_of(pg))
            if job:
                out[job] = pg
        return out

    def used_by_node(self) -> dict[str, dict[str, float]]:
        """Node -> the requests of the pods occupying it."""
        out: dict[str, dict[str, float]] = {}
        for pod in self.pods:
            if occupies(pod):
                add(out.setdefault(str(spec_of(pod)["nodeName"]), {}), pod_requests(pod))
        return out
