"""Per-session topology state: the HyperNode tree and each job's SubJobs.

Built once per session, on first use, and kept on the session (``ssn.topology``, through
``topology_of(ssn)``), so the allocate action and the network-topology-aware plugin share them. The
session combines the HyperNode extension points (``Session.hypernode_gradients``,
``Session.hypernode_scores``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from pumice.scheduler.model import JobInfo
from pumice.scheduler.topology.subjobs import JobTopology, SubJob, Topology, build_job_topology
from pumice.scheduler.topology.tree import HyperNodeInfo, HyperNodeTree

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session
    from pumice.scheduler.snapshot import ClusterState
    from pumice.scheduler.topology.resources import HyperNodeResources
    from pumice.scheduler.topology.worksheet import JobSheet

PURPOSE_ALLOCATE, PURPOSE_EVICT = "allocate", "evict"


@dataclass(slots=True)
class SearchRequest:
    """What a HyperNodeGradientFn is asked about: a job or one of its SubJobs."""

    topology: Topology | None
    allocated_hypernode: str
    min_resource: np.ndarray


@dataclass(slots=True)
class SearchShortcuts:
    """The plugins offering :class:`HyperNodeSearchShortcuts` to topology allocate, if any: ``order``
    is the only enabled HyperNodeOrderFn's; ``alone``, the same plugin if it is also the first
    HyperNodeGradientFn (then its ``alone_bounds`` may answer for both)."""

    order: HyperNodeSearchShortcuts | None = None
    alone: HyperNodeSearchShortcuts | None = None


@dataclass(eq=False)
class TopologyContext:
    tree: HyperNodeTree
    jobs: dict[str, JobTopology] = field(default_factory=dict)
    #: Volcano's ``task.JobAllocatedHyperNode``: the SubJob's HyperNode when the task was scored.
    task_hypernode: dict[str, str] = field(default_factory=dict)
    #: Per job: (allocate run, its worksheet), kept across the job's turns in one allocate run.
    sheets: dict[str, tuple[object, JobSheet]] = field(default_factory=dict)
    #: Per job: (HyperNode chosen for the job, {SubJob uid: its new allocated HyperNode}).
    decisions: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    #: Filled by the network-topology-aware plugin: per-HyperNode resource sums.
    resources: HyperNodeResources | None = None
    #: Which plugin offers topology allocate its search shortcuts (found on first use).
    shortcuts: SearchShortcuts | None = None

    def job(self, job: JobInfo) -> JobTopology:
        jt = self.jobs.get(job.uid)
        if jt is None:
            jt = self.jobs[job.uid] = build_job_topology(job, self.tree)
        return jt


def _tree(state: ClusterState) -> HyperNodeTree:
    """The HyperNode tree of a cluster state; a state kept across sessions (the live cache) keeps
    its tree until its node table or HyperNode list is replaced."""
    tree = state.hypernode_tree
    if tree is None or not tree.built_from(state.hypernodes, state.nodes):
        tree = state.hypernode_tree = HyperNodeTree.build(state.hypernodes, state.nodes)
    return tree


def topology_of(ssn: Session) -> TopologyContext:
    """The session's topology state, built on first use."""
    ctx = ssn.topology
    if ctx is None:
        ctx = ssn.topology = TopologyContext(_tree(ssn.state))
    return ctx


def best_of(scores: dict[str, float]) -> tuple[str, float]:
    """Highest score; ties go to the lowest name (Volcano picks at random)."""
    name = min(scores, key=lambda n: (-scores[n], n))
    return name, scores[name]


@runtime_checkable
class HyperNodeSearchShortcuts(Protocol):
    """A plugin capability, for topology allocate's search (optional).

    A plugin that is the only enabled HyperNodeOrderFn and has this capability promises: its order
    scores each HyperNode by itself, plus a bonus below one point per 100 only for HyperNodes tied
    at the best score. Candidates may then be dry-run best score first, the search stopped at the
    first score level that has a solution. If it is also the first HyperNodeGradientFn,
    ``alone_bounds`` gives, for a job's only SubJob and the candidates of a gradient, what the
    gradient and the order would: per candidate ``h``, its score alone if the SubJob's gradient in
    ``h`` is exactly ``[[h]]``, -inf if it is empty, +inf otherwise; None when the SubJob already
    runs somewhere (not answered)."""

    def alone_bounds(self, req: SearchRequest, sj: SubJob, candidates: list[HyperNodeInfo]) -> list[float] | None:
        ...
