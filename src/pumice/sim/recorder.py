"""What happened during a run, from store events: job and pod timings, allocation over time.

The recorder is a store client like any other: it watches pods, Volcano Jobs, PodGroups and nodes
and stamps every event with the virtual time at which it saw it (the simulator drains it after
every step, so that is the time the write happened). Allocation is kept per node and per queue
incrementally, as (time, vector) steps, in three dimensions: CPU (milli), memory (bytes), GPU
(thousandths of a device).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pumice.api import int_value, milli_value
from pumice.api.group_name import group_name
from pumice.api.resources import JOBS, PODGROUPS
from pumice.clock import Clock
from pumice.store import Gone, Store, Watch, WatchEvent

from .measured import pod_usage_shape
from .nodegen import GPU_MILLI, GPU_RESOURCE

if TYPE_CHECKING:
    from pumice.nodes.usage import UsageProfile

__all__ = ["DIMS", "JobRecord", "PodRecord", "Recorder", "node_vector", "pod_vector"]

DIMS = ("cpu", "memory", "gpu")
JOB_NAME_LABEL = "volcano.sh/job-name"
JOB_DONE = ("Completed", "Failed", "Aborted", "Terminated")
VOLCANO_BATCH = "batch.volcano.sh/"
#: Controllers whose pods Volcano groups (``podgroup-<owner uid>``): the report names the group after them.
WORKLOAD_KINDS = ("ReplicaSet", "StatefulSet", "Job", "DaemonSet")


def _q(resources: dict[str, Any], name: str, milli: bool) -> float:
    value = resources.get(name)
    if value is None:
        return 0.0
    try:
        return float(milli_value(value) if milli else int_value(value))
    except (ValueError, TypeError, ArithmeticError):
        return 0.0


def _gpu(resources: dict[str, Any]) -> float:
    if GPU_MILLI in resources:
        return _q(resources, GPU_MILLI, milli=False)
    return _q(resources, GPU_RESOURCE, milli=True)


def node_vector(node: dict[str, Any]) -> np.ndarray:
    status = node.get("status") or {}
    res = status.get("allocatable") or status.get("capacity") or {}
    return np.array([_q(res, "cpu", True), _q(res, "memory", False), _gpu(res)])


def pod_vector(pod: dict[str, Any]) -> np.ndarray:
    cpu = memory = gpu = 0.0  # summed as floats, in the order numpy would: the same values, without arrays
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = (c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits") or {}
        cpu += _q(req, "cpu", True)
        memory += _q(req, "memory", False)
        gpu += _gpu(req)
    return np.array([cpu, memory, gpu])


@dataclass
class PodRecord:
    namespace: str
    name: str
    job: tuple[str, str, str]
    vector: np.ndarray
    created: float
    node: str = ""
    start: float | None = None
    end: float | None = None
    phase: str = "Pending"
    queue: str = "default"
    deleted: float | None = None
    #: (usage profile, cpu milli, memory bytes it is relative to): what the pod really uses while it runs
    usage: tuple[UsageProfile, int, int] | None = None


@dataclass
class JobRecord:
    kind: str  # Job (Volcano), PodGroup (pods grouped without a Volcano Job), Pod, or the controller of the pods
    # grouped by Volcano (ReplicaSet, StatefulSet, ``Job.batch`` for batch/v1: its ``name`` is the controller's)
    namespace: str
    name: str
    queue: str = "default"
    submitted: float | None = None
    phase: str = "Pending"
    finished: float | None = None
    pods: list[str] = field(default_factory=list)
    owner: str = ""  # a PodGroup's Volcano Job, when it has one
    history: list[tuple[float, str]] = field(default_factory=list)  # (time, phase) of a Volcano Job

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


_NO_META: dict[str, Any] = {}  # read-only


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or _NO_META


class Recorder:
    """Watches a store and keeps the record of a run (times are seconds since ``t0``)."""

    def __init__(self, store: Store, clock: Clock, t0: float) -> None:
        self.store = store
        self.clock = clock
        self.t0 = t0
        self.pods: dict[str, PodRecord] = {}  # by uid: every incarnation of a pod name has its own record
        self.latest: dict[str, str] = {}  # "ns/name" -> uid of its latest incarnation
        self.jobs: dict[tuple[str, str, str], JobRecord] = {}
        self.groups: dict[str, JobRecord] = {}  # "ns/pg" -> the record of that PodGroup
        self.node_index: dict[str, int] = {}
        self.capacity = np.zeros((0, 3))
        self.used = np.zeros((0, 3))
        self._total = np.zeros(3)  # = used.sum(axis=0), kept as it changes (whole numbers: exact in any order)
        self.queue_used: dict[str, np.ndarray] = {}
        #: allocation steps: (t, total used vector, {queue: used vector})
        self.series: list[tuple[float, np.ndarray, dict[str, np.ndarray]]] = []
        self.shapes: Counter[bytes] = Counter()
        self.finished_plain: list[str] = []  # plain pods that finished since the last take_finished()
        self._watches: dict[str, Watch] = {r: store.watch(r) for r in ("nodes", PODGROUPS, JOBS, "pods")}
        self._changes = store.change_marker
        self._synced: object = None  # the store's change marker when the watches were last drained
        self._handlers = {"nodes": self._on_node, PODGROUPS: self._on_group, JOBS: self._on_job, "pods": self._on_pod}

    # --- events ---------------------------------------------------------------------------------------------

    def now(self) -> float:
        return self.clock.now() - self.t0

    def sync(self) -> None:
        """Record everything the store reported since the last call, at the current time."""
        marker = self._changes()
        if marker == self._synced:
            return  # nothing was written since: nothing to record
        self._synced = marker
        t = self.now()
        changed = False
        for resource, watch in self._watches.items():
            try:
                events = watch.drain()
            except Gone:  # pragma: no cover - only with a tiny store history
                watch.close()
                items, rv = self.store.list(resource)
                self._watches[resource] = self.store.watch(resource, resource_version=rv)
                events = [WatchEvent("MODIFIED", o) for o in items]
            handler = self._handlers[resource]
            for ev in events:
                changed |= handler(ev, t)
        if changed:
            self._snapshot(t)

    def pod(self, key: str) -> PodRecord | None:
        """The latest incarnation of pod ``namespace/name``."""
        uid = self.latest.get(key)
        return None if uid is None else self.pods[uid]

    def take_finished(self) -> list[str]:
        """uids of the plain pods (not a Volcano Job's) that finished since the last call."""
        done, self.finished_plain = self.finished_plain, []
        return done

    def _snapshot(self, t: float) -> None:
        entry = (t, self._total.copy(), {q: v.copy() for q, v in self.queue_used.items()})
        if self.series and self.series[-1][0] == t:
            self.series[-1] = entry
        else:
            self.series.append(entry)

    def _on_node(self, ev: WatchEvent, t: float) -> bool:
        name = str(_meta(ev.object).get("name"))
        if name not in self.node_index:
            if ev.type == "DELETED":
                return False
            self.node_index[name] = len(self.node_index)
            self.capacity = np.vstack([self.capacity, np.zeros(3)])
            self.used = np.vstack([self.used, np.zeros(3)])
        i = self.node_index[name]
        ready = all(c.get("status") == "True" for c in (ev.object.get("status") or {}).get("conditions") or []
                    if c.get("type") == "Ready")
        vec = node_vector(ev.object) if ev.type != "DELETED" and ready else np.zeros(3)
        if np.array_equal(self.capacity[i], vec):
            return False
        self.capacity[i] = vec
        return True

    def _job(self, kind: str, ns: str, name: str) -> JobRecord:
        key = (kind, ns, name)
        rec = self.jobs.get(key)
        if rec is None:
            rec = self.jobs[key] = JobRecord(kind, ns, name)
        return rec

    def _on_job(self, ev: WatchEvent, t: float) -> bool:
        meta = _meta(ev.object)
        rec = self._job("Job", meta.get("namespace") or "default", str(meta.get("name")))
        if rec.submitted is None:
            rec.submitted = t
        if ev.type == "DELETED":
            if rec.phase not in JOB_DONE:
                rec.phase = "Deleted"
                rec.history.append((t, "Deleted"))
            return False
        rec.queue = (ev.object.get("spec") or {}).get("queue") or "default"
        phase = ((ev.object.get("status") or {}).get("state") or {}).get("phase") or rec.phase
        if not rec.history or rec.history[-1][1] != phase:
            rec.history.append((t, phase))
        rec.phase = phase
        if phase in JOB_DONE and rec.finished is None:
            rec.finished = t
        elif phase not in JOB_DONE:
            rec.finished = None
        return False

    def _on_group(self, ev: WatchEvent, t: float) -> bool:
        meta = _meta(ev.object)
        ns = meta.get("namespace") or "default"
        key = f"{ns}/{meta.get('name')}"
        refs = meta.get("ownerReferences") or ()
        owner = next((o.get("name", "") for o in refs
                      if o.get("kind") == "Job" and str(o.get("apiVersion", "")).startswith(VOLCANO_BATCH)), "")
        workload = next((o for o in refs if o.get("controller") and o.get("kind") in WORKLOAD_KINDS), None)
        rec = self.groups.get(key)
        if rec is None:
            if owner:
                rec = self._job("Job", ns, owner)
            elif workload is not None:  # the pods of a ReplicaSet, StatefulSet or batch/v1 Job: named after it
                kind = "Job.batch" if workload["kind"] == "Job" else str(workload["kind"])  # not a Volcano Job
                rec = self._job(kind, ns, str(workload.get("name")))
                rec.submitted = t if rec.submitted is None else rec.submitted
            else:
                rec = self._job("PodGroup", ns, str(meta.get("name")))
                rec.submitted = t if rec.submitted is None else rec.submitted
            self.groups[key] = rec
        if ev.type != "DELETED" and not owner:
            rec.queue = (ev.object.get("spec") or {}).get("queue") or "default"
        return False

    def _job_of(self, pod: dict[str, Any], ns: str, name: str) -> JobRecord:
        meta = _meta(pod)
        labels = meta.get("labels") or {}
        if labels.get(JOB_NAME_LABEL):
            return self._job("Job", ns, labels[JOB_NAME_LABEL])
        group = group_name(pod)
        if group:
            rec = self.groups.get(f"{ns}/{group}")
            return rec if rec is not None else self._job("PodGroup", ns, group)
        return self._job("Pod", ns, name)

    def _regroup(self, uid: str, rec: PodRecord, pod: dict[str, Any], ns: str, name: str) -> None:
        """A plain pod seen before its PodGroup was made for it joins that group's record (and its queue, from
        the ``scheduling.volcano.sh/queue-name`` annotation, as the PodGroup carries it)."""
        job = self._job_of(pod, ns, name)
        if job.key == rec.job:
            return
        old = self.jobs.get(rec.job)
        if old is not None:
            old.pods.remove(uid)
            if not old.pods:
                del self.jobs[rec.job]
            if job.submitted is None or (old.submitted is not None and old.submitted < job.submitted):
                job.submitted = old.submitted
        job.pods.append(uid)
        rec.job = job.key
        if rec.queue != job.queue:
            if rec.node and rec.end is None:  # already holding resources: move them to the new queue
                self.queue_used[rec.queue] -= rec.vector
                self.queue_used.setdefault(job.queue, np.zeros(3))
                self.queue_used[job.queue] += rec.vector
            rec.queue = job.queue

    def _on_pod(self, ev: WatchEvent, t: float) -> bool:
        pod = ev.object
        meta = pod.get("metadata") or _NO_META
        ns = meta.get("namespace") or "default"
        name = str(meta.get("name"))
        uid = meta.get("uid")
        uid = uid if type(uid) is str and uid else str(uid or f"{ns}/{name}")
        rec = self.pods.get(uid)
        if rec is None:  # a new pod, or a new incarnation of a name (a restarted job's pod)
            job = self._job_of(pod, ns, name)
            if job.submitted is None:
                job.submitted = t
            rec = PodRecord(ns, name, job.key, pod_vector(pod), t, queue=job.queue, usage=pod_usage_shape(pod))
            job.pods.append(uid)
            self.pods[uid] = rec
            self.latest[f"{ns}/{name}"] = uid
            self.shapes[rec.vector.tobytes()] += 1
        elif rec.job[0] == "Pod" and ev.type != "DELETED":
            self._regroup(uid, rec, pod, ns, name)
        node = (pod.get("spec") or _NO_META).get("nodeName") or ""
        phase = (pod.get("status") or _NO_META).get("phase") or "Pending"
        was_holding = rec.node and rec.end is None
        if node and not rec.node:
            rec.node = node
            if rec.start is None:
                rec.start = t
        if phase == "Running" and rec.start is None:
            rec.start = t
        ended = ev.type == "DELETED" or phase in ("Succeeded", "Failed")
        if ev.type == "DELETED":
            rec.deleted = t
            if rec.phase not in ("Succeeded", "Failed"):
                rec.phase = "Deleted"  # evicted or deleted before it ended
        else:
            rec.phase = phase
        if ended and rec.end is None and (rec.node or ev.type == "DELETED"):
            rec.end = t
            owner = self.jobs.get(rec.job)
            if phase in ("Succeeded", "Failed") and owner is not None and owner.kind in ("PodGroup", "Pod"):
                self.finished_plain.append(uid)
        holding = bool(rec.node) and rec.end is None
        if holding == bool(was_holding):
            return False
        vec = rec.vector
        i = self.node_index.get(rec.node)
        qv = self.queue_used.get(rec.queue)
        if qv is None:
            qv = self.queue_used[rec.queue] = np.zeros(3)
        if holding:
            if i is not None:
                self.used[i] += vec
                self._total += vec
            qv += vec
        else:  # x - v, exactly what x + -v was
            if i is not None:
                self.used[i] -= vec
                self._total -= vec
            qv -= vec
        return True

    def close(self) -> None:
        for watch in self._watches.values():
            watch.close()
