"""Volcano's CronJob controller (``pkg/controllers/cronjob``): Volcano Jobs on a cron schedule, by the clock.

At each unmet schedule time (after the last scheduled one, or the CronJob's creation, and not older than
``startingDeadlineSeconds``) a Job ``<cronjob>-<minutes since the epoch>`` is made from ``jobTemplate``, with
the template's labels and annotations and ``volcano.sh/cronjob-scheduled-timestamp``; ``status.active`` lists
the unfinished ones and ``lastScheduleTime`` the latest time served. ``concurrencyPolicy``: ``Allow`` runs
them side by side, ``Forbid`` skips a time while one is active, ``Replace`` deletes the active ones first.
Finished jobs beyond ``successfulJobsHistoryLimit`` (Completed) and ``failedJobsHistoryLimit`` (Failed) are
deleted, oldest first; ``suspend`` stops new jobs. The clock drives it: in a simulation the virtual clock.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

from pumice.api.resources import CRONJOBS, JOBS
from pumice.clock import Clock, rfc3339
from pumice.cron import CronError, Schedule, parse_schedule
from pumice.events import EventRecorder
from pumice.store import AlreadyExists, NotFound, Store, StoreError

from .job import cascade_delete
from .mirror import Mirror
from .names import meta, name_of, uid_of
from .owned import controller_of, owner_reference, seconds_of

__all__ = ["SCHEDULED_TIMESTAMP", "CronJobController", "job_name", "most_recent_schedule"]

Obj = dict[str, Any]
Key = tuple[str, str]
SCHEDULED_TIMESTAMP = "volcano.sh/cronjob-scheduled-timestamp"
_FINISHED = ("Completed", "Failed", "Terminated")
log = logging.getLogger(__name__)


def job_name(cronjob: Obj, scheduled: datetime) -> str:
    """``<cronjob>-<minutes since the epoch>``: one name per scheduled time, so a time is never served twice."""
    return f"{name_of(cronjob)}-{int(scheduled.timestamp()) // 60}"


def most_recent_schedule(cronjob: Obj, now: datetime, schedule: Schedule, *, deadline: bool) -> tuple[
        datetime, datetime | None]:
    """``(earliest, most recent unmet time or None)`` as ``mostRecentScheduleTime`` computes them."""
    status = cronjob.get("status") or {}
    earliest_s = seconds_of(status.get("lastScheduleTime")) or seconds_of(meta(cronjob).get("creationTimestamp"))
    earliest = datetime.fromtimestamp(earliest_s or now.timestamp(), UTC)
    seconds = (cronjob.get("spec") or {}).get("startingDeadlineSeconds")
    if deadline and seconds is not None:
        cutoff = datetime.fromtimestamp(now.timestamp() - int(seconds), UTC)
        earliest = max(earliest, cutoff)
    t1 = schedule.next(earliest)
    if t1 is None or now < t1:
        return earliest, None
    t2 = schedule.next(t1)
    if t2 is None or now < t2:
        return earliest, t1
    between = max(1, round((t2 - t1).total_seconds()))
    missed = int((now - t1).total_seconds()) // between + 1
    start = datetime.fromtimestamp(t1.timestamp() + (missed - 2) * between, UTC)
    recent = None
    t = schedule.next(start)
    while t is not None and t <= now:
        recent = t
        t = schedule.next(t)
    return earliest, recent


def _job_phase(job: Obj) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


class CronJobController:
    """Creates Volcano Jobs for CronJobs when their schedule comes round."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._ro = {"copy": False}
        self.cronjobs = Mirror(store, CRONJOBS)
        self.jobs = Mirror(store, JOBS)
        self.events = EventRecorder(store, "vc-controller-manager", clock=clock)
        self._dirty: set[Key] = set(self.cronjobs.objects)
        self.cronjobs.drain()
        self.jobs.drain()
        self._timers: dict[Key, float] = {}

    def next_wakeup(self) -> float | None:
        return min(self._timers.values(), default=None)

    def pending(self) -> bool:
        if self._dirty or self.cronjobs.pending() or self.jobs.pending():
            return True
        due = self.next_wakeup()
        return due is not None and due <= self.clock.now()

    def sync(self) -> bool:
        wrote = False
        for d in self.cronjobs.drain():
            self._dirty.add(d.key)
            if d.new is None and d.old is not None:  # gone: its jobs go too
                for job in self._owned(d.old):
                    wrote |= self._delete(d.old, job)
        for d in self.jobs.drain():
            for state in (d.old, d.new):
                ref = None if state is None else controller_of(state)
                if ref is not None and ref.get("kind") == "CronJob":
                    self._dirty.add((d.key[0], str(ref.get("name"))))
        now = self.clock.now()
        self._dirty |= {k for k, due in self._timers.items() if due <= now}
        for key in sorted(self._dirty):
            self._timers.pop(key, None)
            cronjob = self.cronjobs.get(*key)
            if cronjob is not None and not meta(cronjob).get("deletionTimestamp"):
                wrote |= self._reconcile(key, cronjob)
        self._dirty.clear()
        return wrote

    def _owned(self, cronjob: Obj) -> list[Obj]:
        uid, ns = uid_of(cronjob), meta(cronjob).get("namespace") or "default"
        return [job for (job_ns, _), job in self.jobs.objects.items()
                if job_ns == ns and (controller_of(job) or {}).get("uid") == uid]

    def _reconcile(self, key: Key, cronjob: Obj) -> bool:
        spec = cronjob.get("spec") or {}
        status = dict(cronjob.get("status") or {})
        active = list(status.get("active") or [])
        jobs = self._owned(cronjob)
        wrote = False
        successful, failed = [], []
        for job in jobs:
            phase = _job_phase(job)
            if phase not in _FINISHED:
                continue
            active = [ref for ref in active if ref.get("uid") != uid_of(job)]
            if phase == "Completed":
                finished = ((job.get("status") or {}).get("state") or {}).get("lastTransitionTime")
                if finished and (not status.get("lastSuccessfulTime")
                                 or (seconds_of(finished) or 0) > (seconds_of(status["lastSuccessfulTime"]) or 0)):
                    status["lastSuccessfulTime"] = finished
                successful.append(job)
            elif phase == "Failed":
                failed.append(job)
        for finished_jobs, limit in ((successful, spec.get("successfulJobsHistoryLimit")),
                                     (failed, spec.get("failedJobsHistoryLimit"))):
            if limit is None:
                continue
            by_age = sorted(finished_jobs, key=lambda j: (meta(j).get("creationTimestamp") or "", name_of(j)))
            for job in by_age[: max(0, len(by_age) - int(limit))]:
                wrote |= self._delete(cronjob, job)
                active = [ref for ref in active if ref.get("uid") != uid_of(job)]
        present = {uid_of(j) for j in jobs}
        active = [ref for ref in active if ref.get("uid") in present]
        if not spec.get("suspend"):
            try:
                schedule = parse_schedule(str(spec.get("schedule") or ""), spec.get("timeZone"))
            except CronError as err:
                self.events.event(cronjob, "Warning", "InvalidSchedule", f"invalid schedule: {err}")
                schedule = None
            if schedule is not None:
                scheduled, active = self._schedule(key, cronjob, spec, status, active, schedule)
                wrote |= scheduled
        status["active"] = active
        if not active:
            status.pop("active")
        if status != (cronjob.get("status") or {}):
            try:
                self.cronjobs.put(self.store.patch(CRONJOBS, key[0], key[1], {"status": {
                    "active": None, **status}}, subresource="status", copy=False))
                wrote = True
            except NotFound:
                pass
        return wrote

    def _schedule(self, key: Key, cronjob: Obj, spec: Obj, status: Obj, active: list[Obj],
                  schedule: Schedule) -> tuple[bool, list[Obj]]:
        """Serve the most recent unmet schedule time, if any (``status`` is updated in place); ``(wrote, the
        active jobs)``. The controller wakes up again at the next schedule time."""
        now = datetime.fromtimestamp(self.clock.now(), UTC)
        _, scheduled = most_recent_schedule({**cronjob, "status": status}, now, schedule, deadline=True)
        nxt = schedule.next(now)
        if nxt is not None:
            self._timers[key] = nxt.timestamp()
        if scheduled is None:
            return False, active
        name = job_name(cronjob, scheduled)
        if any(ref.get("name") == name for ref in active) or \
                seconds_of(status.get("lastScheduleTime")) == scheduled.timestamp():
            return False, active  # this time was served already
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and active:
            self.events.event(cronjob, "Warning", "ForbidConcurrent",
                              "Skipping job creation because another job is already running")
            return False, active
        wrote = False
        if policy == "Replace":
            for ref in active:
                job = self.jobs.get(key[0], str(ref.get("name")))
                if job is not None:
                    wrote |= self._delete(cronjob, job)
            active = []
        created = self._create(key, cronjob, spec, scheduled)
        if created is None:
            return wrote, active
        ref = {"apiVersion": created.get("apiVersion"), "kind": "Job", "name": name_of(created), "namespace": key[0],
               "uid": uid_of(created), "resourceVersion": meta(created).get("resourceVersion")}
        status["lastScheduleTime"] = rfc3339(scheduled.timestamp())
        return True, [*active, ref]

    def _create(self, key: Key, cronjob: Obj, spec: Obj, scheduled: datetime) -> Obj | None:
        template = spec.get("jobTemplate") or {}
        tmeta = template.get("metadata") or {}
        zone = spec.get("timeZone")
        when = scheduled.astimezone(parse_schedule("* * * * *", zone).zone) if zone else scheduled
        job_meta: Obj = {"name": job_name(cronjob, scheduled), "namespace": key[0],
                         "annotations": {**(tmeta.get("annotations") or {}),
                                         SCHEDULED_TIMESTAMP: when.isoformat().replace("+00:00", "Z")},
                         "ownerReferences": [owner_reference(cronjob)]}
        if tmeta.get("labels"):
            job_meta["labels"] = dict(tmeta["labels"])
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": job_meta,
               "spec": template.get("spec") or {}}
        try:
            created = self.store.create(JOBS, job, copy=False)
        except AlreadyExists:
            return None
        except StoreError as err:
            self.events.event(cronjob, "Warning", "FailedCreate", f"Error creating job: {err}")
            return None
        self.jobs.put(created)
        self.events.event(cronjob, "Normal", "SuccessfulCreate", f"Created job {name_of(created)}")
        return created

    def _delete(self, cronjob: Obj, job: Obj) -> bool:
        ns = meta(job).get("namespace") or "default"
        try:
            self.jobs.forget(self.store.delete(JOBS, ns, name_of(job), copy=False))
        except NotFound:
            return False
        with contextlib.suppress(StoreError):
            cascade_delete(self.store, job)
        self.events.event(cronjob, "Normal", "SuccessfulDelete", f'Deleted job "{name_of(job)}"')
        return True

    def close(self) -> None:
        self.cronjobs.close()
        self.jobs.close()
