"""A cluster state kept current by watch events, so a cycle does not re-read the world.

Pods, PodGroups and Queues are applied one event at a time (a pod event costs about what parsing
one pod costs). Changes that reshape the columnar node table — a node added, removed or resized, a
new resource name, a PriorityClass — rebuild the state from the objects kept here (rare).

A version of an object the scheduler cannot read (``pumice.api.wellformed.problem``: a bad quantity, an
affinity of the wrong shape, a priority string) is skipped, and handed once to ``on_rejected``, so that it
cannot stop the scheduling of every other job: the cache keeps the last version it could read (a new object
is left out), which never frees what a running pod holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pumice.api import wellformed
from pumice.api.group_name import group_key
from pumice.scheduler.model import TaskInfo, TaskStatus
from pumice.scheduler.snapshot import (
    Catalog,
    ClusterState,
    ParsedPod,
    ShapeTable,
    build_from_catalog,
    is_ours,
    make_job,
    make_queue,
    make_task,
    may_wait,
    place_task,
    pod_resource_names,
    quotas_by_namespace,
    task_status,
)

#: Most distinct pod specs remembered for parsing new replicas (then forgotten all at once: few come back).
ALIKE_LIMIT = 4096
KINDS = ("Node", "Pod", "PodGroup", "Queue", "PriorityClass", "HyperNode", "ResourceQuota", "PodDisruptionBudget",
         "Numatopology")


def _same_but_status(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Two versions of an object that differ at most in ``status`` and bookkeeping metadata."""
    if old.get("spec") != new.get("spec"):
        return False
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return all(om.get(k) == nm.get(k) for k in ("uid", "labels", "annotations", "creationTimestamp", "name",
                                                   "namespace"))


def _same_task(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Two versions of a pod that make the same task but for its status and node: everything a
    TaskInfo takes from metadata and spec is equal, ``spec.nodeName`` aside (a bind)."""
    os_, ns_ = old.get("spec") or {}, new.get("spec") or {}
    for k in os_.keys() | ns_.keys():
        if k != "nodeName" and os_.get(k) != ns_.get(k):
            return False
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return all(om.get(k) == nm.get(k) for k in ("uid", "labels", "annotations", "creationTimestamp", "name",
                                                   "namespace"))


def _queue_state(q: dict[str, Any]) -> Any:
    return (q.get("status") or {}).get("state")


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class LiveCache:
    def __init__(self, scheduler_names: tuple[str, ...] = ("volcano",),
                 on_rejected: Callable[[dict[str, Any], str], None] | None = None, *, screen: bool = True) -> None:
        self.scheduler_names = set(scheduler_names)
        self.screen = screen  # check every object (see ``pumice.api.wellformed.screened``)
        #: told once about each version of an object skipped as unreadable: (object, what is wrong with it)
        self.on_rejected = on_rejected
        self.rejected: dict[tuple[str, str], str] = {}  # (kind, key) -> the problem, while it lasts
        self.objects: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in KINDS}
        self._state: ClusterState | None = None
        self._catalog: Catalog | None = None
        self._tasks: dict[str, TaskInfo] = {}  # pod key -> task in the state
        self._all_jobs: dict[str, Any] = {}
        self._parsed: dict[str, ParsedPod] = {}  # pod uid -> its parsed requests and shape
        self._alike: dict[bytes | str, ParsedPod] = {}  # snapshot._alike_key -> a parse (new replicas of a task)
        self._space_names: tuple[str, ...] = ()  # the resource names the parses above are over
        self._shapes = ShapeTable()  # kept across rebuilds: parsed pods keep their shape keys
        self._by_group: dict[str, set[str]] = {}  # podgroup key -> pod keys
        self._evicted_at: dict[str, float] = {}  # ClusterState.evicted_at, kept across rebuilds
        self.rebuilds = 0

    # --- events -------------------------------------------------------------------------------
    def apply(self, event: str, obj: dict[str, Any]) -> None:
        kind = obj.get("kind", "")
        if kind not in self.objects:
            return
        key = _key(obj)
        store = self.objects[kind]
        old = store.get(key)  # the last version that passed the screen
        if event != "DELETED" and self.screen:
            wrong = wellformed.problem(obj, old)
            if wrong is not None:  # skipped: the last readable version (if any) stays
                if self.rejected.get((kind, key)) != wrong:
                    self.rejected[(kind, key)] = wrong
                    if self.on_rejected is not None:
                        self.on_rejected(obj, wrong)
                return
            if self.rejected:
                self.rejected.pop((kind, key), None)
        elif self.rejected:
            self.rejected.pop((kind, key), None)
        if event == "DELETED":
            store.pop(key, None)
        else:
            store[key] = obj
        if self._state is None:
            return
        if kind == "Pod":
            self._pod_changed(key, old, None if event == "DELETED" else obj)
        elif kind == "PodGroup":
            self._group_changed(key, None if event == "DELETED" else obj)
        elif kind == "Queue":
            self._queue_changed(key, None if event == "DELETED" else obj)
        elif kind == "HyperNode":
            self._state.hypernodes = list(self.objects["HyperNode"].values())
        elif kind == "PodDisruptionBudget":
            self._state.pdbs = list(self.objects["PodDisruptionBudget"].values())
        elif kind == "Numatopology":
            self._state.numatopologies = list(self.objects["Numatopology"].values())
        elif kind == "ResourceQuota":
            self._state.resource_quotas = quotas_by_namespace(list(self.objects["ResourceQuota"].values()))
        else:
            self._state = None  # nodes, priority classes: rebuild

    def state(self) -> ClusterState:
        if self._state is None:
            self._rebuild()  # its first session reports every job (dirty_jobs is None)
        assert self._state is not None
        return self._state

    def reported(self) -> None:
        """The last session's report was written: from now on only touched jobs need one."""
        if self._state is not None:
            self._state.dirty_jobs = set()

    def resync(self, kind: str, key: str) -> None:
        """Re-apply the last known object (after a write the store refused)."""
        obj = self.objects.get(kind, {}).get(key)
        if obj is not None:
            self.apply("MODIFIED", obj)

    # --- rebuild ------------------------------------------------------------------------------
    def _rebuild(self) -> None:
        self.rebuilds += 1
        catalog = Catalog(shapes=self._shapes)
        for kind in KINDS:
            for obj in self.objects[kind].values():
                catalog.add(obj)
        self._catalog = catalog
        state = build_from_catalog(catalog, self.scheduler_names)
        if tuple(state.space.names) != self._space_names:  # parses are vectors over the resource names
            self._space_names = tuple(state.space.names)
            self._parsed, self._alike = {}, {}
        self._tasks = {}
        self._by_group = {}
        self._all_jobs = state.all_jobs
        state.active_jobs = {uid: j for uid, j in state.jobs.items() if not j.finished()}
        state.waiting_jobs = {uid for uid, j in state.active_jobs.items() if may_wait(j)}
        for job in self._all_jobs.values():
            for t in job.tasks.values():
                self._tasks[t.key] = t
        # tasks outside a job (other schedulers, no PodGroup) still hold node resources
        for tasks in state.nodes.tasks:
            for t in tasks.values():
                self._tasks.setdefault(t.key, t)
        for key, pod in self.objects["Pod"].items():
            group = group_key(pod) if is_ours(pod, self.scheduler_names) else ""
            if group:
                self._by_group.setdefault(group, set()).add(key)
        state.evicted_at = self._evicted_at
        self._state = state

    # --- incremental --------------------------------------------------------------------------
    def _detach(self, pod_key: str) -> None:
        state = self._state
        assert state is not None
        task = self._tasks.pop(pod_key, None)
        if task is None:
            return
        if task.node >= 0:
            state.nodes.remove_task(task.node, task)
        if task.job is not None:
            task.job.remove_task(task)
            self._classify(task.job)

    def _classify(self, job: Any) -> None:
        """Keep ``active_jobs`` = present jobs that are not finished; note the job as touched."""
        state = self._state
        assert state is not None and state.active_jobs is not None
        if state.dirty_jobs is not None:
            state.dirty_jobs.add(job.uid)
        if job.uid in state.jobs and not job.finished():
            state.active_jobs[job.uid] = job
            if state.waiting_jobs is not None and may_wait(job):
                state.waiting_jobs.add(job.uid)
        else:
            state.active_jobs.pop(job.uid, None)

    def _attach(self, pod_key: str, job: Any, state: ClusterState) -> None:
        pod = self.objects["Pod"].get(pod_key)
        if pod is None:
            return
        old = self._tasks.get(pod_key)
        if old is not None:
            self._detach(pod_key)
        assert self._catalog is not None
        if len(self._alike) >= ALIKE_LIMIT:
            self._alike.clear()
        task = make_task(state.space, pod, self._catalog, job, self._parsed, self._alike)
        place_task(state.nodes, task)
        self._tasks[pod_key] = task

    def _rehome(self, task: TaskInfo, pod: dict[str, Any], job: Any) -> None:
        """Re-place an existing task for a new version of its pod (status, node) or a new job: the
        same as making it again from ``pod`` when its scheduling fields did not change, without the
        parse (most pod events are status writes and binds)."""
        state = self._state
        assert state is not None
        if task.node >= 0:
            state.nodes.remove_task(task.node, task)
        old_job = task.job
        if old_job is not None:
            old_job.remove_task(task)
            self._classify(old_job)
        task.pod = pod
        task.job = job
        task.status = task_status(pod)
        task.node, task.node_name = -1, ""
        task.evicted, task.last_reason = False, ""
        task.nominated_node = (pod.get("status") or {}).get("nominatedNodeName") or ""
        place_task(state.nodes, task)

    def _pod_changed(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        state = self._state
        assert state is not None
        task = self._tasks.get(key)
        if (task is not None and task.job is not None and old is not None and new is not None and task.pod is old
                and _same_task(old, new)):
            if (not task.evicted and task.status == task_status(new) and task.node >= 0
                    and (new.get("spec") or {}).get("nodeName") == task.node_name):
                # the same task on the same node in the same status (the server confirming a bind the cache
                # assumed, a status write that moves no phase): what re-placing it would give, without the move
                task.pod = new
                task.last_reason = ""
                task.nominated_node = (new.get("status") or {}).get("nominatedNodeName") or ""
                return
            self._rehome(task, new, task.job)
            if task.job is not None:
                self._classify(task.job)
            return
        self._detach(key)
        old_group = group_key(old) if old is not None and is_ours(old, self.scheduler_names) else ""
        if old_group:
            self._by_group.get(old_group, set()).discard(key)
        if new is None:
            self._parsed.pop((old or {}).get("metadata", {}).get("uid", ""), None)
            return
        if not pod_resource_names(new) <= set(state.space.names) | {"pods"}:
            self._state = None  # a new resource name: the columns change
            return
        group = group_key(new) if is_ours(new, self.scheduler_names) else ""
        if group:
            self._by_group.setdefault(group, set()).add(key)
        job = self._all_jobs.get(group) if group else None
        self._attach(key, job, state)
        if job is not None:
            self._classify(job)
        if job is None and group == "" and is_ours(new, self.scheduler_names):
            task = self._tasks[key]
            if task.status == TaskStatus.PENDING and task.key not in state.orphan_pods:
                state.orphan_pods.append(task.key)

    def _group_changed(self, key: str, pg: dict[str, Any] | None) -> None:
        state = self._state
        assert state is not None and self._catalog is not None
        old = self._all_jobs.get(key)
        if old is not None and pg is not None and _same_but_status(old.pod_group, pg):
            # a status write (most PodGroup events): the job keeps its tasks, only its phase moves
            old.pod_group = pg
            old.phase = (pg.get("status") or {}).get("phase") or "Pending"
            if key in state.jobs:
                self._classify(old)
            return
        self._all_jobs.pop(key, None)
        state.jobs.pop(key, None)
        assert state.active_jobs is not None
        state.active_jobs.pop(key, None)
        members = sorted(self._by_group.get(key, ()))
        job = make_job(state.space, pg, self._catalog) if pg is not None else None
        if job is not None:
            if old is not None:
                job.phase = job.phase or old.phase
            self._all_jobs[key] = job
        for pod_key in members:
            task = self._tasks.get(pod_key)
            pod = self.objects["Pod"].get(pod_key)
            if task is not None and pod is not None and task.pod is pod:
                self._rehome(task, pod, job)
            else:
                self._attach(pod_key, job, state)
        if job is None:
            return
        if job.queue in state.queues:
            state.jobs[key] = job
            self._classify(job)

    def _queue_changed(self, key: str, q: dict[str, Any] | None) -> None:
        state = self._state
        assert state is not None
        existed = key in state.queues
        kept = state.queues.get(key)
        if q is None:
            state.queues.pop(key, None)
        elif kept is not None and _same_but_status(kept.queue, q) and _queue_state(kept.queue) == _queue_state(q):
            kept.queue = q  # a status write (counts, allocated): nothing the scheduler reads moved
            return
        else:
            state.queues[key] = make_queue(q)
        if existed == (q is not None):
            return  # a queue's spec or status changed: which jobs are present did not
        state.jobs = {uid: j for uid, j in self._all_jobs.items() if j.queue in state.queues}
        state.active_jobs = {uid: j for uid, j in state.jobs.items() if not j.finished()}
        state.waiting_jobs = {uid for uid, j in state.active_jobs.items() if may_wait(j)}
        state.dirty_jobs = None  # jobs came or went with the queue: report them all once
