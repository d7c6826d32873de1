"""Volcano's Job state machine (``pkg/controllers/job/state``) as a pure function of phase and action.

``plan(phase, action)`` says what to do to the pods (kill the whole job, kill one target, or sync them
to the spec) and how to move the status afterwards; ``pumice.controllers.job`` carries it out. The
status is the wire dict whose counters (pending, running, ...) were recomputed after the pod changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "ABORTED",
    "ABORTING",
    "ACTIONS",
    "COMPLETED",
    "COMPLETING",
    "EVENTS",
    "FAILED",
    "FINISHED",
    "PENDING",
    "RESTARTING",
    "RUNNING",
    "TARGET_ACTIONS",
    "TERMINATED",
    "TERMINATING",
    "JobFacts",
    "Step",
    "plan",
]

PENDING = "Pending"
RUNNING = "Running"
RESTARTING = "Restarting"
COMPLETING = "Completing"
COMPLETED = "Completed"
ABORTING = "Aborting"
ABORTED = "Aborted"
TERMINATING = "Terminating"
TERMINATED = "Terminated"
FAILED = "Failed"
FINISHED = frozenset({COMPLETED, TERMINATED, FAILED})

ABORT_JOB = "AbortJob"
RESTART_JOB = "RestartJob"
RESTART_TASK = "RestartTask"
RESTART_POD = "RestartPod"
RESTART_PARTITION = "RestartPartition"
TERMINATE_JOB = "TerminateJob"
COMPLETE_JOB = "CompleteJob"
RESUME_JOB = "ResumeJob"
SYNC_JOB = "SyncJob"
TARGET_ACTIONS = frozenset({RESTART_TASK, RESTART_POD, RESTART_PARTITION})
#: Actions a user may name in a policy or a Command.
ACTIONS = frozenset({ABORT_JOB, RESTART_JOB, TERMINATE_JOB, COMPLETE_JOB, RESUME_JOB, *TARGET_ACTIONS})
#: Events a user may name in a policy.
EVENTS = frozenset(
    {"*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"}
)

Status = dict[str, Any]


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What the transitions need from the spec."""

    replicas: int  # sum over tasks
    min_available: int
    min_success: int | None
    max_retry: int
    task_min_available: dict[str, int]  # only tasks that set minAvailable


@dataclass(frozen=True, slots=True)
class Step:
    """``kill``: "job" (KillJob), "target" (KillTarget) or "sync" (SyncJob); ``retain``: "none" or "soft"."""

    kill: Literal["job", "target", "sync"]
    retain: Literal["none", "soft"]
    update: Callable[[Status, JobFacts], bool] | None
    bump_version: bool = False


def _to(phase: str, *, retry: bool = False) -> Callable[[Status, JobFacts], bool]:
    def update(status: Status, facts: JobFacts) -> bool:
        if retry:
            status["retryCount"] = int(status.get("retryCount") or 0) + 1
        status.setdefault("state", {})["phase"] = phase
        return True

    return update


def _n(status: Status, key: str) -> int:
    return int(status.get(key) or 0)


def _set(status: Status, phase: str) -> bool:
    status.setdefault("state", {})["phase"] = phase
    return True


def _pending_sync(status: Status, facts: JobFacts) -> bool:
    if facts.min_available <= _n(status, "running") + _n(status, "succeeded") + _n(status, "failed"):
        return _set(status, RUNNING)
    return False


def _running_sync(status: Status, facts: JobFacts) -> bool:
    if facts.replicas == 0:
        return False  # scaled to zero: keep the phase
    succeeded, failed = _n(status, "succeeded"), _n(status, "failed")
    if facts.min_success is not None and succeeded >= facts.min_success:
        return _set(status, COMPLETED)
    if succeeded + failed == facts.replicas:
        if facts.min_available >= sum(facts.task_min_available.values()):
            counts = status.get("taskStatusCount") or {}
            for task, minimum in facts.task_min_available.items():
                if task in counts and int((counts[task].get("phase") or {}).get("Succeeded") or 0) < minimum:
                    return _set(status, FAILED)
        if facts.min_success is not None and succeeded < facts.min_success:
            return _set(status, FAILED)
        return _set(status, COMPLETED if succeeded >= facts.min_available else FAILED)
    if _n(status, "pending") > facts.replicas - facts.min_available:
        return _set(status, PENDING)
    return False


def _restarting(status: Status, facts: JobFacts) -> bool:
    if _n(status, "retryCount") >= facts.max_retry:
        return _set(status, FAILED)
    if facts.replicas - _n(status, "terminating") >= facts.min_available:
        return _set(status, PENDING)
    return False


def _drained(phase: str) -> Callable[[Status, JobFacts], bool]:
    def update(status: Status, facts: JobFacts) -> bool:
        if _n(status, "terminating") + _n(status, "pending") + _n(status, "running") == 0:
            return _set(status, phase)
        return False

    return update


def _common(action: str) -> Step | None:
    """The actions Pending and Running handle alike."""
    if action == RESTART_JOB:
        return Step("job", "none", _to(RESTARTING, retry=True), bump_version=True)
    if action in TARGET_ACTIONS:
        return Step("target", "none", _to(RESTARTING, retry=True))
    if action == ABORT_JOB:
        return Step("job", "soft", _to(ABORTING), bump_version=True)
    if action == COMPLETE_JOB:
        return Step("job", "soft", _to(COMPLETING), bump_version=True)
    if action == TERMINATE_JOB:
        return Step("job", "soft", _to(TERMINATING), bump_version=True)
    return None


def plan(phase: str, action: str, *, partial_restart: bool = False) -> Step:
    """The step for ``action`` in ``phase`` (an empty phase is a new job: Pending).

    ``partial_restart``: the job entered Restarting through RestartTask/RestartPod/RestartPartition, so
    Restarting must not kill the rest of the job.
    """
    if phase in ("", PENDING):
        return _common(action) or Step("sync", "none", _pending_sync)
    if phase == RUNNING:
        return _common(action) or Step("sync", "none", _running_sync)
    if phase == RESTARTING:
        if action in TARGET_ACTIONS:
            return Step("target", "none", _restarting)
        if partial_restart:
            return Step("sync", "none", _restarting)
        return Step("job", "none", _restarting, bump_version=True)
    if phase in (ABORTING, ABORTED):
        if action == RESUME_JOB:
            return Step("job", "soft", _to(RESTARTING, retry=True), bump_version=True)
        return Step("job", "soft", _drained(ABORTED) if phase == ABORTING else None, bump_version=True)
    if phase == COMPLETING:
        return Step("job", "soft", _drained(COMPLETED), bump_version=True)
    if phase == TERMINATING:
        return Step("job", "soft", _drained(TERMINATED), bump_version=True)
    return Step("job", "soft", None, bump_version=True)  # Completed, Terminated, Failed
