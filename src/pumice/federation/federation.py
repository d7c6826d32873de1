"""``Federation``: the federation as one component over the host's store and its members' stores.

Driven like the controllers: ``sync()`` does everything due now and says whether it wrote; ``next_wakeup()``
says when it must run again. One pass:

1. the host's Clusters, Queues, PriorityClasses and Jobs (watched);
2. members due a probe renew their fence lease (connecting first), the others fold in what they saw: their
   capacity, and the federated Jobs, whose status flows back to the host (``status.py``); copies that belong
   to no current placement are removed;
3. jobs of lost members are taken back (``redispatch.py``);
4. every ``dispatchPeriod``, if anything moved, the dispatch cycle (``dispatcher.py``);
5. Cluster status (health, resource summary) and queue ``status.allocated`` on the host; host-side TTLs.

Everything the federation must remember is on the host (placements as annotations) or in the members
(their copies), so a restarted federation carries on where it stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from pumice.clock import Clock, rfc3339
from pumice.controllers.mirror import Delta, Mirror
from pumice.events import EventRecorder, EventType
from pumice.scheduler.resources import ResourceSpace
from pumice.store import Conflict, NotFound, Store, StoreError

from . import names
from .choice import ClusterChooser
from .config import FederationConfig, default_config
from .demand import JobDemand, timestamp
from .dispatcher import Dispatcher
from .fit import Placement as Fitted
from .fit import spread_gang
from .members import Connector, Member
from .placement import Placement
from .propagate import PropagationError, create_part, delete_part
from .queues import amounts
from .records import JobRecord
from .redispatch import check_members_lost
from .status import FINISHED, host_status, waiting_status
from .summary import quantities

__all__ = ["WAIT_REFRESH", "Federation"]

log = logging.getLogger("pumice.federation")
Obj = dict[str, Any]
#: A waiting job's reason is rewritten at most this often when only its details (numbers) change.
WAIT_REFRESH = 30.0
#: The reasons whose messages carry numbers that move with every pod (the others are rewritten at once).
_NOISY = frozenset({"NoClusterFits", "QueueLimit"})


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Federation:
    """See the module docstring. ``connector`` reaches members (``members.Connector``)."""

    def __init__(self, host: Store, clock: Clock, config: FederationConfig | None = None, *,
                 connector: Connector, holder: str = "pumice-federation", events: bool = True) -> None:
        self.host = host
        self.clock = clock
        self.config = config or default_config()
        self.connector = connector
        self.holder = holder
        self.chooser = ClusterChooser(self.config)
        self.dispatcher = Dispatcher(self)
        self.recorder = EventRecorder(host, "pumice-federation", clock=clock) if events else None
        self.started = clock.now()
        self._ro: dict[str, Any] = {"copy": False}  # results only read (kept by the mirrors)
        self.clusters = Mirror(host, names.CLUSTERS)
        self.queues = Mirror(host, names.QUEUES)
        self.priority_classes = Mirror(host, names.PRIORITYCLASSES)
        self.jobs = Mirror(host, names.JOBS)
        self.members: dict[str, Member] = {}
        self.records: dict[tuple[str, str], JobRecord] = {}
        self._last_cycle = -math.inf
        self._moved = True  # something changed since the last dispatch cycle
        self._seen: tuple[Any, ...] = ()
        self._cluster_status: dict[str, tuple[bool, float]] = {}  # member -> (reachable, when) last written
        self._queues_written = -math.inf
        self._queue_status: dict[str, dict[str, str]] = {}
        self._pc_values: dict[str, int] | None = None

    # --- reading the host --------------------------------------------------------------------------------
    def priorities(self) -> dict[str, int]:
        if self._pc_values is None:
            self._pc_values = {k[1]: int(v.get("value") or 0) for k, v in self.priority_classes.objects.items()}
        return self._pc_values

    def queue_objects(self) -> dict[str, Obj]:
        return {k[1]: v for k, v in self.queues.objects.items()}

    def priority_class_objects(self) -> dict[str, Obj]:
        return {k[1]: v for k, v in self.priority_classes.objects.items()}

    def space(self, records: list[JobRecord], priorities: Mapping[str, int]) -> ResourceSpace:
        names_: set[str] = set()
        for m in self.members.values():
            names_.update(m.capacity.space.names)
        for r in records:
            names_.update(r.demand(priorities).total)
        return ResourceSpace(names_)

    def total(self, space: ResourceSpace) -> np.ndarray:
        """Σ allocatable of the ready members' usable nodes, in ``space``."""
        total = space.zeros()
        for m in self.members.values():
            if not m.view.ready:
                continue
            alloc, _ = m.capacity.totals()
            for name, value in zip(m.capacity.space.names, alloc.tolist(), strict=True):
                i = space.index.get(name)
                if i is not None:
                    total[i] += value
        return total

    def _sync_host(self) -> bool:
        moved = False
        for d in self.clusters.drain():
            moved = True
            self._on_cluster(d)
        if self.queues.drain():
            moved = True
        if self.priority_classes.drain():
            self._pc_values = None
            moved = True
        for d in self.jobs.drain():
            moved = True
            self._on_job(d)
        return moved

    def _on_cluster(self, d: Delta) -> None:
        name = d.key[1]
        member = self.members.get(name)
        if d.new is None:
            if member is not None:
                member.deleted = True
                member._refresh_ready()
            return
        if member is None or member.deleted:
            if member is not None:
                member.close()
            self.members[name] = Member(name, d.new, connector=self.connector, host=self.host, clock=self.clock,
                                        gpu_model_label=self.config.gpu_model_label, holder=self.holder,
                                        lease_duration=self.config.lease_duration,
                                        probe_period=self.config.probe_period)
        else:
            spec_changed = (d.old or {}).get("spec") != d.new.get("spec")
            member.update_cluster(d.new)
            if spec_changed and member.connection is not None:
                member.next_probe = 0.0

    def _on_job(self, d: Delta) -> None:
        if d.new is None:
            record = self.records.pop(d.key, None)
            if record is not None:
                self._withdraw(record)
            return
        record = self.records.get(d.key)
        if record is None:
            record = self.records[d.key] = JobRecord(d.key, d.new)
        record.update(d.new)

    def _withdraw(self, record: JobRecord) -> None:
        """The host's Job is gone: remove its copies (members that do not answer: when they do)."""
        self.release(record)
        for part in record.placement.parts:
            member = self.members.get(part.cluster)
            if member is None or not member.reachable:
                continue
            try:
                deleted = delete_part(member.store(), record.key[0], part.name)
            except StoreError as err:
                member.disconnect(str(err))
                continue
            if deleted is not None:
                member.forget(deleted)

    # --- members -----------------------------------------------------------------------------------------
    def _sync_members(self) -> bool:
        wrote = False
        now = self.clock.now()
        for name, member in list(self.members.items()):
            if member.deleted:
                if not any(p.cluster == name for r in self.records.values() for p in r.placement.parts):
                    member.release()
                    member.close()
                    del self.members[name]
                    self._cluster_status.pop(name, None)
                    continue
            elif member.next_probe <= now:
                member.probe()
            for d in member.sync():
                wrote |= self._on_member_job(member, d)
        return wrote

    def _on_member_job(self, member: Member, d: Delta) -> bool:
        obj = d.new or d.old or {}
        ann = (obj.get("metadata") or {}).get("annotations") or {}
        ns, _, name = str(ann.get(names.PART_OF) or "").rpartition("/")
        record = self.records.get((ns, name))
        if d.new is None:
            return False  # a copy gone: redispatch decides what it means
        current = (record is not None and record.uid == ann.get(names.HOST_UID)
                   and str(record.placement.dispatch) == ann.get(names.DISPATCH)
                   and any(p.cluster == member.name and p.name == d.key[1] for p in record.placement.parts)
                   and not record.placement.moving)
        if not current:
            if record is not None and record.placement.moving:
                return False  # being taken back: redispatch deletes it
            log.info("removing stale copy %s/%s from cluster %s", d.key[0], d.key[1], member.name)
            try:
                deleted = delete_part(member.store(), d.key[0], d.key[1])
            except StoreError as err:
                member.disconnect(str(err))
                return False
            if deleted is not None:
                member.forget(deleted)
            return False
        assert record is not None
        return self._sync_status(record)

    def refresh_status(self, record: JobRecord) -> bool:
        """Show the members' status on the host again (after a waiting reason was shown instead)."""
        record.written = ("", "")
        return self._sync_status(record)

    def _sync_status(self, record: JobRecord) -> bool:
        copies = []
        for part in record.placement.parts:
            member = self.members.get(part.cluster)
            copy = member.job(record.key[0], part.name) if member is not None else None
            if member is None or copy is None:
                return False
            copies.append((member, copy))
        for member, copy in copies:
            status = copy.get("status") or {}
            started = int(status.get("running") or 0) + int(status.get("succeeded") or 0) + int(
                status.get("failed") or 0)
            phase = str((status.get("state") or {}).get("phase") or "")
            placed = phase not in ("", "Pending") or (started and started >= int(status.get("minAvailable") or 1))
            if placed and member.capacity.release(self._reservation_key(record)):
                record.reserved.pop(member.name, None)
        status = host_status([c for _, c in copies])
        if not status.get("state"):
            return False
        if self.set_status(record, status):
            record.written = ("", "")  # the host shows the members' status now, not a waiting reason
            return True
        return False

    # --- writing the host --------------------------------------------------------------------------------
    def set_status(self, record: JobRecord, status: Obj) -> bool:
        if (record.obj.get("status") or {}) == status:
            return False
        ns, name = record.key
        try:
            stored = self.host.patch(names.JOBS, ns, name, [{"op": "add", "path": "/status", "value": status}],
                                     patch_type="json", subresource="status", **self._ro)
        except (NotFound, Conflict):
            return False
        self.jobs.put(stored)
        record.update(stored)
        return True

    def _patch_meta(self, record: JobRecord, labels: Obj, annotations: Obj) -> None:
        ns, name = record.key
        stored = self.host.patch(names.JOBS, ns, name, {"metadata": {"labels": labels, "annotations": annotations}},
                                 **self._ro)
        self.jobs.put(stored)
        record.update(stored)

    def write_placement(self, record: JobRecord, placement: Placement, decision: Obj | None = None) -> None:
        annotations: Obj = {names.PLACEMENT: placement.to_annotation()}
        if decision is not None:
            decision["time"] = rfc3339(self.clock.now())
            annotations[names.DECISION] = json.dumps(decision, separators=(",", ":"))
        self._patch_meta(record, {names.CLUSTER_LABEL: placement.label() or None}, annotations)

    def event(self, record: JobRecord, type: EventType, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(record.obj, type, reason, message)

    def wait(self, record: JobRecord, reason: str, message: str, *, decision: Obj | None = None,
             phase: str = "Pending") -> bool:
        """Say why a job waits (status and, with ``decision``, the explanation); True if written."""
        now = self.clock.now()
        wrote = False
        if decision is not None:  # the explanation follows the verdicts at once (the status may be throttled)
            key = json.dumps([[v.get("cluster"), v.get("kept"), v.get("plugin")] for v in decision["clusters"]])
            if key != record.decision_key:
                record.decision_key = key
                decision["time"] = rfc3339(now)
                with contextlib.suppress(NotFound, Conflict):
                    self._patch_meta(record, {}, {names.DECISION: json.dumps(decision, separators=(",", ":"))})
                    wrote = True
        same_reason = record.written[0] == reason
        if record.written == (reason, message) or (
                same_reason and reason in _NOISY and now - record.written_at < WAIT_REFRESH):
            return wrote
        demand = record.demand(self.priorities())
        status = waiting_status(reason, message, demand.min_available, phase=phase, now=rfc3339(now))
        if not same_reason:
            self.event(record, "Warning" if phase == "Failed" else "Normal", reason, message)
        record.written, record.written_at = (reason, message), now
        old = record.obj.get("status") or {}
        kept = {k: v for k, v in old.items() if k not in status and record.placement.placed}
        return self.set_status(record, {**kept, **status}) or wrote

    def dispatch(self, record: JobRecord, plan: Placement, placements: Mapping[str, Fitted | None], decision: Obj,
                 message: str, *, gang: Mapping[str, int] | None = None) -> None:
        """Place the job: the host's record first, then the members' copies; undone if a member refuses."""
        previous = record.placement
        self.write_placement(record, plan, decision)
        created: list[tuple[Member, str]] = []
        try:
            for part in plan.parts:
                member = self.members[part.cluster]
                try:
                    stored = create_part(member.store(), record.obj, part, plan.dispatch, self.queue_objects(),
                                         self.priority_class_objects(), gang, member.ensured)
                except StoreError as err:
                    member.disconnect(str(err))
                    raise PropagationError(f"cluster {part.cluster}: {err}") from None
                member.record(stored)
                created.append((member, part.name))
        except PropagationError:
            for member, name in created:
                with contextlib.suppress(StoreError):
                    deleted = delete_part(member.store(), record.key[0], name)
                    if deleted is not None:
                        member.forget(deleted)
            self.write_placement(record, previous)
            raise
        now = self.clock.now()
        key = self._reservation_key(record)
        for cluster, fitted in placements.items():
            if fitted is None or not len(fitted.nodes):
                continue
            member = self.members[cluster]
            cautious = self._cautious(member, record, plan, cluster, fitted)
            held = cautious if cautious is not None else fitted
            member.capacity.reserve(key, held.nodes, held.amounts, held.pods)
            record.reserved[cluster] = now
        record.nofit = None
        group = record.demand(self.priorities()).spread_group
        if group:
            for cluster in set(plan.clusters):
                self.members[cluster].view.groups[group] += 1
        self.wait(record, "Dispatched", message)  # and its event

    def _cautious(self, member: Member, record: JobRecord, plan: Placement, cluster: str,
                  fitted: Fitted) -> Fitted | None:
        """The reservation to hold: the gang spread worst-fit (in the chosen HyperNode, if any), see ``spread_gang``."""
        demand = record.demand(self.priorities())
        tasks = next((p.tasks for p in plan.parts if p.cluster == cluster), None)
        if tasks is not None:
            from .split import sub_demand

            demand = sub_demand(demand, [t for t in demand.tasks if t.name in set(tasks)])
        subset = None
        tree = member.capacity.tree
        if fitted.hypernode and tree is not None and fitted.hypernode in tree.infos:
            subset = tree.infos[fitted.hypernode].nodes
        room, pods = member.view.free()
        return spread_gang(member.capacity, demand, room, pods, subset)

    @staticmethod
    def _reservation_key(record: JobRecord) -> str:
        return f"{record.key[0]}/{record.key[1]}"

    def release(self, record: JobRecord) -> None:
        key = self._reservation_key(record)
        for cluster in list(record.reserved):
            member = self.members.get(cluster)
            if member is not None:
                member.capacity.release(key)
        record.reserved.clear()

    # --- status of Clusters and Queues on the host -------------------------------------------------------
    def count_placed(self) -> tuple[Counter[str], dict[str, Counter[str]]]:
        """Unfinished placed jobs per member, and per member and spread group."""
        dispatched: Counter[str] = Counter()
        groups: dict[str, Counter[str]] = {}
        priorities = self.priorities()
        for r in self.records.values():
            if r.terminal or not r.placement.placed:
                continue
            group = r.demand(priorities).spread_group
            for cluster in set(r.placement.clusters):
                dispatched[cluster] += 1
                if group:
                    groups.setdefault(cluster, Counter())[group] += 1
        return dispatched, groups

    def _write_cluster_status(self) -> bool:
        """Each member's Cluster status: at once when its health changes, else once a probe period."""
        now = self.clock.now()
        due = []
        for name, member in self.members.items():
            if member.deleted:
                continue
            last = self._cluster_status.get(name)
            if last is None or last[0] != member.reachable or now - last[1] >= self.config.probe_period:
                due.append((name, member))
        if not due:
            return False
        dispatched, _ = self.count_placed()
        wrote = False
        for name, member in due:
            ready = member.reachable
            condition = {"type": "Ready", "status": "True" if ready else "False",
                         "reason": "ClusterReachable" if ready else "ClusterUnreachable",
                         "message": "the member answers" if ready else (member.error or "not connected yet")}
            since = member.unreachable_since if not ready else member.ready_since
            condition["lastTransitionTime"] = rfc3339(since if since is not None else now)
            if member.last_ok is not None:
                condition["lastHeartbeatTime"] = rfc3339(member.last_ok)
            status: Obj = {"conditions": [condition], "dispatchedJobs": dispatched.get(name, 0)}
            if member.connection is not None and member.connection.version:
                status["kubernetesVersion"] = member.connection.version
            if ready:
                status["resourceSummary"] = member.summary()
            self._cluster_status[name] = (ready, now)
            try:
                stored = self.host.patch(names.CLUSTERS, None, name,
                                         [{"op": "add", "path": "/status", "value": status}], patch_type="json",
                                         subresource="status", **self._ro)
            except (NotFound, Conflict):
                continue
            self.clusters.put(stored)
            wrote = True
        return wrote

    def _write_queue_status(self, force: bool) -> bool:
        """Each host Queue's ``status.allocated`` across the federation (after a cycle, else once a probe period)."""
        now = self.clock.now()
        if not force and now - self._queues_written < self.config.probe_period:
            return False
        self._queues_written = now
        fed_records = [r for r in self.records.values() if not r.terminal and r.placement.placed]
        priorities = self.priorities()
        space = self.space(fed_records, priorities)
        allocated: dict[str, np.ndarray] = {}
        for r in fed_records:
            demand = r.demand(priorities)
            allocated.setdefault(demand.queue, space.zeros())
            allocated[demand.queue] += amounts(space, demand.total)
        wrote = False
        for (_, name) in list(self.queues.objects):
            want = quantities(space, allocated.get(name, space.zeros()))
            if self._queue_status.get(name) == want:
                continue
            have = ((self.queues.objects[("", name)].get("status") or {}).get("allocated")) or {}
            patch = {"status": {"allocated": {**{k: None for k in have if k not in want}, **want}}}
            try:
                stored = self.host.patch(names.QUEUES, None, name, patch, subresource="status", **self._ro)
            except (NotFound, Conflict):
                continue
            self.queues.put(stored)
            self._queue_status[name] = want
            wrote = True
        return wrote

    def _expire(self) -> bool:
        """Delete finished host Jobs past their ``ttlSecondsAfterFinished`` (the host runs no GC of its own)."""
        wrote = False
        now = self.clock.now()
        for record in list(self.records.values()):
            due = self._ttl_due(record)
            if due is not None and due <= now:
                with contextlib.suppress(NotFound):
                    self.host.delete(names.JOBS, record.key[0], record.key[1])
                    wrote = True
        return wrote

    @staticmethod
    def _ttl_due(record: JobRecord) -> float | None:
        ttl = (record.obj.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None or record.phase not in FINISHED:
            return None
        stamp = timestamp(((record.obj.get("status") or {}).get("state") or {}).get("lastTransitionTime"))
        return (stamp or 0.0) + float(ttl)

    # --- driving -----------------------------------------------------------------------------------------
    def _reservations_due(self) -> float | None:
        first = None
        timeout = self.config.reservation_timeout
        for record in self.records.values():
            for since in record.reserved.values():
                due = since + timeout
                first = due if first is None or due < first else first
        return first

    def _expire_reservations(self) -> None:
        now = self.clock.now()
        timeout = self.config.reservation_timeout
        for record in self.records.values():
            for cluster, since in list(record.reserved.items()):
                if now - since >= timeout:
                    member = self.members.get(cluster)
                    if member is not None:
                        member.capacity.release(self._reservation_key(record))
                    del record.reserved[cluster]

    def _signature(self) -> tuple[Any, ...]:
        return tuple((n, m.view.ready, m.capacity.version) for n, m in self.members.items())

    def sync(self) -> bool:
        """Everything due now (see the module docstring); True if anything was written."""
        wrote = False
        self._moved |= self._sync_host()
        if self._sync_members():
            wrote = self._moved = True  # a job's phase moved: its queue's share, its dependants
        self._expire_reservations()
        if check_members_lost(self):
            wrote = self._moved = True
        now = self.clock.now()
        signature = self._signature()
        if signature != self._seen:
            self._seen = signature
            self._moved = True
        cycled = False
        if self._moved and now >= self._last_cycle + self.config.dispatch_period:
            self._moved = False
            self._last_cycle = now
            _, groups = self.count_placed()
            for name, member in self.members.items():
                member.view.groups = groups.get(name, Counter())
            cycled = self.dispatcher.cycle() > 0
            wrote |= cycled
            self._moved |= self._sync_host()
        wrote |= self._write_cluster_status()
        wrote |= self._write_queue_status(cycled)
        wrote |= self._expire()
        if wrote:
            self._moved |= self._sync_host()
        return wrote

    def next_wakeup(self) -> float | None:
        candidates: list[float] = []
        for member in self.members.values():
            candidates.append(member.next_probe)
            if not member.reachable:
                since = member.unreachable_since if member.unreachable_since is not None else self.started
                last = member.last_ok if member.last_ok is not None else self.started
                candidates += [since + self.config.grace_period, last + self.config.grace_period]
        if self._moved and any(r.waiting for r in self.records.values()):
            candidates.append(self._last_cycle + self.config.dispatch_period)
        due = self._reservations_due()
        if due is not None:
            candidates.append(due)
        for record in self.records.values():
            ttl = self._ttl_due(record)
            if ttl is not None:
                candidates.append(ttl)
        now = self.clock.now()
        future = [c for c in candidates if c > now]  # whatever was due by now, ``sync`` has done (or must wait)
        return min(future) if future else None

    def pending(self) -> bool:
        """Whether a watch has news (the host's or a member's)."""
        return (self.clusters.pending() or self.queues.pending() or self.priority_classes.pending()
                or self.jobs.pending() or any(m.pending() for m in self.members.values()))

    def close(self, *, release: bool = True) -> None:
        """Stop; with ``release`` the members' fence leases are released (their jobs keep running)."""
        for member in self.members.values():
            if release:
                member.release()
            member.close()
        for mirror in (self.clusters, self.queues, self.priority_classes, self.jobs):
            mirror.close()

    # --- questions ---------------------------------------------------------------------------------------
    def explain(self, namespace: str, name: str) -> Obj:
        """Cluster choice for one job right now, with every member's verdict and scores (nothing is written)."""
        record = self.records.get((namespace, name))
        if record is None:
            raise NotFound(f"job {namespace}/{name} not found on the host")
        demand: JobDemand = record.demand(self.priorities())
        choice = self.chooser.choose(demand, [m.view for m in self.members.values()])
        out: Obj = {"job": f"{namespace}/{name}", "placement": record.placement.label(),
                    "phase": record.phase or "Pending",
                    "clusters": [v.to_json() for v in choice.verdicts]}
        if choice.best is not None:
            out["best"] = choice.best.name
        if record.problem:
            out["problem"] = record.problem
        return out
