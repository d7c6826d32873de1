"""The Volcano Job controller: PodGroup, pods, status and lifecycle of ``batch.volcano.sh`` Jobs.

Watches jobs, their pods (label ``volcano.sh/job-name``), PodGroups and Commands, turns every delta
into a ``Request`` for one job, and handles each job's requests in order through the state machine of
``job_state``. Pods are created only once the job's PodGroup has left Pending (the scheduler's enqueue
admitted it), and a task's pods only once the tasks it depends on are done.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
from collections import defaultdict
from datetime import datetime
from typing import Any

from pumice.clock import Clock, rfc3339
from pumice.events import EventRecorder
from pumice.store import AlreadyExists, Invalid, NotFound, Store, StoreError

from .job_build import build_pod, build_podgroup, pod_name, podgroup_name, podgroup_spec, tasks_of
from .job_plugins import JobPlugin, PluginError, plugins_of, unknown_plugins
from .job_policy import OUT_OF_SYNC, POD_PENDING, Request, apply_policies, format_duration
from .job_state import (
    FAILED,
    FINISHED,
    PENDING,
    RESTART_PARTITION,
    RESTART_POD,
    RESTART_TASK,
    RESTARTING,
    SYNC_JOB,
    TARGET_ACTIONS,
    JobFacts,
    Step,
    plan,
)
from .mirror import Delta, Mirror
from .names import (
    COMMANDS,
    JOB_NAME,
    JOB_VERSION,
    JOBS,
    PARTITION_ID,
    PODGROUPS,
    PODS,
    TASK_SPEC,
    annotations_of,
    labels,
    meta,
    name_of,
    namespace_of,
)

__all__ = ["COMPONENT", "JobController", "cascade_delete"]

Obj = dict[str, Any]
Key = tuple[str, str]
log = logging.getLogger(__name__)
_MAX_STEPS = 8  # state changes handled back to back for one job in one pass
#: The event source of Volcano's controllers.
COMPONENT = "vc-controller-manager"
# Event reasons of Volcano's job controller (``pkg/controllers/job``, ``batch.JobEvent``).
EXECUTE_ACTION = "ExecuteAction"
COMMAND_ISSUED = "CommandIssued"
PLUGIN_ERROR = "PluginError"
PODGROUP_ERROR = "PodGroupError"
PODGROUP_PENDING = "PodGroupPending"
FAILED_CREATE = "FailedCreate"
FAILED_DELETE = "FailedDelete"


def _phase(obj: Obj | None) -> str:
    return str(((obj or {}).get("status") or {}).get("phase") or "")


def _job_phase(job: Obj) -> str:
    return str((((job.get("status") or {}).get("state")) or {}).get("phase") or "")


def _owner_job(obj: Obj) -> str | None:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/"):
            return str(ref.get("name"))
    return None


def _exit_code(pod: Obj) -> int | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated is not None:
            return int(terminated.get("exitCode") or 0)
    return None


def _restarts(pod: Obj) -> int:
    status = pod.get("status") or {}
    return sum(int(c.get("restartCount") or 0)
               for c in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])])


def _ready_by_probe(pod: Obj) -> bool:
    """Running with a readiness probe and every container ready: the dependency serves (see ``_deps_met``)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return (
        _phase(pod) == "Running"
        and any(c.get("readinessProbe") for c in containers)
        and bool(statuses)
        and all(s.get("ready") for s in statuses)
    )


def facts_of(job: Obj) -> JobFacts:
    spec = job.get("spec") or {}
    tasks = spec.get("tasks") or []
    return JobFacts(
        replicas=sum(int(t.get("replicas") or 0) for t in tasks),
        min_available=int(spec.get("minAvailable") or 0),
        min_success=None if spec.get("minSuccess") is None else int(spec["minSuccess"]),
        max_retry=int(spec.get("maxRetry") or 3),
        task_min_available={
            str(t.get("name")): int(t["minAvailable"]) for t in tasks if t.get("minAvailable") is not None
        },
    )


def _controlled(job: Obj) -> dict[str, str]:
    return ((job.get("status") or {}).get("controlledResources")) or {}


def _holds_objects(plugin: JobPlugin, job: Obj) -> bool:
    """Whether ``plugin`` made its objects for ``job`` (``status.controlledResources``), so must delete them."""
    return not plugin.CONTROLLED or _controlled(job).get(f"plugin-{plugin.name}") == plugin.name


def cascade_delete(store: Store, job: Obj, pods: list[Obj] | None = None) -> bool:
    """Delete what the controller made for ``job`` (pods, PodGroup, plugin objects): there is no owner GC."""
    ns, name = namespace_of(job), name_of(job)
    wrote = False
    if pods is None:
        pods, _ = store.list(PODS, ns, label_selector=f"{JOB_NAME}={name}")
    for pod in pods:
        with contextlib.suppress(NotFound):
            store.delete(PODS, ns, name_of(pod))
            wrote = True
    with contextlib.suppress(NotFound):
        store.delete(PODGROUPS, ns, podgroup_name(job))
        wrote = True
    for plugin in plugins_of(job):
        if _holds_objects(plugin, job):
            wrote |= plugin.on_job_delete(store, job)
    return wrote


class JobController:
    """Reconciles Volcano Jobs; ``sync()`` handles everything that happened since the last call."""

    def __init__(self, store: Store, clock: Clock, recorder: EventRecorder | None = None) -> None:
        self.store = store
        self.clock = clock
        self.recorder = recorder or EventRecorder(store, COMPONENT, clock=clock)
        self.jobs = Mirror(store, JOBS)
        self.pods = Mirror(store, PODS, label_selector=JOB_NAME)
        self.podgroups = Mirror(store, PODGROUPS)
        self.commands = Mirror(store, COMMANDS)
        self._pods_of: dict[Key, set[str]] = defaultdict(set)
        self._queue: dict[Key, list[Request]] = defaultdict(list)
        self._delayed: list[tuple[float, int, Key, str, Request]] = []
        self._seq = itertools.count()
        self._wrote = False
        #: ``status.controlledResources`` changes made by plugins, written with the job's next status
        self._marks: dict[Key, dict[str, str | None]] = defaultdict(dict)
        #: the PodGroup condition last told as a PodGroupPending event, per job (told again only when it changes)
        self._told_pg: dict[Key, tuple[str, str]] = {}
        self._warned: set[tuple[str, str]] = set()  # (job uid, plugin): its argument warnings were told
        for pod in self.pods.objects.values():
            self._index(pod)
        for key in self.jobs.objects:
            self._queue[key].append(Request(*key))
        self.jobs.drain()
        self.pods.drain()
        self.podgroups.drain()

    # --- events -> requests ------------------------------------------------------------------------

    def _index(self, pod: Obj) -> None:
        self._pods_of[(namespace_of(pod), labels(pod).get(JOB_NAME, ""))].add(name_of(pod))

    def _unindex(self, pod: Obj) -> None:
        key = (namespace_of(pod), labels(pod).get(JOB_NAME, ""))
        self._pods_of[key].discard(name_of(pod))
        if not self._pods_of[key]:
            del self._pods_of[key]

    def _on_job(self, d: Delta) -> None:
        if d.new is None:
            self._queue.pop(d.key, None)
            self._told_pg.pop(d.key, None)
            self._marks.pop(d.key, None)
            assert d.old is not None
            for pod in self._pods(d.key):
                self._wrote |= self._delete_pod(pod)
            self._wrote |= cascade_delete(self.store, d.old, pods=[])
            return
        if d.old is None:
            self._queue[d.key].append(Request(*d.key))
        elif meta(d.old).get("generation") != meta(d.new).get("generation"):
            self._queue[d.key].append(Request(*d.key, event="JobUpdated"))

    def _on_podgroup(self, d: Delta) -> None:
        obj = d.new or d.old
        assert obj is not None
        job = _owner_job(obj)
        if job is None:
            return
        if d.new is not None and ((d.old or {}).get("status") or {}).get("conditions") != (
                (d.new.get("status") or {}).get("conditions")):
            owner = self.jobs.get(d.key[0], job)
            if owner is not None:  # the scheduler's verdict on the gang, told on the job right away
                self._tell_podgroup(owner, d.new)
        if _phase(d.old) == _phase(d.new) and d.new is not None:
            return
        event = "Unknown" if _phase(d.new) == "Unknown" else OUT_OF_SYNC
        self._queue[(d.key[0], job)].append(Request(d.key[0], job, event=event))

    def _on_pod(self, d: Delta) -> None:
        pod = d.new or d.old
        assert pod is not None
        ns, job = namespace_of(pod), labels(pod).get(JOB_NAME, "")
        task = annotations_of(pod).get(TASK_SPEC, "")
        version_text = annotations_of(pod).get(JOB_VERSION, "")
        version = int(version_text) if version_text.isdigit() else None
        base = Request(ns, job, task=task, pod=name_of(pod), job_version=version)
        queue = self._queue[(ns, job)]
        if d.new is None:
            self._unindex(pod)
            queue.append(_with(base, event="PodEvicted"))
            return
        self._index(pod)
        old_phase, new_phase = _phase(d.old), _phase(d.new)
        if d.old is None:
            queue.append(_with(base, event=POD_PENDING) if new_phase == "Pending" else _with(base))
        elif new_phase == "Failed" and old_phase != "Failed":
            queue.append(_with(base, event="PodFailed", exit_code=_exit_code(d.new)))
        elif new_phase == "Succeeded" and old_phase != "Succeeded" and self._task_succeeded(ns, job, task):
            queue.append(_with(base, event="TaskCompleted"))
        elif new_phase in ("Running", "Pending") and self._task_retries_exhausted(ns, job, task):
            queue.append(_with(base, event="TaskFailed"))
        else:
            queue.append(_with(base))

    def _task_spec(self, ns: str, job: str, task: str) -> Obj | None:
        obj = self.jobs.get(ns, job)
        return next((t for t in tasks_of(obj) if t.get("name") == task), None) if obj else None

    def _task_pods(self, ns: str, job: str, task: str) -> list[Obj]:
        return [p for p in self._pods((ns, job)) if annotations_of(p).get(TASK_SPEC) == task]

    def _task_succeeded(self, ns: str, job: str, task: str) -> bool:
        spec = self._task_spec(ns, job, task)
        if spec is None:
            return False
        done = sum(1 for p in self._task_pods(ns, job, task) if _phase(p) == "Succeeded")
        return done >= int(spec.get("replicas") or 0)

    def _task_retries_exhausted(self, ns: str, job: str, task: str) -> bool:
        spec = self._task_spec(ns, job, task)
        if spec is None:
            return False
        limit = int(spec.get("maxRetry") or 3)
        if limit < 0:
            return False
        alive = [p for p in self._task_pods(ns, job, task) if _phase(p) in ("Running", "Pending")]
        return sum(_restarts(p) for p in alive) >= limit

    def _on_command(self, d: Delta) -> None:
        cmd = d.new
        if cmd is None or d.old is not None:
            return
        target = cmd.get("target") or {}
        if target.get("kind") != "Job":
            return
        ns = namespace_of(cmd)
        with contextlib.suppress(NotFound):
            self.commands.forget(self.store.delete(COMMANDS, ns, name_of(cmd)))
            self._wrote = True
        job = self.jobs.get(ns, str(target.get("name")))
        if job is not None:
            self._event(job, "Normal", COMMAND_ISSUED, f"Start to execute command {cmd.get('action')}, and clean it "
                        "up to make sure executed not more than once.")
        self._queue[(ns, str(target.get("name")))].append(
            Request(ns, str(target.get("name")), event="CommandIssued", action=str(cmd.get("action") or ""))
        )

    # --- the loop ----------------------------------------------------------------------------------

    def sync(self) -> bool:
        """Drain the watches and handle every job with pending requests, by namespace/name."""
        self._wrote = False
        for d in self.jobs.drain():
            self._on_job(d)
        for d in self.podgroups.drain():
            self._on_podgroup(d)
        for d in self.pods.drain():
            self._on_pod(d)
        for d in self.commands.drain():
            self._on_command(d)
        self._fire_delayed()
        while self._queue:
            for key in sorted(self._queue):
                requests = self._queue.pop(key)
                if self.jobs.get(*key) is None:
                    continue
                try:
                    self._handle(key, requests)
                except StoreError as err:  # one job's trouble must not stop the others; its next event retries
                    log.warning("job %s/%s: %s", key[0], key[1], err)
        return self._wrote

    def pending(self) -> bool:
        """Whether ``sync`` has anything to do (see ``ControllerManager.sync``)."""
        if (self._queue or self.jobs.pending() or self.podgroups.pending() or self.pods.pending()
                or self.commands.pending()):
            return True
        return bool(self._delayed) and self._delayed[0][0] <= self.clock.now()

    def next_wakeup(self) -> float | None:
        """When the next delayed policy action (``timeout``) is due."""
        return self._delayed[0][0] if self._delayed else None

    def _fire_delayed(self) -> None:
        now = self.clock.now()
        while self._delayed and self._delayed[0][0] <= now:
            _, _, key, action, req = heapq.heappop(self._delayed)
            if req.event == POD_PENDING:
                pod = self.pods.get(key[0], req.pod)
                if pod is None or _phase(pod) != "Pending":
                    continue  # the pod left Pending: the delayed action is cancelled
            self._queue[key].append(_with(req, action=action))

    def _handle(self, key: Key, requests: list[Request]) -> None:
        last_sync = False
        for req in requests:
            job = self.jobs.get(*key)
            if job is None or meta(job).get("deletionTimestamp"):
                return  # a job being deleted is left alone, as Volcano does
            action, delay = apply_policies(job, req)
            if delay is not None:
                heapq.heappush(self._delayed, (self.clock.now() + delay, next(self._seq), key, action, req))
                self._event(job, "Normal", EXECUTE_ACTION, f"Execute action {action} after {format_duration(delay)}")
                action = SYNC_JOB
            if action == SYNC_JOB and last_sync:
                continue  # one sync covers a run of them
            last_sync = action == SYNC_JOB
            if action != SYNC_JOB:
                self._event(job, "Normal", EXECUTE_ACTION, f"Start to execute action {action} ")
            self._run(key, action, req)

    def _run(self, key: Key, action: str, req: Request) -> None:
        """Execute ``action``, then keep syncing while the phase moves (e.g. Restarting -> Pending)."""
        for _ in range(_MAX_STEPS):
            job = self.jobs.get(*key)
            if job is None:
                return
            before = _job_phase(job)
            state = (job.get("status") or {}).get("state") or {}
            partial = before == RESTARTING and state.get("reason") in TARGET_ACTIONS
            self._execute(job, plan(before, action, partial_restart=partial), action, req)
            job = self.jobs.get(*key)
            if job is None or _job_phase(job) == before:
                return
            action, req = SYNC_JOB, Request(*key)

    # --- executing a step --------------------------------------------------------------------------

    def _pods(self, key: Key) -> list[Obj]:
        found = (self.pods.get(key[0], name) for name in sorted(self._pods_of.get(key, ())))
        return [p for p in found if p is not None]

    def _event(self, job: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(job, type_, reason, message)  # type: ignore[arg-type]

    def _delete_pod(self, pod: Obj) -> bool:
        if meta(pod).get("deletionTimestamp"):
            return False
        try:
            deleted = self.store.delete(PODS, namespace_of(pod), name_of(pod))
        except NotFound:
            return False
        except StoreError as err:
            job = self.jobs.get(namespace_of(pod), labels(pod).get(JOB_NAME, ""))
            if job is not None:
                self._event(job, "Warning", FAILED_DELETE, f"Error deleting pods: [{name_of(pod)}: {err}]")
            raise
        if meta(deleted).get("deletionTimestamp"):
            self.pods.put(deleted)  # finalizers keep it around, terminating
        else:
            self.pods.forget(deleted)
            self._unindex(pod)
        return True

    def _kill(self, job: Obj, pods: list[Obj], retain_soft: bool) -> bool:
        deleted = False
        for pod in pods:
            if retain_soft and _phase(pod) in ("Succeeded", "Failed"):
                continue
            deleted |= self._delete_pod(pod)
        pg = self.podgroups.get(namespace_of(job), podgroup_name(job))
        if pg is not None:
            with contextlib.suppress(NotFound):
                self.podgroups.forget(self.store.delete(PODGROUPS, namespace_of(job), name_of(pg)))
                self._wrote = True
        self._delete_plugin_objects(job)
        return deleted

    def _delete_plugin_objects(self, job: Obj) -> None:
        """``pluginOnJobDelete``: each plugin that made objects for the job removes them (and its mark)."""
        key = (namespace_of(job), name_of(job))
        marks = {**_controlled(job), **self._marks.get(key, {})}
        for plugin in plugins_of(job):
            mark = f"plugin-{plugin.name}"
            if plugin.CONTROLLED and marks.get(mark) != plugin.name:
                continue
            try:
                self._wrote |= plugin.on_job_delete(self.store, job)
            except StoreError as err:
                self._event(job, "Warning", PLUGIN_ERROR, f"Execute plugin when job delete failed, err: {err}")
                continue
            if plugin.CONTROLLED:
                self._marks[key][mark] = None

    def _targets(self, pods: list[Obj], action: str, req: Request) -> list[Obj]:
        if action == RESTART_TASK:
            return [p for p in pods if annotations_of(p).get(TASK_SPEC) == req.task]
        if action == RESTART_POD:
            return [p for p in pods if name_of(p) == req.pod]
        if action == RESTART_PARTITION:
            origin = next((p for p in pods if name_of(p) == req.pod), None)
            if origin is None or PARTITION_ID not in labels(origin):
                return []
            part = labels(origin)[PARTITION_ID]
            return [
                p for p in pods if annotations_of(p).get(TASK_SPEC) == req.task and labels(p).get(PARTITION_ID) == part
            ]
        return []

    def _execute(self, job: Obj, step: Step, action: str, req: Request) -> None:
        key = (namespace_of(job), name_of(job))
        pods = self._pods(key)
        deleted = False
        if step.kill == "job":
            deleted = self._kill(job, pods, retain_soft=step.retain == "soft")
        elif step.kill == "target":
            for pod in self._targets(pods, action, req):
                deleted |= self._delete_pod(pod)
        else:
            if _job_phase(job) in ("", PENDING):
                self._initiate(job)
            elif req.event == "JobUpdated":
                self._on_job_update(job)
            self._sync_pods(job)
        self._wrote |= deleted
        job = self.jobs.get(*key) or job
        self._write_status(job, step, action, req, bump=step.bump_version and deleted)

    def _initiate(self, job: Obj) -> None:
        """``initiateJob``: plugins' objects (once: ``status.controlledResources``), then the PodGroup."""
        key = (namespace_of(job), name_of(job))
        marks = {**_controlled(job), **self._marks.get(key, {})}
        missing = unknown_plugins(job)
        if missing:
            self._event(job, "Warning", PLUGIN_ERROR,
                        f"Execute plugin when job add failed, err: failed to get plugin {missing[0]}")
            return
        for plugin in plugins_of(job):
            mark = f"plugin-{plugin.name}"
            if plugin.CONTROLLED and marks.get(mark) == plugin.name:
                continue
            self._tell_warnings(job, plugin)
            try:
                self._wrote |= plugin.on_job_add(self.store, job)
            except (PluginError, StoreError) as err:
                self._event(job, "Warning", PLUGIN_ERROR, f"Execute plugin when job add failed, err: {err}")
                return  # Volcano stops here: no PodGroup, the next sync tries again
            if plugin.CONTROLLED:
                self._marks[key][mark] = plugin.name
        self._ensure_podgroup(job)

    def _tell_warnings(self, job: Obj, plugin: JobPlugin) -> None:
        """A plugin's argument problems (Volcano only logs them), told once per job as a Warning event."""
        warnings = plugin.warnings()
        told = (str(meta(job).get("uid") or name_of(job)), plugin.name)
        if not warnings or told in self._warned:
            return
        self._warned.add(told)
        for warning in warnings:
            self._event(job, "Warning", PLUGIN_ERROR, warning)

    def _on_job_update(self, job: Obj) -> None:
        """``initOnJobUpdate``: the spec changed (scaling): PodGroup and plugin objects follow."""
        for plugin in plugins_of(job):
            try:
                self._wrote |= plugin.on_job_update(self.store, job)
            except (PluginError, StoreError) as err:
                self._event(job, "Warning", PLUGIN_ERROR, f"Execute plugin when job add failed, err: {err}")
                return
        if self.podgroups.get(namespace_of(job), podgroup_name(job)) is not None:
            self._ensure_podgroup(job)

    def _ensure_podgroup(self, job: Obj) -> None:
        ns = namespace_of(job)
        pg = self.podgroups.get(ns, podgroup_name(job))
        priorities = self._priorities(job)
        if pg is None:
            try:
                self.podgroups.put(self.store.create(PODGROUPS, build_podgroup(job, priorities)))
                self._wrote = True
            except AlreadyExists:
                self.podgroups.put(self.store.get(PODGROUPS, ns, podgroup_name(job)))
            except Invalid as err:  # e.g. the queue was closed since the job was admitted: the job waits, Pending
                self._event(job, "Warning", PODGROUP_ERROR, f"Failed to create PodGroup, err: {err}")
            return
        wanted = podgroup_spec(job, priorities)
        current = pg.get("spec") or {}
        fields = ("minMember", "minTaskMember", "minResources")
        patch = {k: wanted.get(k) for k in fields if current.get(k) != wanted.get(k)}
        if patch:
            self.podgroups.put(self.store.patch(PODGROUPS, ns, name_of(pg), {"spec": patch}))
            self._wrote = True

    def _priorities(self, job: Obj) -> dict[str, int]:
        names = {((t.get("template") or {}).get("spec") or {}).get("priorityClassName") for t in tasks_of(job)}
        values: dict[str, int] = {}
        for name in names - {None, ""}:
            with contextlib.suppress(StoreError):
                pc = self.store.get("priorityclasses.scheduling.k8s.io", None, str(name))
                values[str(name)] = int(pc.get("value") or 0)
        return values

    def _deps_met(self, job: Obj, task: Obj, by_task: dict[str, list[Obj]]) -> bool:
        """A task waits for the tasks it ``dependsOn``: each needs ``minAvailable`` pods done.

        Volcano counts Running-and-ready or Succeeded pods; a container without a readiness probe is
        ready as soon as it starts, which would start ``task-b`` while ``task-a`` still runs. The
        quick-start expects ``task-b`` after ``task-a`` completed, so here a pod counts when it
        Succeeded, or when it is Running with a readiness probe that passes (a dependency that serves).
        """
        depends = task.get("dependsOn") or {}
        names = depends.get("name") or []
        if not names:
            return True
        specs = {str(t.get("name")): t for t in tasks_of(job)}
        met = []
        for name in names:
            spec = specs.get(name)
            if spec is None:
                met.append(True)
                continue
            minimum = spec.get("minAvailable")
            wanted = int(minimum if minimum is not None else spec.get("replicas") or 0)
            done = sum(1 for p in by_task.get(name, []) if _phase(p) == "Succeeded" or _ready_by_probe(p))
            met.append(done >= wanted)
        return any(met) if depends.get("iteration") == "any" else all(met)

    def _sync_pods(self, job: Obj) -> None:
        """``syncJob``: create missing pods (PodGroup admitted, dependencies met), drop surplus ones."""
        key = (namespace_of(job), name_of(job))
        pods = {name_of(p): p for p in self._pods(key)}
        by_task: dict[str, list[Obj]] = defaultdict(list)
        for pod in pods.values():
            by_task[annotations_of(pod).get(TASK_SPEC, "")].append(pod)
        pg = self.podgroups.get(key[0], podgroup_name(job))
        admitted = pg is not None and _phase(pg) not in ("", "Pending")
        if pg is not None:
            self._tell_podgroup(job, pg)
        status = job.get("status") or {}
        version = int(status.get("version") or 0)
        expected: set[str] = set()
        to_create: list[tuple[Obj, Obj]] = []  # (task, pod)
        for task in tasks_of(job):
            names = [pod_name(key[1], str(task.get("name")), i) for i in range(int(task.get("replicas") or 0))]
            expected.update(names)
            if not admitted or _job_phase(job) in FINISHED:
                continue
            ready = None
            for index, name in enumerate(names):
                if name in pods:
                    continue
                if ready is None:
                    ready = self._deps_met(job, task, by_task)
                if not ready:
                    break
                try:
                    pod = build_pod(job, task, index, version=version, retry_count=int(status.get("retryCount") or 0))
                except PluginError as err:  # Volcano creates none of the job's pods then, and tries again later
                    self._event(job, "Warning", PLUGIN_ERROR, f"Execute plugin when pod create failed, err: {err}")
                    return
                to_create.append((task, pod))
        failures = []
        for task, pod in to_create:
            name = name_of(pod)
            try:
                created = self.store.create(PODS, pod)
            except AlreadyExists:
                created = self.store.get(PODS, key[0], name)
            except StoreError as err:
                failures.append(f"failed to create pod {name}, err: {err}")
                continue
            self.pods.put(created)
            self._index(created)
            self._wrote = True
            if _watches_pending(job, task):
                self._queue[key].append(Request(*key, event=POD_PENDING, task=str(task.get("name")), pod=name,
                                                job_version=version))
        if failures:
            self._event(job, "Warning", FAILED_CREATE, f"Error creating pods: [{'; '.join(failures)}]")
            return
        for name, pod in pods.items():
            if name not in expected:
                self._wrote |= self._delete_pod(pod)

    def _tell_podgroup(self, job: Obj, pg: Obj) -> None:
        """``recordPodGroupEvent``: the PodGroup's latest true condition, when it is not Scheduled, as a Warning.

        Volcano records it on every sync of the job (the recorder folds the repeats); here it is told when
        the condition changes, which tells the same story without a write per sync.
        """
        key = (namespace_of(job), name_of(job))
        latest = None
        for cond in (pg.get("status") or {}).get("conditions") or []:
            if cond.get("status") == "True" and (
                    latest is None or str(cond.get("lastTransitionTime") or "") >= str(latest.get("lastTransitionTime")
                                                                                        or "")):
                latest = cond
        if latest is None or latest.get("type") == "Scheduled":
            self._told_pg.pop(key, None)
            return
        told = (str(latest.get("type") or ""), str(latest.get("message") or ""))
        if self._told_pg.get(key) == told:
            return
        self._told_pg[key] = told
        self._event(job, "Warning", PODGROUP_PENDING,
                    f"PodGroup {key[0]}:{key[1]} {told[0].lower()}, reason: {told[1]}")

    # --- status ------------------------------------------------------------------------------------

    def _counts(self, job: Obj) -> Obj:
        counts: Obj = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "terminating": 0, "unknown": 0}
        per_task: dict[str, dict[str, int]] = {}
        for pod in self._pods((namespace_of(job), name_of(job))):
            if meta(pod).get("deletionTimestamp"):
                counts["terminating"] += 1
                continue
            phase = _phase(pod) or "Pending"
            field = phase.lower() if phase.lower() in counts else "unknown"
            counts[field] += 1
            task = per_task.setdefault(annotations_of(pod).get(TASK_SPEC, ""), {})
            task[phase] = task.get(phase, 0) + 1
        counts["taskStatusCount"] = {t: {"phase": dict(sorted(p.items()))} for t, p in sorted(per_task.items())}
        return counts

    def _write_status(self, job: Obj, step: Step, action: str, req: Request, *, bump: bool) -> None:
        old = job.get("status") or {}
        status: Obj = {**old, **self._counts(job)}
        status["minAvailable"] = int((job.get("spec") or {}).get("minAvailable") or 0)
        status.setdefault("retryCount", 0)
        status["version"] = int(old.get("version") or 0) + (1 if bump else 0)
        state = dict(old.get("state") or {})
        status["state"] = state
        marks = self._marks.pop((namespace_of(job), name_of(job)), None)
        if marks:
            controlled = {k: v for k, v in {**(old.get("controlledResources") or {}), **marks}.items() if v is not None}
            status["controlledResources"] = controlled
            if not controlled:
                status.pop("controlledResources")
        before = str(state.get("phase") or "")
        if not before:
            state["phase"] = PENDING
        if step.update is not None:
            step.update(status, facts_of(job))
        after = str(status["state"].get("phase") or "")
        if after != before:
            now = rfc3339(self.clock.now())
            state["lastTransitionTime"] = now
            created = meta(job).get("creationTimestamp")
            if created:  # as Volcano: from creation to the last transition
                with contextlib.suppress(ValueError):
                    status["runningDuration"] = format_duration(
                        max(0.0, self.clock.now() - datetime.fromisoformat(str(created).replace("Z", "+00:00"))
                            .timestamp()))
            state["reason"] = action if action != SYNC_JOB else (req.event if req.event != OUT_OF_SYNC else "")
            state["message"] = _message(before, after, action, req)
            status["conditions"] = [*(old.get("conditions") or []), {"status": after, "lastTransitionTime": now}]
            if not state["reason"]:
                state.pop("reason")
        if status == old:
            return
        body = {**job, "status": status}
        body["metadata"] = {k: v for k, v in meta(job).items() if k != "resourceVersion"}
        try:
            written = self.store.update(JOBS, body, subresource="status")
        except NotFound:
            return
        self.jobs.put(written)
        self._wrote = True
        if after != before and before:
            # Volcano's controller keeps phase changes in the status (conditions) only; as an event they tell
            # ``kubectl describe vcjob`` the job's story next to the actions that caused them (from the first
            # change on: a new job is Pending, which says nothing the job's creation does not).
            self._event(written, "Warning" if after == FAILED else "Normal", after, str(state["message"]))


def _watches_pending(job: Obj, task: Obj) -> bool:
    """Whether a policy of the task or the job reacts to PodPending (so new pods need a timer)."""
    policies = [*(task.get("policies") or []), *((job.get("spec") or {}).get("policies") or [])]
    return any(
        p.get("timeout") and (p.get("event") in (POD_PENDING, "*") or {POD_PENDING, "*"} & set(p.get("events") or []))
        for p in policies
    )


def _message(before: str, after: str, action: str, req: Request) -> str:
    cause = f"{req.event} on pod {req.pod}" if req.pod else req.event
    if action != SYNC_JOB:
        return f"{before or 'new'} -> {after} by {action} ({cause})"
    return f"{before or 'new'} -> {after}"


def _with(req: Request, **changes: Any) -> Request:
    fields = {name: getattr(req, name) for name in req.__dataclass_fields__}
    fields.update(changes)
    return Request(**fields)
