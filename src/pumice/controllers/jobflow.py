"""The JobFlow and JobTemplate controllers (``pkg/controllers/jobflow``, ``pkg/controllers/jobtemplate``).

A JobFlow's flows name JobTemplates. For each flow the flow controller creates the Job ``<flow>-<template>``
(the template's spec, labels and annotations ``volcano.sh/createdByJobFlow=<ns>.<flow>`` and
``volcano.sh/createdByJobTemplate=<ns>.<template>``, owned by the JobFlow) as soon as every flow in its
``dependsOn.targets`` has a Completed Job, and writes the flow's status: the Jobs by phase, their history,
and the flow's phase (Pending -> Running while Jobs run or complete without failures -> Succeed when all
completed; Failed once a Job failed or was terminated). With ``jobRetainPolicy: delete`` a Succeeded flow
deletes its Jobs. Deleting the JobFlow deletes its Jobs (their owner; there is no owner GC here).

As in Volcano, ``dependsOn.probe`` and ``patch`` are accepted but not used: the flow says so once in a
Warning event. Unlike Volcano (which retries a missing template a few times and then gives up), a flow
waiting for a missing JobTemplate goes on when the template is created.

The JobTemplate controller writes ``status.jobDependsOnList``: the Jobs created from the template.
"""

from __future__ import annotations

import contextlib
import copy
from collections import defaultdict
from datetime import datetime
from typing import Any

from pumice.clock import Clock, rfc3339
from pumice.events import EventRecorder
from pumice.store import AlreadyExists, NotFound, Store, StoreError

from .job_policy import parse_duration
from .mirror import Delta, Mirror
from .names import JOBFLOWS, JOBS, JOBTEMPLATES, labels, meta, name_of, namespace_of, uid_of

__all__ = [
    "CREATED_BY_JOB_FLOW",
    "CREATED_BY_JOB_TEMPLATE",
    "JobFlowController",
    "JobTemplateController",
    "flow_job_name",
]

Obj = dict[str, Any]
Key = tuple[str, str]
CREATED_BY_JOB_FLOW = "volcano.sh/createdByJobFlow"
CREATED_BY_JOB_TEMPLATE = "volcano.sh/createdByJobTemplate"
FLOW_API = "flow.volcano.sh/v1alpha1"
SUCCEED, FAILED, RUNNING, PENDING, TERMINATING = "Succeed", "Failed", "Running", "Pending", "Terminating"
SYNC_ACTION = "SyncJobFlow"
_LISTED = ("Pending", "Running", "Completing", "Completed", "Terminating", "Terminated", "Failed")
_MAX_STEPS = 4  # phase changes handled back to back for one flow in one pass


def flow_job_name(flow: str, template: str) -> str:
    """``getJobName``: the Job a flow creates from a template."""
    return f"{flow}-{template}"


def _object_string(namespace: str, name: str) -> str:
    return f"{namespace}.{name}"


def _phase(flow: Obj) -> str:
    return str(((flow.get("status") or {}).get("state") or {}).get("phase") or "")


def _job_phase(job: Obj) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def _owner_flow(job: Obj) -> str | None:
    """``getJobFlowNameByJob``: the JobFlow owning a Job."""
    for ref in meta(job).get("ownerReferences") or []:
        if ref.get("kind") == "JobFlow" and "volcano" in str(ref.get("apiVersion") or ""):
            return str(ref.get("name"))
    return None


def _flows(flow: Obj) -> list[Obj]:
    return list((flow.get("spec") or {}).get("flows") or [])


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class JobFlowController:
    """Creates the Jobs of JobFlows in dependency order and keeps the flows' status."""

    def __init__(self, store: Store, clock: Clock, recorder: EventRecorder | None = None) -> None:
        self.store = store
        self.clock = clock
        self.recorder = recorder or EventRecorder(store, "vc-controller-manager", clock=clock)
        self.flows = Mirror(store, JOBFLOWS)
        self.templates = Mirror(store, JOBTEMPLATES)
        self.jobs = Mirror(store, JOBS, label_selector=CREATED_BY_JOB_FLOW)
        self._dirty: set[Key] = set(self.flows.objects)
        self._warned: set[str] = set()  # uids of flows whose unused fields were told
        self._wrote = False
        self.flows.drain()
        self.templates.drain()
        self.jobs.drain()

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        return bool(self._dirty) or self.flows.pending() or self.templates.pending() or self.jobs.pending()

    def sync(self) -> bool:
        self._wrote = False
        for d in self.flows.drain():
            self._on_flow(d)
        for d in self.templates.drain():
            if d.new is not None:
                self._on_template(d.key)
        for d in self.jobs.drain():
            job = d.new or d.old
            assert job is not None
            owner = _owner_flow(job)
            if owner is not None:
                self._dirty.add((namespace_of(job), owner))
        while self._dirty:
            dirty, self._dirty = sorted(self._dirty), set()
            for key in dirty:
                try:
                    self._handle(key)
                except StoreError as err:  # one flow's trouble must not stop the others
                    flow = self.flows.get(*key)
                    if flow is not None:
                        self._event(flow, "Warning", SYNC_ACTION, f"{SYNC_ACTION} JobFlow failed for {err}")
        return self._wrote

    # --- deltas ------------------------------------------------------------------------------------

    def _on_flow(self, d: Delta) -> None:
        if d.new is None:
            assert d.old is not None
            self._delete_jobs(d.old)  # the owner is gone: its Jobs go too (Kubernetes' GC would delete them)
            return
        self._dirty.add(d.key)

    def _on_template(self, key: Key) -> None:
        """A template appeared or changed: flows of its namespace still deploying may go on."""
        for flow_key, flow in self.flows.objects.items():
            if (flow_key[0] == key[0] and _phase(flow) in ("", PENDING, RUNNING)
                    and any(f.get("name") == key[1] for f in _flows(flow))):
                self._dirty.add(flow_key)

    # --- one flow ----------------------------------------------------------------------------------

    def _event(self, flow: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(flow, type_, reason, message)  # type: ignore[arg-type]

    def _jobs_of(self, flow: Obj) -> list[Obj]:
        """``getAllJobsCreatedByJobFlow``: the Jobs labelled as created by this flow."""
        value = _object_string(namespace_of(flow), name_of(flow))
        ns = namespace_of(flow)
        return sorted((j for (jns, _), j in self.jobs.objects.items()
                       if jns == ns and labels(j).get(CREATED_BY_JOB_FLOW) == value), key=name_of)

    def _handle(self, key: Key) -> None:
        for _ in range(_MAX_STEPS):
            flow = self.flows.get(*key)
            if flow is None or meta(flow).get("deletionTimestamp"):
                return
            phase = _phase(flow)
            if phase in (FAILED, TERMINATING):
                return  # Volcano's failed and terminating states do nothing
            self._tell_unused(flow)
            if phase == SUCCEED and (flow.get("spec") or {}).get("jobRetainPolicy") == "delete":
                self._delete_jobs(flow)
                return
            if not self._deploy(flow):
                return
            if not self._write_status(flow):
                return

    def _tell_unused(self, flow: Obj) -> None:
        uid = uid_of(flow) or f"{namespace_of(flow)}/{name_of(flow)}"
        if uid in self._warned:
            return
        self._warned.add(uid)
        for f in _flows(flow):
            if f.get("patch"):
                self._event(flow, "Warning", "Ignored", f"flow {f.get('name')}: patch is not applied (Volcano's "
                            "JobFlow controller creates the Job from the JobTemplate as it is)")
            if (f.get("dependsOn") or {}).get("probe"):
                self._event(flow, "Warning", "Ignored", f"flow {f.get('name')}: dependsOn.probe is not evaluated "
                            "(Volcano's JobFlow controller waits for the targets' Jobs to complete)")

    def _deploy(self, flow: Obj) -> bool:
        """``deployJob``: create every flow's Job whose targets completed; False after an error (told)."""
        ns = namespace_of(flow)
        for f in _flows(flow):
            name = flow_job_name(name_of(flow), str(f.get("name")))
            if self.jobs.get(ns, name) is not None:
                continue
            targets = (f.get("dependsOn") or {}).get("targets")
            if targets is not None and not all(
                    _job_phase(self.jobs.get(ns, flow_job_name(name_of(flow), str(t))) or {}) == "Completed"
                    for t in targets):
                continue
            if not self._create_job(flow, str(f.get("name")), name):
                return False
        return True

    def _create_job(self, flow: Obj, template_name: str, name: str) -> bool:
        ns = namespace_of(flow)
        template = self.templates.get(ns, template_name)
        if template is None:
            self._event(flow, "Warning", SYNC_ACTION, f'{SYNC_ACTION} JobFlow failed for jobtemplate.flow.volcano.sh '
                        f'"{template_name}" not found (the flow goes on once it is created)')
            return False
        created_by = {CREATED_BY_JOB_TEMPLATE: _object_string(ns, template_name),
                      CREATED_BY_JOB_FLOW: _object_string(ns, name_of(flow))}
        job = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": dict(created_by),
                "annotations": dict(created_by),
                "ownerReferences": [{"apiVersion": FLOW_API, "kind": "JobFlow", "name": name_of(flow),
                                     "uid": uid_of(flow), "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        try:
            self.jobs.put(self.store.create(JOBS, job))
        except AlreadyExists:
            return True
        except StoreError as err:
            self._event(flow, "Warning", SYNC_ACTION, f"{SYNC_ACTION} JobFlow failed for {err}")
            return False
        self._wrote = True
        self._event(flow, "Normal", "Created", f"create a job named {name}!")
        return True

    def _write_status(self, flow: Obj) -> bool:
        """``getAllJobStatus`` and the state's phase rule; True if the phase moved (so the flow goes again)."""
        jobs = self._jobs_of(flow)
        now = rfc3339(self.clock.now())
        old = flow.get("status") or {}
        by_phase: dict[str, list[str]] = {p: [] for p in _LISTED}
        unknown: list[str] = []
        conditions: dict[str, Obj] = {}
        for job in jobs:
            phase = _job_phase(job)
            by_phase.get(phase, unknown).append(name_of(job))
            cond: Obj = {"phase": phase, "createTime": meta(job).get("creationTimestamp")}
            job_status = job.get("status") or {}
            if job_status.get("runningDuration"):
                cond["runningDuration"] = job_status["runningDuration"]
            if job_status.get("taskStatusCount"):
                cond["taskStatusCount"] = job_status["taskStatusCount"]
            conditions[name_of(job)] = {k: v for k, v in cond.items() if v is not None}
        listed = [dict(s) for s in old.get("jobStatusList") or []]
        for job in jobs:
            entry = self._job_entry(job, next((s for s in listed if s.get("name") == name_of(job)), None), now)
            for i, s in enumerate(listed):
                if s.get("name") == name_of(job):
                    listed[i] = entry
                    break
            else:
                listed.append(entry)
        status: Obj = {
            "pendingJobs": by_phase["Pending"], "runningJobs": by_phase["Running"], "failedJobs": by_phase["Failed"],
            "completedJobs": by_phase["Completed"], "terminatedJobs": by_phase["Terminated"],
            "unKnowJobs": unknown, "jobStatusList": listed, "conditions": conditions,
            "state": dict(old.get("state") or {}),
        }
        before = _phase(flow)
        if before in ("", PENDING):
            if (by_phase["Running"] or by_phase["Completed"]) and not by_phase["Failed"]:
                status["state"]["phase"] = RUNNING
            elif by_phase["Failed"] or by_phase["Terminated"]:
                status["state"]["phase"] = FAILED
            else:
                status["state"]["phase"] = PENDING
        elif before == RUNNING:
            if len(by_phase["Completed"]) == len(_flows(flow)):
                status["state"]["phase"] = SUCCEED
            elif by_phase["Failed"] or by_phase["Terminated"]:
                status["state"]["phase"] = FAILED
        status = {k: v for k, v in status.items() if v not in ([], {}, None)}
        if status == old:
            return False
        body = {**flow, "status": status}
        body["metadata"] = {k: v for k, v in meta(flow).items() if k != "resourceVersion"}
        try:
            written = self.store.update(JOBFLOWS, body, subresource="status")
        except NotFound:
            return False
        self.flows.put(written)
        self._wrote = True
        after = _phase(written)
        if after != before:
            self._event(written, "Warning" if after == FAILED else "Normal", after,
                        f"JobFlow phase {before or 'new'} -> {after}")
        return after != before

    def _job_entry(self, job: Obj, previous: Obj | None, now: str) -> Obj:
        """One ``jobStatusList`` entry: the Job's state, times, restarts and its history of states."""
        phase = _job_phase(job)
        histories = [dict(h) for h in (previous or {}).get("runningHistories") or []]
        if previous is not None and (previous.get("runningHistories") is not None):
            if histories and histories[-1].get("state") != phase:
                histories[-1]["endTimestamp"] = now
                histories.append({"startTimestamp": now, "state": phase})
        elif phase:
            histories = [{"startTimestamp": now, "state": phase}]
        created = meta(job).get("creationTimestamp")
        entry: Obj = {"name": name_of(job), "state": phase, "startTimestamp": created,
                      "restartCount": int((job.get("status") or {}).get("retryCount") or 0) or None,
                      "runningHistories": histories}
        duration = (job.get("status") or {}).get("runningDuration")
        if duration and created:
            with contextlib.suppress(ValueError):
                entry["endTimestamp"] = rfc3339(_seconds(str(created)) + parse_duration(str(duration)))
        return {k: v for k, v in entry.items() if v not in (None, "", [])}  # Go's omitempty

    def _delete_jobs(self, flow: Obj) -> None:
        """``deleteAllJobsCreatedByJobFlow``."""
        for job in self._jobs_of(flow):
            with contextlib.suppress(NotFound):
                self.jobs.forget(self.store.delete(JOBS, namespace_of(job), name_of(job)))
                self._wrote = True


class JobTemplateController:
    """Keeps ``status.jobDependsOnList`` of each JobTemplate: the Jobs created from it."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.templates = Mirror(store, JOBTEMPLATES)
        self.jobs = Mirror(store, JOBS, label_selector=CREATED_BY_JOB_TEMPLATE)
        self._made: dict[Key, set[str]] = defaultdict(set)  # template -> its Jobs
        for job in self.jobs.objects.values():
            self._index(job, add=True)
        self._dirty: set[Key] = set(self.templates.objects)
        self._wrote = False
        self.templates.drain()
        self.jobs.drain()

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        return bool(self._dirty) or self.templates.pending() or self.jobs.pending()

    def _index(self, job: Obj, *, add: bool) -> Key | None:
        ns, _, name = str(labels(job).get(CREATED_BY_JOB_TEMPLATE) or "").partition(".")
        if not name or "." in name:
            return None  # Volcano needs exactly <namespace>.<name>
        key = (ns, name)
        (self._made[key].add if add else self._made[key].discard)(name_of(job))
        return key

    def sync(self) -> bool:
        self._wrote = False
        for d in self.templates.drain():
            if d.new is not None:
                self._dirty.add(d.key)
        for d in self.jobs.drain():
            if d.new is None:
                assert d.old is not None
                self._index(d.old, add=False)  # as Volcano, the list is rewritten on the next Job or template add
                continue
            key = self._index(d.new, add=True)
            if key is not None and d.old is None:
                self._dirty.add(key)
        while self._dirty:
            dirty, self._dirty = sorted(self._dirty), set()
            for key in dirty:
                self._reconcile(key)
        return self._wrote

    def _reconcile(self, key: Key) -> None:
        template = self.templates.get(*key)
        made = sorted(self._made.get(key, ()))
        if template is None or not made:
            return
        status = dict(template.get("status") or {})
        if status.get("jobDependsOnList") == made:
            return
        status["jobDependsOnList"] = made
        body = {**template, "status": status}
        body["metadata"] = {k: v for k, v in meta(template).items() if k != "resourceVersion"}
        with contextlib.suppress(NotFound):
            self.templates.put(self.store.update(JOBTEMPLATES, body, subresource="status"))
            self._wrote = True
