"""What a session decided, in the form ``pumice schedule`` prints and the store writes back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import ALLOCATED_STATUS, SCHEDULED_STATUS, JobInfo, TaskStatus
from pumice.scheduler.resources import format_amount


@dataclass
class JobOutcome:
    key: str
    queue: str
    phase: str
    min_available: int
    tasks: int
    ready: int
    reason: str = ""


@dataclass
class SessionOutcome:
    binds: dict[str, str]
    evictions: list[str]
    pipelined: dict[str, str]
    podgroups: dict[str, dict[str, Any]]
    jobs: list[JobOutcome]
    queue_allocated: dict[str, dict[str, str]]
    node_scores: dict[str, dict[str, float]] = field(default_factory=dict)
    orphan_pods: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "binds": self.binds,
            "evictions": self.evictions,
            "pipelined": self.pipelined,
            "podgroups": self.podgroups,
        }
        if self.node_scores:
            out["node_scores"] = self.node_scores
        return out


def podgroup_phase(job: JobInfo) -> str:
    """Volcano's ``getPodGroupPhase`` at session close."""
    if job.count(TaskStatus.RUNNING) > 0 and job.unschedulable:
        return "Unknown"
    scheduled = job.count(SCHEDULED_STATUS) + sum(
        1 for t in job.tasks.values() if t.status == TaskStatus.RELEASING and t.node_name
    )
    completed = job.count(TaskStatus.SUCCEEDED | TaskStatus.FAILED)
    if scheduled >= job.min_available:
        return "Completed" if scheduled == completed else "Running"
    if job.phase != "Inqueue":
        return "Pending"
    return "Inqueue"


def summarize(ssn: Session) -> SessionOutcome:
    podgroups: dict[str, dict[str, Any]] = {}
    jobs: list[JobOutcome] = []
    pipelined: dict[str, str] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: j.uid):
        phase = podgroup_phase(job)
        podgroups[job.uid] = {
            "phase": phase,
            "running": job.count(TaskStatus.RUNNING),
            "succeeded": job.count(TaskStatus.SUCCEEDED),
            "failed": job.count(TaskStatus.FAILED),
        }
        for t in job.tasks.values():
            if t.status == TaskStatus.PIPELINED:
                pipelined[t.key] = t.node_name
        reason = job.pending_reason
        pending = [t for t in job.tasks.values() if t.status == TaskStatus.PENDING]
        if pending and not reason:
            errors = sorted(set(job.fit_errors.values()))
            reason = "; ".join(errors) or job.quota_reason or ssn.queue_reasons.get(job.queue, "")
        jobs.append(JobOutcome(
            key=job.uid, queue=job.queue, phase=phase, min_available=job.min_available,
            tasks=len(job.tasks), ready=job.ready_task_num(), reason=reason if pending else "",
        ))
    allocated: dict[str, dict[str, str]] = {}
    for name in ssn.queues:
        total = ssn.space.zeros()
        for job in ssn.jobs.values():
            if job.queue == name:
                for t in job.tasks.values():
                    if t.status & ALLOCATED_STATUS:
                        total += t.resreq
        allocated[name] = {
            n: format_amount(n, float(v)) for n, v in zip(ssn.space.names, total, strict=True) if v
        }
    return SessionOutcome(
        binds=dict(ssn.binds), evictions=list(ssn.evictions), pipelined=pipelined,
        podgroups=podgroups, jobs=jobs, queue_allocated=allocated, orphan_pods=ssn.state.orphan_pods,
    )
