"""Sub-jobs (PodGroup ``subGroupPolicy``) and network-topology constraints of one job.

Volcano splits a job's pods into SubJobs: pods matching a policy's ``labelSelector`` are grouped by
the values of its ``matchLabelKeys``; every other pod goes to the *default* SubJob, which carries the
job's own topology and, without any policy, the job's ``minMember`` as its gang size. Soft topology
is turned into hard topology bounded by the cluster top (or by the job's tier for a soft SubJob of a
hard job), as Volcano's session open does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pumice.api.labels import label_selector_or_nothing
from pumice.scheduler.model import ALLOCATED_STATUS, READY_STATUS, JobInfo, TaskInfo, TaskStatus
from pumice.scheduler.topology.tree import HyperNodeTree


def ordered_sum(zeros: np.ndarray, vectors: list[np.ndarray]) -> np.ndarray:
    """``zeros + v0 + v1 + ...`` added one vector at a time, in order (as a loop of ``+=`` would, to
    the bit: a cumulative sum adds in order), in a few numpy calls."""
    if not vectors:
        return zeros.copy()
    out: np.ndarray = np.cumsum(np.stack([zeros, *vectors]), axis=0)[-1]
    return out


@dataclass(slots=True)
class Topology:
    """A NetworkTopologySpec after tier-name translation and soft->hard conversion."""

    hard: bool
    highest_tier: int | None
    soft_converted: bool = False

    @property
    def constrains(self) -> bool:
        """Volcano ``IsHardTopologyMode``: hard and with a usable tier bound."""
        return self.hard and self.highest_tier is not None


def parse_topology(spec: dict[str, Any] | None, tree: HyperNodeTree,
                   bound: Topology | None = None) -> Topology | None:
    """Translate ``highestTierName`` to a tier; soft becomes hard within ``bound`` or the cluster."""
    if spec is None:
        return None
    tier = spec.get("highestTierAllowed")
    if tier is None and spec.get("highestTierName"):
        tier = tree.tier_names.get(spec["highestTierName"])  # unknown name: constraint not applied
    if (spec.get("mode") or "hard") == "soft":
        if bound is not None and bound.constrains and not bound.soft_converted:
            return Topology(True, bound.highest_tier, soft_converted=True)
        return Topology(True, tree.top.tier, soft_converted=True)
    return Topology(True, int(tier) if tier is not None else None)


@dataclass(eq=False)
class SubJob:
    uid: str
    gid: str
    job: JobInfo
    min_available: int
    topology: Topology | None
    match_index: int = 0
    tasks: list[TaskInfo] = field(default_factory=list)
    #: Smallest HyperNode holding every placed task (in memory only, as in Volcano).
    allocated_hypernode: str = ""
    #: The last ``min_resources``: (the tasks' statuses then, the sum).
    _min_resources: tuple[list[int], np.ndarray] | None = field(default=None, repr=False)

    @property
    def hard(self) -> bool:
        return self.topology is not None and self.topology.constrains

    def _count(self, statuses: int) -> int:
        return sum(1 for t in self.tasks if t.status & statuses)

    def _best_effort_pending(self) -> int:
        return sum(1 for t in self.tasks if t.status == TaskStatus.PENDING and t.best_effort)

    def is_ready(self) -> bool:
        return self._count(READY_STATUS) + self._best_effort_pending() >= self.min_available

    def is_pipelined(self) -> bool:
        return (self._count(READY_STATUS | TaskStatus.PIPELINED) + self._best_effort_pending()
                >= self.min_available)

    def min_resources(self, zeros: np.ndarray) -> np.ndarray:
        """Volcano ``SubJobInfo.GetMinResources``: Σ InitResreq of the pending tasks (kept while
        no task's status changes: a job's turn asks once per dry run)."""
        statuses = [t.status for t in self.tasks]
        found = self._min_resources
        if found is None or found[0] != statuses:
            pending = [t.init_resreq for t in self.tasks if t.status == TaskStatus.PENDING]
            found = self._min_resources = (statuses, ordered_sum(zeros, pending))
        return found[1].copy()


@dataclass(eq=False)
class JobTopology:
    """A job's SubJobs and network topology (a plain job: its one default SubJob, no topology)."""

    job: JobInfo
    topology: Topology | None
    subjobs: dict[str, SubJob]
    task_subjob: dict[str, SubJob]
    min_subjobs: dict[str, int]
    has_policy: bool
    allocated_hypernode: str = ""

    @classmethod
    def plain(cls, job: JobInfo) -> JobTopology:
        """A job without topology and SubJob policies: one SubJob of all its tasks (what
        :func:`build_job_topology` makes of it, without a HyperNode tree). Its ``task_subjob`` is
        left empty (every task is in the one SubJob): the allocate walk, its only user, needs no
        map, and every plain job of a session would hold one."""
        sj = SubJob(job.uid, job.uid, job, job.min_available, None, tasks=list(job.tasks.values()))
        return cls(job, None, {sj.uid: sj}, {}, {}, False)

    def role_failed(self, sj: SubJob, task: TaskInfo) -> bool:
        """Volcano ``TaskHasFitErrors(subJob, task)``: a task of the same role in the SubJob found no
        node this session (the predicate-error cache: the role is not tried again)."""
        if not task.role:
            return False
        job = self.job
        if len(self.subjobs) == 1:
            return job.task_has_fit_errors(task)
        tasks = job.tasks
        return any(self.task_subjob.get(uid) is sj and tasks[uid].role == task.role
                   for uid in job.fit_errors if uid in tasks)

    def need_continue(self, sj: SubJob) -> bool:
        """Volcano ``NeedContinueAllocating(subJob)``: may other tasks be tried after one found no node?"""
        job = self.job
        if job.min_available == len(job.tasks) or sj.min_available >= len(sj.tasks):
            return False
        if self.has_policy:
            return True
        return job.need_continue_allocating()

    @property
    def hard(self) -> bool:
        return self.topology is not None and self.topology.constrains

    def contains_hard(self) -> bool:
        return self.hard or any(sj.hard for sj in self.subjobs.values())

    def needs_topology_path(self) -> bool:
        """Volcano: ``ContainsHardTopology() || ContainsSubJobPolicy()``."""
        return self.has_policy or self.contains_hard()

    def with_topology(self) -> bool:
        return self.topology is not None or any(sj.topology is not None for sj in self.subjobs.values())

    def subjobs_ready(self, condition: Callable[[SubJob], bool]) -> bool:
        """Every policy has at least ``minSubGroups`` SubJobs satisfying ``condition``."""
        counts: dict[str, int] = {}
        for sj in self.subjobs.values():
            if condition(sj):
                counts[sj.gid] = counts.get(sj.gid, 0) + 1
        return all(counts.get(gid, 0) >= need for gid, need in self.min_subjobs.items() if need > 0)

    def subjobs_valid(self) -> bool:
        """Volcano ``CheckSubJobValid``: every policy has at least ``minSubGroups`` SubJobs."""
        counts: dict[str, int] = {}
        for sj in self.subjobs.values():
            counts[sj.gid] = counts.get(sj.gid, 0) + 1
        return all(counts.get(gid, 0) >= need for gid, need in self.min_subjobs.items())

    def min_resources(self) -> np.ndarray:
        """Volcano ``JobInfo.GetMinResources``: the PodGroup's minResources (empty if unset)."""
        job = self.job
        return job.min_resources if job.min_resources is not None else job.resources.zeros()


def _match_values(policy: dict[str, Any], pod: dict[str, Any]) -> list[str] | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    selector = policy.get("labelSelector")
    if selector is not None and not label_selector_or_nothing(selector).matches(labels):
        return None
    values = []
    for key in policy.get("matchLabelKeys") or []:
        value = labels.get(key)
        if not value:
            return None
        values.append(str(value))
    return values


def build_job_topology(job: JobInfo, tree: HyperNodeTree) -> JobTopology:
    """SubJobs of ``job`` with converted topologies and the allocated HyperNodes recovered."""
    spec = job.pod_group.get("spec") or {}
    policies: list[dict[str, Any]] = spec.get("subGroupPolicy") or []
    job_topology = parse_topology(job.network_topology, tree)
    subjobs: dict[str, SubJob] = {}
    task_subjob: dict[str, SubJob] = {}

    def default() -> SubJob:
        sj = subjobs.get(job.uid)
        if sj is None:
            size = 1 if policies else job.min_available
            sj = subjobs[job.uid] = SubJob(job.uid, job.uid, job, size,
                                           parse_topology(job.network_topology, tree, job_topology))
        return sj

    for task in sorted(job.tasks.values(), key=lambda t: t.uid):
        chosen: SubJob | None = None
        for policy in policies:
            values = _match_values(policy, task.pod)
            if not values:  # Volcano only groups pods with at least one match value
                continue
            name = policy.get("name", "")
            uid = f"{job.uid}/{name}-{'-'.join(values)}"
            chosen = subjobs.get(uid)
            if chosen is None:
                size = policy.get("subGroupSize")
                index = int(values[0]) if values[0].lstrip("-").isdigit() else 0
                chosen = subjobs[uid] = SubJob(
                    uid, f"{job.uid}/{name}", job, int(size) if size is not None else 1,
                    parse_topology(policy.get("networkTopology"), tree, job_topology), index)
            break
        if chosen is None:
            chosen = default()
        chosen.tasks.append(task)
        task_subjob[task.uid] = chosen
    min_subjobs = {f"{job.uid}/{p.get('name', '')}": int(p.get("minSubGroups") or 0) for p in policies}
    jt = JobTopology(job, job_topology, subjobs, task_subjob, min_subjobs, bool(policies))
    _recover_allocated(jt, tree)
    return jt


def _recover_allocated(jt: JobTopology, tree: HyperNodeTree) -> None:
    """Volcano recovers AllocatedHyperNode at session open from where placed pods run: per SubJob
    with topology, and for the job the LCA of them (of all its placed pods if the job has topology)."""
    for sj in jt.subjobs.values():
        placed = np.array([t.node for t in sj.tasks if t.status & ALLOCATED_STATUS and t.node >= 0],
                          dtype=np.int64)
        if not len(placed):
            continue
        found = tree.hypernode_of_nodes(placed)
        if sj.topology is not None:
            sj.allocated_hypernode = found
        if sj.topology is not None or jt.topology is not None:
            jt.allocated_hypernode = tree.lca(jt.allocated_hypernode, found)
