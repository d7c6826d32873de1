"""What a session decided, in the form ``pumice schedule`` prints and the store writes back."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pumice.api.quantity import format_quantity
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.usage import closing_allocated
from pumice.scheduler.model import ALLOCATED_STATUS, SCHEDULED_STATUS, JobInfo, TaskStatus
from pumice.scheduler.resources import MEMORY
from pumice.scheduler.topology import CLUSTER_TOP, topology_of


@dataclass
class JobOutcome:
    key: str
    queue: str
    phase: str
    min_available: int
    tasks: int
    ready: int
    reason: str = ""
    #: Lowest HyperNode holding every placed pod of the job ("" without HyperNodes or placed pods;
    #: the virtual cluster top when they span parentless HyperNodes or nodes in none).
    hypernode: str = ""


@dataclass
class SessionStats:
    """How a session went, for the metrics: wall seconds of its parts, the preempt action's counters, and the
    fair-share plugin's view of every queue (its attributes, never changed once the session is over)."""

    open_seconds: float = 0.0
    seconds: float = 0.0
    actions: list[tuple[str, float]] = field(default_factory=list)
    #: (plugin, "OnSessionOpen" or "OnSessionClose", seconds)
    plugins: list[tuple[str, str, float]] = field(default_factory=list)
    preemption_attempts: int = 0
    preemption_victims: int | None = None
    #: The resource names, in the order of the vectors below.
    resources: tuple[str, ...] = ()
    #: queue name -> the proportion/capacity plugin's attributes (``deserved``, ``allocated``, ``request``,
    #: ``capability``, ``real_capability`` vectors, ``weight``), empty without either plugin.
    queues: dict[str, Any] = field(default_factory=dict)
    #: queue name -> spec.weight, for every queue of the session.
    weights: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class QueueAttrsOffer(Protocol):
    """A plugin capability (optional): the per-queue attributes it computed (proportion, capacity)."""

    attrs: dict[str, Any]


def session_stats(ssn: Session, open_seconds: float, actions: list[tuple[str, float]]) -> SessionStats:
    """The stats of a closed session (its plugins still in place)."""
    queues: dict[str, Any] = {}
    for name in ("proportion", "capacity"):
        plugin = ssn.plugins.get(name)
        if isinstance(plugin, QueueAttrsOffer):
            queues = plugin.attrs
            break
    return SessionStats(
        open_seconds=open_seconds, actions=actions, plugins=ssn.plugin_seconds,
        preemption_attempts=ssn.preemption_attempts, preemption_victims=ssn.preemption_victims,
        resources=tuple(ssn.space.names), queues=queues, weights={n: q.weight for n, q in ssn.queues.items()},
    )


@dataclass
class SessionOutcome:
    binds: dict[str, str]
    evictions: list[str]
    pipelined: dict[str, str]
    podgroups: dict[str, dict[str, Any]]
    jobs: list[JobOutcome]
    queue_allocated: dict[str, dict[str, str]]
    node_scores: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Pending pods of the session's jobs and why each did not get a node (PodScheduled=False message).
    pending_pods: dict[str, str] = field(default_factory=dict)
    orphan_pods: list[str] = field(default_factory=list)
    #: Annotations to write on a pod before its bind (deviceshare's GPU assignment), by pod key.
    pod_annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Timings and figures for the metrics (``run_session`` fills it in).
    stats: SessionStats | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "binds": self.binds,
            "evictions": self.evictions,
            "pipelined": self.pipelined,
            "podgroups": self.podgroups,
        }
        if self.node_scores:
            out["node_scores"] = self.node_scores
        if self.pod_annotations:
            out["pod_annotations"] = self.pod_annotations
        hypernodes = {j.key: j.hypernode for j in self.jobs if j.hypernode}
        if hypernodes:
            out["hypernodes"] = hypernodes
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


def exact_quantity(name: str, value: float) -> str:
    """A resource amount as an exact Kubernetes quantity (for status fields, not for people)."""
    if name == MEMORY:
        return format_quantity(round(value))
    return format_quantity(round(value), milli=True)


def queue_allocated(ssn: Session) -> dict[str, dict[str, str]]:
    """Volcano's ``updateQueueStatus``: what each queue's jobs hold, rolled up to every ancestor;
    ``pods`` counts the allocated pods (the queue admission rules read it)."""
    space = ssn.space
    totals = {name: space.zeros() for name in ssn.queues}
    pods = dict.fromkeys(ssn.queues, 0)
    for queue, (allocated, n) in closing_allocated(ssn).items():
        name, seen = queue, set()
        while name in ssn.queues and name not in seen:  # the queue and every ancestor, up to root
            seen.add(name)
            totals[name] += allocated
            pods[name] += n
            name = ssn.queues[name].parent or ("root" if name != "root" else "")
    names = tuple(space.names)
    return {name: dict(_allocated_status(names, total.tobytes(), pods[name])) for name, total in totals.items()}


@functools.lru_cache(maxsize=1024)
def _allocated_status(names: tuple[str, ...], total: bytes, pods: int) -> dict[str, str]:
    """A queue's ``status.allocated`` (the same few totals recur from cycle to cycle)."""
    out = {n: exact_quantity(n, v) for n, v in zip(names, np.frombuffer(total).tolist(), strict=True) if v}
    if pods:
        out["pods"] = str(pods)
    return out


def _hypernode_finder(ssn: Session) -> Any:
    """job -> lowest HyperNode holding all its placed pods; None when the cluster has no HyperNodes."""
    if not ssn.state.hypernodes:
        return None
    tree = topology_of(ssn).tree
    if not tree.tiers:
        return None
    lowest = tree.lowest

    def find(job: JobInfo) -> str:
        found = ""
        for row in {int(lowest[t.node]) for t in job.tasks.values() if t.status & ALLOCATED_STATUS and t.node >= 0}:
            if row < 0:
                return CLUSTER_TOP  # a node in no HyperNode: only the virtual top holds it
            found = tree.lca(found, tree.rows[row].name)
        return found

    return find


def summarize(ssn: Session) -> SessionOutcome:
    find_hypernode = _hypernode_finder(ssn)
    podgroups: dict[str, dict[str, Any]] = {}
    jobs: list[JobOutcome] = []
    pipelined: dict[str, str] = {}
    pending_pods: dict[str, str] = {}
    dirty = ssn.state.dirty_jobs
    for job in sorted(ssn.reportable(), key=lambda j: j.uid):
        if (dirty is not None and job.uid not in dirty and job.uid not in ssn.touched
                and not job.count(TaskStatus.PENDING) and job.phase != "Pending"):
            continue  # nothing happened to it since it was last reported
        phase = podgroup_phase(job)
        podgroups[job.uid] = {
            "phase": phase,
            "running": job.count(TaskStatus.RUNNING),
            "succeeded": job.count(TaskStatus.SUCCEEDED),
            "failed": job.count(TaskStatus.FAILED),
        }
        if job.waiting:
            for t in job.tasks.values():
                if t.status == TaskStatus.PIPELINED:
                    pipelined[t.key] = t.node_name
        reason = job.pending_reason
        pending = ([t for t in job.tasks.values() if t.status == TaskStatus.PENDING]
                   if job.count(TaskStatus.PENDING) else [])
        if pending and not reason:
            errors = sorted(set(job.fit_errors.values()))
            reason = "; ".join(errors) or job.quota_reason or ssn.queue_reason(job.queue)
        for t in pending:
            pending_pods[t.key] = job.fit_errors.get(t.uid) or reason
        # a job waits if it has pending pods, or if it was not admitted (its pods are not created
        # before its PodGroup leaves Pending, so there may be none to speak for it)
        waiting = bool(pending) or phase == "Pending"
        jobs.append(JobOutcome(
            key=job.uid, queue=job.queue, phase=phase, min_available=job.min_available,
            tasks=len(job.tasks), ready=job.ready_task_num(), reason=reason if waiting else "",
            hypernode=find_hypernode(job) if find_hypernode is not None else "",
        ))
    # Volcano leaves out jobs whose queue does not exist: say so
    state = ssn.state
    orphans = (sorted((j for j in state.all_jobs.values() if j.uid not in state.jobs), key=lambda j: j.uid)
               if len(state.all_jobs) > len(state.jobs) else [])
    for job in orphans:
        jobs.append(JobOutcome(
            key=job.uid, queue=job.queue, phase=job.phase, min_available=job.min_available,
            tasks=len(job.tasks), ready=job.ready_task_num(),
            reason=f"queue {job.queue!r} does not exist: the scheduler ignores the job until it does",
        ))
    allocated = queue_allocated(ssn)
    return SessionOutcome(
        binds=dict(ssn.binds), evictions=list(ssn.evictions), pipelined=pipelined,
        podgroups=podgroups, jobs=jobs, queue_allocated=allocated, orphan_pods=ssn.state.orphan_pods,
        pending_pods=pending_pods,
        pod_annotations={k: v for k, v in ssn.bind_annotations.items() if k in ssn.binds},
    )
