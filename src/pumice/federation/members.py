"""Members: one connection per ``Cluster`` object, the member's state kept current by watching it.

A ``Member`` watches its cluster's nodes, pods and HyperNodes (into a ``MemberCapacity``) and the Jobs the
federation placed there (label ``federation.pumice.io/managed``). Every ``probePeriod`` it renews the fence
lease in the member (a real write, so it is also the health probe): success is contact, failure the start of
an unreachable spell. Any store error while watching disconnects it; the next probe reconnects and relists,
so what changed meanwhile (a job deleted by the member's fence agent, say) arrives as ordinary deltas.

How a member is reached is a ``Connector``: the kubeconfig of the ``Cluster`` (a file, or a Secret on the host)
through the Kubernetes store, or, in the simulator and in tests, a store handed over in-process.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pumice.clock import Clock, to_datetime
from pumice.controllers.mirror import Delta, Mirror, obj_key
from pumice.store import AlreadyExists, NotFound, Store, StoreError

from . import names
from .capacity import MemberCapacity
from .fence import LEASES, lease_body
from .summary import resource_summary
from .view import MemberView, prices_of

__all__ = ["Connection", "Connector", "Member", "StaticConnector"]

log = logging.getLogger("pumice.federation")
Obj = dict[str, Any]
_FINISHED_PODS = ("Succeeded", "Failed")


@dataclass
class Connection:
    """A member's store and how to let go of it (``close`` does nothing for a borrowed in-process store)."""

    store: Store
    version: str = ""
    close: Callable[[], None] = lambda: None


class Connector(Protocol):
    def __call__(self, name: str, cluster: Obj, host: Store) -> Connection:
        """Connect to the member ``cluster`` names; ``StoreError`` (or ``OSError``) when it cannot."""
        ...


class StaticConnector:
    """Members reached in-process: name -> store (the simulator, tests, embedded members)."""

    def __init__(self, stores: Mapping[str, Store] | None = None, version: str = "pumice (in-process)") -> None:
        self.stores: dict[str, Store] = dict(stores or {})
        self.version = version

    def __call__(self, name: str, cluster: Obj, host: Store) -> Connection:
        store = self.stores.get(name)
        if store is None:
            raise NotFound(f"no in-process store for member {name!r}")
        return Connection(store, self.version)


def rfc3339_micro(seconds: float) -> str:
    """A ``metav1.MicroTime`` (the Lease's ``renewTime``): RFC 3339 with microseconds."""
    return to_datetime(seconds).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Member:
    """One member cluster as the federation knows it (see the module docstring)."""

    def __init__(self, name: str, cluster: Obj, *, connector: Connector, host: Store, clock: Clock,
                 gpu_model_label: str, holder: str, lease_duration: float, probe_period: float) -> None:
        self.name = name
        self.probe_period = probe_period
        self.connector = connector
        self.host = host
        self.clock = clock
        self.gpu_model_label = gpu_model_label
        self.holder = holder
        self.lease_duration = lease_duration
        self.cluster: Obj = {}
        self.capacity = MemberCapacity(gpu_model_label)
        self.view = MemberView(name, {}, self.capacity)
        self.connection: Connection | None = None
        self._mirrors: dict[str, Mirror] = {}
        #: the Jobs the federation placed here, as the member has them
        self.jobs: dict[tuple[str, str], Obj] = {}
        #: unfinished pods per (namespace, volcano.sh/job-name)
        self.live_pods: Counter[tuple[str, str]] = Counter()
        self._pod_job: dict[tuple[str, str], tuple[str, str]] = {}
        #: clock time of the last successful contact (None: none yet in this process)
        self.last_ok: float | None = None
        #: since when it answers (this spell)
        self.ready_since: float | None = None
        self.unreachable_since: float | None = None
        self.error = ""
        #: the member runs a fence agent that acknowledged the lease this process keeps active
        self.fenced = False
        self.deleted = False
        self.next_probe = 0.0
        #: the renewals of about the last lease duration: the agent's acknowledgement must name one of them
        self._renewals: deque[str] = deque(maxlen=int(lease_duration / probe_period) + 3)
        self._summary: tuple[MemberCapacity, int, Obj] | None = None
        #: what propagation has created in the member (namespaces, queues) on the current connection
        self.ensured: set[Any] = set()
        self.update_cluster(cluster)

    # --- the Cluster object ------------------------------------------------------------------------------
    def update_cluster(self, cluster: Obj) -> None:
        self.cluster = cluster
        meta = cluster.get("metadata") or {}
        spec = cluster.get("spec") or {}
        self.view.labels = dict(meta.get("labels") or {})
        self.view.taints = [dict(t) for t in spec.get("taints") or []]
        self.view.prices = prices_of(spec.get("cost"))
        self.cordoned = bool(spec.get("unschedulable"))
        self._refresh_ready()

    @property
    def reachable(self) -> bool:
        return self.connection is not None and self.unreachable_since is None

    def _refresh_ready(self) -> None:
        if self.deleted:
            self.view.ready, self.view.not_ready = False, "the Cluster is being removed"
        elif not self.reachable:
            self.view.ready, self.view.not_ready = False, f"unreachable: {self.error or 'not connected yet'}"
        elif self.cordoned:
            self.view.ready, self.view.not_ready = False, "cordoned (spec.unschedulable)"
        else:
            self.view.ready, self.view.not_ready = True, ""

    # --- connection --------------------------------------------------------------------------------------
    def _connect(self) -> None:
        conn = self.connector(self.name, self.cluster, self.host)
        try:
            capacity = MemberCapacity(self.gpu_model_label)
            mirrors = {
                names.NODES: Mirror(conn.store, names.NODES),
                names.PODS: Mirror(conn.store, names.PODS),
                names.HYPERNODES: Mirror(conn.store, names.HYPERNODES),
                names.JOBS: Mirror(conn.store, names.JOBS, label_selector=f"{names.MANAGED_LABEL}=true"),
            }
        except BaseException:
            conn.close()
            raise
        self.connection = conn
        self._mirrors = mirrors
        self.ensured = set()  # what propagation created here (namespaces, queues), known on this connection
        self.capacity = capacity
        self.view.capacity = capacity
        self.view._free = self.view._hn_room = None
        self.live_pods.clear()
        self._pod_job.clear()

    def disconnect(self, error: str) -> None:
        if self.unreachable_since is None:
            self.unreachable_since = self.clock.now()
            log.warning("member %s unreachable: %s", self.name, error)
        self.error = error
        for mirror in self._mirrors.values():
            with contextlib.suppress(Exception):
                mirror.close()
        self._mirrors = {}
        if self.connection is not None:
            with contextlib.suppress(Exception):
                self.connection.close()
        self.connection = None
        self._refresh_ready()

    def probe(self) -> bool:
        """Renew the fence lease (connecting first if needed); True on contact."""
        now = self.clock.now()
        self.next_probe = now + self.probe_period
        try:
            if self.connection is None:
                self._connect()
            assert self.connection is not None
            lease = self._renew(self.connection.store, self.holder)
        except (StoreError, OSError) as err:
            self.disconnect(str(getattr(err, "message", err)))
            return False
        ack = ((lease.get("metadata") or {}).get("annotations") or {}).get(names.FENCE_ACK)
        self.fenced = ack is not None and ack in self._renewals  # the agent saw one of our last renewals
        if self.unreachable_since is not None or self.last_ok is None:
            self.ready_since = now
        self.last_ok = now
        if self.unreachable_since is not None:
            log.info("member %s reachable again", self.name)
        self.unreachable_since = None
        self.error = ""
        self._refresh_ready()
        return True

    def _renew(self, store: Store, holder: str) -> Obj:
        now = rfc3339_micro(self.clock.now())
        body = lease_body(holder, now, self.lease_duration)
        self._renewals.append(now)
        try:
            return store.patch(LEASES, names.FENCE_NAMESPACE, names.FENCE_NAME, {"spec": body["spec"]})
        except NotFound:
            with contextlib.suppress(AlreadyExists):
                store.create(names.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": names.FENCE_NAMESPACE}})
            return store.create(LEASES, body)

    def release(self) -> None:
        """On a clean stop: mark the lease released, so the member's fence agent lets its jobs run on."""
        if self.connection is not None:
            with contextlib.suppress(StoreError, OSError):
                self._renew(self.connection.store, "")

    def close(self) -> None:
        for mirror in self._mirrors.values():
            with contextlib.suppress(Exception):
                mirror.close()
        self._mirrors = {}
        if self.connection is not None:
            with contextlib.suppress(Exception):
                self.connection.close()
        self.connection = None

    # --- watching ----------------------------------------------------------------------------------------
    def sync(self) -> list[Delta]:
        """Fold the member's changes into its capacity; the changed federated Jobs (empty when unreachable)."""
        if self.connection is None or not self._mirrors:
            return []
        try:
            if any(m.watch.closed for m in self._mirrors.values()):
                raise StoreError("the watch of the member was closed")
            cap = self.capacity
            for d in self._mirrors[names.NODES].drain():
                cap.on_node(d.old, d.new)
            for d in self._mirrors[names.HYPERNODES].drain():
                cap.on_hypernode(d.old, d.new)
            for d in self._mirrors[names.PODS].drain():
                cap.on_pod(d.old, d.new)
                self._count_pod(d)
            cap.refresh()
            deltas = self._mirrors[names.JOBS].drain()
        except (StoreError, OSError) as err:
            self.disconnect(str(getattr(err, "message", err)))
            return []
        before = self.jobs
        for d in deltas:
            if d.new is None:
                before.pop(d.key, None)
            else:
                before[d.key] = d.new
        return deltas

    def _count_pod(self, d: Delta) -> None:
        key = d.key
        old_job = self._pod_job.pop(key, None)
        if old_job is not None:
            self.live_pods[old_job] -= 1
            if self.live_pods[old_job] <= 0:
                del self.live_pods[old_job]
        pod = d.new
        if pod is None or (pod.get("status") or {}).get("phase") in _FINISHED_PODS:
            return
        labels = (pod.get("metadata") or {}).get("labels") or {}
        job = labels.get("volcano.sh/job-name")
        if job:
            jk = (key[0], str(job))
            self._pod_job[key] = jk
            self.live_pods[jk] += 1

    def pending(self) -> bool:
        return any(m.pending() for m in self._mirrors.values())

    def summary(self) -> Obj:
        """``status.resourceSummary`` (recomputed only when the capacity moved)."""
        cached = self._summary
        if cached is None or cached[0] is not self.capacity or cached[1] != self.capacity.version:
            cached = self._summary = (self.capacity, self.capacity.version, resource_summary(self.capacity))
        return cached[2]

    def store(self) -> Store:
        if self.connection is None:
            raise StoreError(f"member {self.name} is not connected")
        return self.connection.store

    def job(self, namespace: str, name: str) -> Obj | None:
        return self.jobs.get((namespace, name))

    def gone(self, namespace: str, name: str) -> bool:
        """The job and all its pods are gone from the member, as last seen (reachable members only)."""
        return self.reachable and (namespace, name) not in self.jobs and not self.live_pods.get((namespace, name))

    def record(self, obj: Obj) -> None:
        """Note a Job the federation just wrote to the member."""
        self.jobs[obj_key(obj)] = obj
        mirror = self._mirrors.get(names.JOBS)
        if mirror is not None:
            mirror.put(obj)

    def forget(self, deleted: Obj) -> None:
        self.jobs.pop(obj_key(deleted), None)
        mirror = self._mirrors.get(names.JOBS)
        if mirror is not None:
            mirror.forget(deleted)
