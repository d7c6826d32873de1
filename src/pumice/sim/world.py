"""A federation in one process on one virtual clock: a host, member clusters, the federation between them.

Used by ``pumice sim`` for scenarios that declare ``clusters``, and by the tests. The host is a store with
Volcano's admission and the host control plane (queues); each member is a whole embedded ``Cluster``
(controllers, scheduler, simulated kubelets, fence agent); the federation reaches each member through a
``Link`` that can be cut (a partition: the member runs on, unreachable) or the member killed (it stops: its
pods are dead from then on, as are its answers).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pumice.clock import VirtualClock, to_datetime
from pumice.controllers.mirror import Mirror
from pumice.federation import names
from pumice.federation.config import FederationConfig
from pumice.federation.demand import pod_request
from pumice.federation.federation import Federation
from pumice.federation.fence import FenceAgent, add_fence_agent
from pumice.federation.host import HostControlPlane
from pumice.federation.members import StaticConnector
from pumice.runtime import Cluster, attach_admission, load_admission, resource_for
from pumice.scheduler import SchedulerConf
from pumice.store import MemoryStore, Store, StoreError, WatchEvent

__all__ = ["FederatedWorld", "Link", "MemberSpec", "PodRun", "RunTracker", "Unreachable"]

Obj = dict[str, Any]


class Unreachable(StoreError):
    """A member the federation cannot reach (a cut link)."""

    code = 503
    reason = "ServiceUnavailable"


class _LinkedWatch:
    """A watch through a ``Link``: fails while the link is cut, as a broken connection does."""

    def __init__(self, link: Link, inner: Any) -> None:
        self._link = link
        self._inner = inner

    @property
    def closed(self) -> bool:
        return self._inner.closed

    @property
    def pending(self) -> int:
        return 1 if self._link.cut else int(getattr(self._inner, "pending", 1))

    def _check(self) -> None:
        if self._link.cut:
            raise Unreachable(f"cluster {self._link.name}: connection lost")

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        self._check()
        return self._inner.next(timeout)

    def drain(self) -> list[WatchEvent]:
        self._check()
        return self._inner.drain()

    async def anext(self, timeout: float | None = None) -> WatchEvent | None:
        self._check()
        return await self._inner.anext(timeout)

    def close(self) -> None:
        self._inner.close()

    def __iter__(self) -> Iterator[WatchEvent]:
        return iter(self._inner)


class Link:
    """A member's store as the federation reaches it: every call fails while ``cut``."""

    def __init__(self, name: str, store: Store) -> None:
        self.name = name
        self.store = store
        self.cut = False

    def _check(self) -> None:
        if self.cut:
            raise Unreachable(f"cluster {self.name}: connection refused")

    @property
    def resource_version(self) -> str:
        self._check()
        return self.store.resource_version

    @property
    def resources(self) -> Any:
        return getattr(self.store, "resources", None)

    def get(self, *args: Any, **kwargs: Any) -> Obj:
        self._check()
        return self.store.get(*args, **kwargs)

    def list(self, *args: Any, **kwargs: Any) -> tuple[list[Obj], str]:
        self._check()
        return self.store.list(*args, **kwargs)

    def create(self, *args: Any, **kwargs: Any) -> Obj:
        self._check()
        return self.store.create(*args, **kwargs)

    def update(self, *args: Any, **kwargs: Any) -> Obj:
        self._check()
        return self.store.update(*args, **kwargs)

    def patch(self, *args: Any, **kwargs: Any) -> Obj:
        self._check()
        return self.store.patch(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Obj:
        self._check()
        return self.store.delete(*args, **kwargs)

    def bind(self, *args: Any, **kwargs: Any) -> Obj:
        self._check()
        return self.store.bind(*args, **kwargs)

    def watch(self, *args: Any, **kwargs: Any) -> _LinkedWatch:
        self._check()
        return _LinkedWatch(self, self.store.watch(*args, **kwargs))

    def bookmark(self) -> None:
        self.store.bookmark()

    def change_marker(self) -> object:
        return self.store.change_marker()

    def close(self) -> None:
        pass


@dataclass
class MemberSpec:
    """One member of a simulated federation."""

    name: str
    nodes: list[Obj] = field(default_factory=list)
    #: other objects the member starts with (HyperNodes, its own Queues, ...)
    objects: list[Obj] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    taints: list[Obj] = field(default_factory=list)
    conf: SchedulerConf | None = None
    #: runs a fence agent (``pumice up`` and ``pumice run`` members do)
    fence: bool = True


def cluster_object(spec: MemberSpec) -> Obj:
    body: Obj = {"kubeconfig": {"file": f"in-process:{spec.name}"}}
    if spec.cost:
        body["cost"] = {k: str(v) for k, v in spec.cost.items()}
    if spec.taints:
        body["taints"] = [dict(t) for t in spec.taints]
    return {"apiVersion": "federation.pumice.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": spec.name, "labels": dict(spec.labels)}, "spec": body}


class FederatedWorld:
    """Host + members + federation on one ``VirtualClock`` (see the module docstring)."""

    def __init__(self, members: Iterable[MemberSpec], config: FederationConfig | None = None, *,
                 period: float = 1.0, seed: int = 0, clock: VirtualClock | None = None) -> None:
        self.clock = clock or VirtualClock()
        clock_ = self.clock
        self.host = MemoryStore(clock=lambda: to_datetime(clock_.now()), admission=load_admission(),
                                rng=random.Random(seed))
        attach_admission(self.host)
        self.host_plane = HostControlPlane(self.host, self.clock)
        self.specs: dict[str, MemberSpec] = {}
        self.clusters: dict[str, Cluster] = {}
        self.fences: dict[str, FenceAgent | None] = {}
        self.links: dict[str, Link] = {}
        self.dead: dict[str, float] = {}
        for i, spec in enumerate(members):
            self._add_member(spec, period, seed + 1 + i)
        self.federation = Federation(self.host, self.clock, config,
                                     connector=StaticConnector(cast(dict[str, Store], self.links)))
        for spec in self.specs.values():
            self.host.create(names.CLUSTERS, cluster_object(spec))
        self.on_step: list[Callable[[], None]] = []

    def _add_member(self, spec: MemberSpec, period: float, seed: int) -> None:
        cluster = Cluster(clock=self.clock, conf=spec.conf, period=period, seed=seed)
        cluster.apply(spec.nodes)
        cluster.apply(spec.objects)
        self.specs[spec.name] = spec
        self.clusters[spec.name] = cluster
        agent = add_fence_agent(cluster.controllers, cluster.store, cluster.clock) if spec.fence else None
        self.fences[spec.name] = agent
        self.links[spec.name] = Link(spec.name, cluster.store)

    # --- the outside world -------------------------------------------------------------------------------
    def apply(self, objects: Iterable[Mapping[str, Any]]) -> list[Obj]:
        """Create (or merge into) objects on the host, as ``kubectl apply`` to the host would."""
        out = []
        for obj in objects:
            info = resource_for(obj, self.host)
            meta = dict(obj.get("metadata") or {})
            ns = (meta.get("namespace") or "default") if info.namespaced else None
            body = dict(obj)
            if ns is not None:
                body["metadata"] = {**meta, "namespace": ns}
            try:
                out.append(self.host.create(info.name, body))
            except StoreError as err:
                if err.reason != "AlreadyExists":
                    raise
                patch = {k: v for k, v in body.items() if k not in ("status", "apiVersion", "kind")}
                patch["metadata"] = {k: v for k, v in meta.items() if k in ("labels", "annotations")}
                out.append(self.host.patch(info.name, ns, str(meta.get("name")), patch))
        return out

    def partition(self, name: str) -> None:
        """The federation loses the member; the member runs on."""
        self.links[name].cut = True

    def heal(self, name: str) -> None:
        self.links[name].cut = False

    def kill(self, name: str) -> None:
        """The member stops for good: unreachable, and nothing in it runs from now on."""
        self.links[name].cut = True
        self.dead[name] = self.clock.now()

    def remove(self, name: str) -> None:
        """The operator deletes the member's Cluster object from the host."""
        self.host.delete(names.CLUSTERS, None, name)

    def alive(self) -> dict[str, Cluster]:
        return {n: c for n, c in self.clusters.items() if n not in self.dead}

    # --- driving -----------------------------------------------------------------------------------------
    def step(self) -> None:
        """Everyone reacts to everyone until nothing moves at this instant."""
        for _ in range(1000):
            moved = self.host_plane.sync()
            moved |= self.federation.sync()
            for cluster in self.alive().values():
                moved |= cluster.step()
            for callback in self.on_step:
                callback()
            if not moved and not self.federation.pending() and not self.host_plane.queues.pending():
                return
        raise RuntimeError("the federation does not settle")

    def next_wakeup(self) -> float | None:
        due = [self.federation.next_wakeup(), self.host_plane.next_wakeup()]
        due += [c.next_wakeup() for c in self.alive().values()]
        found = [d for d in due if d is not None]
        return min(found) if found else None

    def run_until(self, t: float) -> None:
        """Advance the virtual clock to ``t`` (absolute), stepping at every wake-up on the way."""
        while True:
            self.step()
            nxt = self.next_wakeup()
            now = self.clock.now()
            if nxt is None or nxt > t:
                if now < t:
                    self.clock.advance_to(t)
                    self.step()
                return
            self.clock.advance_to(max(nxt, now))
            if nxt <= now:  # a wake-up due now that did not move: nudge time on
                self.clock.advance_to(now + 1e-3)

    def run_for(self, seconds: float) -> None:
        self.run_until(self.clock.now() + seconds)

    def run_idle(self, limit: float = math.inf) -> float:
        end = self.clock.now() + limit if math.isfinite(limit) else math.inf
        while True:
            self.step()
            nxt = self.next_wakeup()
            if nxt is None or nxt > end:
                return self.clock.now()
            self.clock.advance_to(max(nxt, self.clock.now() + 1e-3) if nxt <= self.clock.now() else nxt)

    def close(self) -> None:
        self.federation.close(release=False)
        self.host_plane.close()
        for cluster in self.clusters.values():
            cluster.close()


@dataclass
class PodRun:
    """One pod of a federated job running in a member from ``start`` to ``end`` (None: still running)."""

    member: str
    job: tuple[str, str]
    pod: tuple[str, str]
    start: float
    request: dict[str, float]
    end: float | None = None
    #: the member's Job the pod belongs to, and the host Job's dispatch number it was made for
    copy: str = ""
    dispatch: str = ""


class RunTracker:
    """Which host job runs where and when, read from the members' pods (watched), for reports and checks.

    A pod runs while its phase is Running in a member that is alive; a killed member's pods stop at its death.
    ``overlaps`` lists every instant a host job ran twice at once: pods of two of its dispatches running, or the
    same copy (part) running in two members.
    """

    def __init__(self, world: FederatedWorld) -> None:
        self.world = world
        self.pods: dict[str, Mirror] = {}
        self.jobs: dict[str, Mirror] = {}
        for name, cluster in world.clusters.items():
            self.pods[name] = Mirror(cluster.store, names.PODS)
            self.jobs[name] = Mirror(cluster.store, names.JOBS, label_selector=f"{names.MANAGED_LABEL}=true")
        self.open: dict[tuple[str, tuple[str, str]], PodRun] = {}
        self.runs: list[PodRun] = []
        self.overlaps: list[tuple[float, tuple[str, str], tuple[str, ...]]] = []
        #: (member, uid of a copy) -> (host job, dispatch number)
        self._host_of: dict[tuple[str, str], tuple[tuple[str, str], str]] = {}

    def _host_job(self, member: str, pod: Obj) -> tuple[tuple[str, str], str] | None:
        """(host job, dispatch number) of the member's copy that owns ``pod``."""
        owners = (pod.get("metadata") or {}).get("ownerReferences") or []
        uid = next((str(o.get("uid")) for o in owners if o.get("kind") == "Job"), "")
        return self._host_of.get((member, uid))

    def _on_copy(self, member: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        ann = meta.get("annotations") or {}
        ns, _, name = str(ann.get(names.PART_OF) or "").rpartition("/")
        if name:
            self._host_of[(member, str(meta.get("uid")))] = ((ns, name), str(ann.get(names.DISPATCH) or ""))

    def sync(self) -> None:
        now = self.world.clock.now()
        for member in self.pods:
            dead = member in self.world.dead
            for d in self.jobs[member].drain():
                if d.new is not None:
                    self._on_copy(member, d.new)
            if dead:
                for key, run in list(self.open.items()):
                    if key[0] == member:
                        run.end = self.world.dead[member]
                        del self.open[key]
                continue
            for d in self.pods[member].drain():
                pod = d.new
                key = (member, d.key)
                running = pod is not None and (pod.get("status") or {}).get("phase") == "Running"
                if running and key not in self.open:
                    assert pod is not None
                    labels = (pod.get("metadata") or {}).get("labels") or {}
                    copy = str(labels.get("volcano.sh/job-name") or "")
                    found = self._host_job(member, pod)
                    if found is None:
                        continue
                    run = PodRun(member, found[0], d.key, now, pod_request(pod.get("spec") or {}), copy=copy,
                                 dispatch=found[1])
                    self.open[key] = run
                    self.runs.append(run)
                elif not running and key in self.open:
                    self.open.pop(key).end = now
        dispatches: dict[tuple[str, str], set[str]] = {}
        copies: dict[tuple[tuple[str, str], str], set[str]] = {}
        for (member, _), run in self.open.items():
            dispatches.setdefault(run.job, set()).add(run.dispatch)
            copies.setdefault((run.job, run.copy), set()).add(member)
        for job, seen in dispatches.items():
            if len(seen) > 1:
                self.overlaps.append((now, job, tuple(sorted(seen))))
        for (job, _), members in copies.items():
            if len(members) > 1:
                self.overlaps.append((now, job, tuple(sorted(members))))

    def close(self) -> None:
        for mirror in (*self.pods.values(), *self.jobs.values()):
            mirror.close()
