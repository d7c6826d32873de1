"""Per-session topology state, and how the session combines the HyperNode extension points.

The tree and each job's SubJobs are built once per session, on first use, and kept on the session
object (``topology_of(ssn)``), so the allocate action and the network-topology-aware plugin share
them without the framework knowing about HyperNodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pumice.scheduler.model import JobInfo
from pumice.scheduler.topology.subjobs import JobTopology, SubJob, Topology, build_job_topology
from pumice.scheduler.topology.tree import HyperNodeInfo, HyperNodeTree

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session
    from pumice.scheduler.snapshot import ClusterState

PURPOSE_ALLOCATE, PURPOSE_EVICT = "allocate", "evict"
_ATTR = "_pumice_topology"


@dataclass(slots=True)
class SearchRequest:
    """What a HyperNodeGradientFn is asked about: a job or one of its SubJobs."""

    topology: Topology | None
    allocated_hypernode: str
    min_resource: np.ndarray


#: HyperNodeGradientFn(request, search root, purpose) -> HyperNodes grouped by tier, lowest first.
GradientFn = Callable[[SearchRequest, HyperNodeInfo, str], "list[list[HyperNodeInfo]] | None"]
#: HyperNodeOrderFn(subJob, candidates) -> score per HyperNode name.
HyperNodeOrderFn = Callable[[SubJob, list[HyperNodeInfo]], dict[str, float]]


@dataclass(eq=False)
class TopologyContext:
    tree: HyperNodeTree
    jobs: dict[str, JobTopology] = field(default_factory=dict)
    #: Volcano's ``task.JobAllocatedHyperNode``: the SubJob's HyperNode when the task was scored.
    task_hypernode: dict[str, str] = field(default_factory=dict)
    #: Per job: (allocate run, its worksheet), kept across the job's turns in one allocate run.
    sheets: dict[str, tuple[object, Any]] = field(default_factory=dict)
    #: Per job: (HyperNode chosen for the job, {SubJob uid: its new allocated HyperNode}).
    decisions: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    #: Filled by the network-topology-aware plugin: per-HyperNode resource sums.
    resources: Any = None

    def job(self, job: JobInfo) -> JobTopology:
        jt = self.jobs.get(job.uid)
        if jt is None:
            jt = self.jobs[job.uid] = build_job_topology(job, self.tree)
        return jt


def _tree(state: ClusterState) -> HyperNodeTree:
    """The HyperNode tree of a cluster state; a state kept across sessions (the live cache) keeps
    its tree until its node table or HyperNode list is replaced."""
    cached = getattr(state, _ATTR, None)
    if cached is not None and cached[0] is state.nodes and cached[1] is state.hypernodes:
        return cached[2]
    tree = HyperNodeTree.build(state.hypernodes, state.nodes)
    setattr(state, _ATTR, (state.nodes, state.hypernodes, tree))
    return tree


def topology_of(ssn: Session) -> TopologyContext:
    """The session's topology state, built on first use."""
    ctx: TopologyContext | None = getattr(ssn, _ATTR, None)
    if ctx is None:
        ctx = TopologyContext(_tree(ssn.state))
        setattr(ssn, _ATTR, ctx)
    return ctx


def hypernode_gradients(ssn: Session, request: SearchRequest, root: HyperNodeInfo,
                        purpose: str = PURPOSE_ALLOCATE) -> list[list[HyperNodeInfo]]:
    """The first enabled HyperNodeGradientFn answers; without one the search root is the only candidate."""
    for fn in ssn._all("hypernode_gradient"):
        return fn(request, root, purpose) or []
    return [[root]]


def hypernode_scores(ssn: Session, subjob: SubJob, candidates: list[HyperNodeInfo]) -> dict[str, float]:
    """Σ over enabled HyperNodeOrderFns (Volcano ``PrioritizeHyperNodes``)."""
    total = {hn.name: 0.0 for hn in candidates}
    for fn in ssn._all("hypernode_order"):
        for name, score in fn(subjob, candidates).items():
            if name in total:
                total[name] += score
    return total


def best_of(scores: dict[str, float]) -> tuple[str, float]:
    """Highest score; ties go to the lowest name (Volcano picks at random)."""
    name = min(scores, key=lambda n: (-scores[n], n))
    return name, scores[name]
