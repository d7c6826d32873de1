"""The Job controller of kube-controller-manager for ``batch/v1`` Jobs (embedded clusters only).

Runs ``parallelism`` pods at a time until ``completions`` of them succeeded (``NonIndexed``: any pods;
``Indexed``: one success per index ``0..completions-1``, pods ``<job>-<index>-<random>`` annotated and
labelled with ``batch.kubernetes.io/job-completion-index``); without ``completions`` the first success ends
the job once no pod runs. More than ``backoffLimit`` failed pods fail the job (``BackoffLimitExceeded``), as
does ``activeDeadlineSeconds`` (``DeadlineExceeded``); a pod is recreated after a failure only after the
back-off (10 s doubling, at most 6 min). ``suspend`` deletes the running pods and starts none;
``ttlSecondsAfterFinished`` deletes a finished job (and its pods) by the clock.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pumice.api.batch_v1 import CONTROLLER_UID_LABELS, JOB_NAME_LABELS
from pumice.api.resources import BATCH_JOBS
from pumice.clock import Clock, rfc3339
from pumice.store import NotFound, Store, StoreError

from .mirror import Mirror
from .names import PODS, annotations_of, meta, name_of, uid_of
from .owned import OwnedPods, is_active, is_ready, pod_from_template, seconds_of

__all__ = ["INDEX_KEY", "BatchJobController"]

Obj = dict[str, Any]
Key = tuple[str, str]
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
BACKOFF_START = 10.0
BACKOFF_MAX = 360.0


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _finished(job: Obj) -> str | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def _index(pod: Obj) -> int | None:
    text = annotations_of(pod).get(INDEX_KEY, "")
    return int(text) if text.isdigit() else None


def _ranges(indexes: set[int]) -> str:
    """``1,3-5,7``: Kubernetes' ``completedIndexes`` form."""
    out: list[str] = []
    for i in sorted(indexes):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == i - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        elif out and "-" not in out[-1] and int(out[-1]) == i - 1:
            out[-1] = f"{out[-1]}-{i}"
        else:
            out.append(str(i))
    return ",".join(out)


class BatchJobController:
    """Runs ``batch/v1`` Jobs' pods; ``pods`` may be shared with the other workload controllers."""

    def __init__(self, store: Store, clock: Clock, pods: OwnedPods | None = None) -> None:
        self.store = store
        self.clock = clock
        self.pods = pods or OwnedPods(store, clock)
        self.jobs = Mirror(store, BATCH_JOBS)
        self._gone: list[Obj] = []
        self._dirty: set[Key] = set(self.jobs.objects)
        self._by_uid: dict[str, Key] = {uid_of(j): k for k, j in self.jobs.objects.items()}
        self.jobs.drain()
        self._timers: dict[Key, float] = {}
        self._failures: dict[str, tuple[int, float]] = {}  # job uid -> (failed pods seen, when the count grew)

    def next_wakeup(self) -> float | None:
        return min(self._timers.values(), default=None)

    def pending(self) -> bool:
        if self._dirty or self.jobs.pending() or self.pods.pending() or self.pods.dirty("Job"):
            return True
        due = self.next_wakeup()
        return due is not None and due <= self.clock.now()

    def sync(self) -> bool:
        for d in self.jobs.drain():
            self._dirty.add(d.key)
            if d.new is not None:
                self._by_uid[uid_of(d.new)] = d.key
            elif d.old is not None:
                self._by_uid.pop(uid_of(d.old), None)
                self._gone.append(d.old)
                self._failures.pop(uid_of(d.old), None)
        self.pods.refresh()
        owners = self.pods.dirty("Job")
        self._dirty |= {self._by_uid[uid] for uid in owners if uid in self._by_uid}
        owners.clear()
        now = self.clock.now()
        self._dirty |= {k for k, due in self._timers.items() if due <= now}
        wrote = False
        for owner in self._gone:  # background cascading deletion, as Kubernetes' garbage collector
            wrote |= self.pods.delete_dependents(owner)
        self._gone.clear()
        for key in sorted(self._dirty):
            self._timers.pop(key, None)
            job = self.jobs.get(*key)
            if job is not None and not meta(job).get("deletionTimestamp"):
                wrote |= self._reconcile(key, job)
        self._dirty.clear()
        return wrote

    def _wake(self, key: Key, at: float) -> None:
        self._timers[key] = min(at, self._timers.get(key, at))

    def _reconcile(self, key: Key, job: Obj) -> bool:
        spec = job.get("spec") or {}
        status = dict(job.get("status") or {})
        now = self.clock.now()
        owned = list(self.pods.of(uid_of(job)).values())
        active = [p for p in owned if is_active(p)]
        succeeded = [p for p in owned if _phase(p) == "Succeeded"]
        failed = [p for p in owned if _phase(p) == "Failed"]
        wrote = False
        done = _finished(job)
        if done is not None:
            for pod in active:
                wrote |= self._delete(key[0], pod)
            return self._ttl(key, job, status, now) or wrote
        conditions = list(status.get("conditions") or [])
        if spec.get("suspend"):
            for pod in active:
                wrote |= self._delete(key[0], pod)
            active = []
            conditions = _set(conditions, "Suspended", "True", "JobSuspended", "Job suspended", rfc3339(now))
        else:
            conditions = [c for c in conditions if c.get("type") != "Suspended"]
            if not status.get("startTime"):
                status["startTime"] = rfc3339(now)
        start = seconds_of(status.get("startTime"))
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        done_indexes = {i for p in succeeded if (i := _index(p)) is not None}
        count = len(done_indexes) if indexed else len(succeeded)
        verdict: tuple[str, str, str] | None = None
        if len(failed) > int(spec.get("backoffLimit", 6)):
            verdict = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
        elif spec.get("activeDeadlineSeconds") is not None and start is not None and not spec.get("suspend"):
            deadline = start + int(spec["activeDeadlineSeconds"])
            if now >= deadline:
                verdict = ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
            else:
                self._wake(key, deadline)
        if verdict is None and ((completions is not None and count >= completions)
                                or (completions is None and succeeded and not active)):
            verdict = ("Complete", "", "")
        if verdict is not None:
            for pod in active:
                wrote |= self._delete(key[0], pod)
            active = []
            conditions = _set(conditions, verdict[0], "True", verdict[1], verdict[2], rfc3339(now))
            if verdict[0] == "Complete":
                status["completionTime"] = rfc3339(now)
        elif not spec.get("suspend"):
            wrote |= self._start_pods(key, job, active, succeeded, failed, done_indexes, now)
        status.update({
            "active": sum(1 for p in self.pods.of(uid_of(job)).values() if is_active(p)),
            "succeeded": len(succeeded), "failed": len(failed),
            "ready": sum(1 for p in active if is_ready(p)),
        })
        if indexed:
            status["completedIndexes"] = _ranges(done_indexes)
        if conditions:
            status["conditions"] = conditions
        if status != (job.get("status") or {}):
            try:
                job = self.store.patch(BATCH_JOBS, key[0], key[1], {"status": status}, subresource="status",
                                       copy=False)
            except NotFound:
                return wrote
            self.jobs.put(job)
            wrote = True
            if _finished(job):
                wrote |= self._ttl(key, job, status, now)
        return wrote

    def _start_pods(self, key: Key, job: Obj, active: list[Obj], succeeded: list[Obj], failed: list[Obj],
                    done_indexes: set[int], now: float) -> bool:
        spec = job.get("spec") or {}
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        uid = uid_of(job)
        seen, since = self._failures.get(uid, (0, now))
        if len(failed) > seen:
            seen, since = len(failed), now
            self._failures[uid] = (seen, since)
        if seen:
            ready_at = since + min(BACKOFF_MAX, BACKOFF_START * 2 ** (seen - 1))
            if now < ready_at:
                self._wake(key, ready_at)
                return False
        if spec.get("completionMode") == "Indexed":
            running = {i for p in active if (i := _index(p)) is not None}
            missing = [i for i in range(int(completions or 0)) if i not in done_indexes and i not in running]
            starts: list[int | None] = list(missing[: max(0, parallelism - len(active))])
        elif completions is None:
            starts = [None] * (0 if succeeded else max(0, parallelism - len(active)))
        else:
            wanted = min(parallelism, int(completions) - len(succeeded))
            starts = [None] * max(0, wanted - len(active))
        wrote = False
        template = spec.get("template") or {}
        own = {label: uid for label in CONTROLLER_UID_LABELS} | {label: key[1] for label in JOB_NAME_LABELS}
        for index in starts:
            extra = {} if index is None else {INDEX_KEY: str(index)}
            pod = pod_from_template(template, job, key[0],
                                    generate_name=f"{key[1]}-" + ("" if index is None else f"{index}-"),
                                    labels={**own, **extra}, annotations=extra or None)
            try:
                created = self.store.create(PODS, pod, copy=False)
            except StoreError:
                break
            self.pods.created(created)
            wrote = True
        return wrote

    def _delete(self, namespace: str, pod: Obj) -> bool:
        with contextlib.suppress(NotFound):
            self.pods.deleted(self.store.delete(PODS, namespace, name_of(pod), copy=False))
            return True
        return False

    def _ttl(self, key: Key, job: Obj, status: Obj, now: float) -> bool:
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return False
        finished = max((seconds_of(c.get("lastTransitionTime")) or 0.0 for c in status.get("conditions") or []
                        if c.get("type") in ("Complete", "Failed")), default=now)
        due = finished + int(ttl)
        if due > now:
            self._wake(key, due)
            return False
        wrote = self.pods.delete_dependents(job)
        with contextlib.suppress(NotFound):
            self.jobs.forget(self.store.delete(BATCH_JOBS, key[0], key[1], copy=False))
            wrote = True
        return wrote

    def close(self) -> None:
        self.jobs.close()


def _set(conditions: list[Obj], kind: str, status: str, reason: str, message: str, now: str) -> list[Obj]:
    out = [c for c in conditions if c.get("type") != kind]
    previous = next((c for c in conditions if c.get("type") == kind), None)
    if previous is not None and previous.get("status") == status and previous.get("reason") == reason:
        return conditions
    condition = {"type": kind, "status": status, "lastProbeTime": now, "lastTransitionTime": now}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return [*out, condition]
