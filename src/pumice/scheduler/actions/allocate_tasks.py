"""The one walk that places tasks (Volcano ``allocateResourcesForTasks``), for every job: a plain
job is one SubJob at the cluster top; a job with network topology or SubJob policies has its SubJobs
placed HyperNode by HyperNode by the topology search (``topology/allocate.py``), each with this walk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.model import QueueInfo
from pumice.scheduler.topology.subjobs import JobTopology, SubJob
from pumice.scheduler.topology.tree import CLUSTER_TOP
from pumice.scheduler.topology.worksheet import TaskSheet

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session
    from pumice.scheduler.topology.context import TopologyContext
    from pumice.scheduler.topology.tree import HyperNodeInfo


def subjob_ready(ssn: Session, jt: JobTopology, sj: SubJob) -> bool:
    """Volcano ``SubJobReady``: the job's readiness without SubJob policies, else the SubJob's."""
    return ssn.subjob_ready(sj) if jt.has_policy else ssn.job_ready(jt.job)


def subjob_pipelined(ssn: Session, jt: JobTopology, sj: SubJob) -> bool:
    return ssn.subjob_pipelined(sj) if jt.has_policy else ssn.job_pipelined(jt.job)


def allocate_tasks(ssn: Session, jt: JobTopology, sj: SubJob, sheet: TaskSheet, queue: QueueInfo,
                   hn: HyperNodeInfo | None = None, ctx: TopologyContext | None = None) -> Statement | None:
    """Place ``sheet``'s tasks (of SubJob ``sj`` of ``jt``) on the leaf nodes of HyperNode ``hn``
    (None: the cluster top, every node) until the SubJob is ready; the statement if it ended ready
    or pipelined, else None (undone). ``ctx``: the session's topology state, for a SubJob with
    network topology (it records the SubJob's HyperNode as each task is scored)."""
    job = jt.job
    subset = None if hn is None or hn.name == CLUSTER_TOP else hn.nodes
    if subset is not None and len(subset) == 0:
        return None
    track = ctx if sj.topology is not None else None
    policy = jt.has_policy
    placer = ssn.placer
    stmt = Statement(ssn)
    allocated = sj.allocated_hypernode
    while not sheet.empty():
        task = sheet.pop()
        if not ssn.allocatable(queue, task):
            continue
        if task.role and job.fit_errors and jt.role_failed(sj, task):
            continue  # the predicate-error cache: this role fitted nowhere already
        err = ssn.pre_predicate(task)
        if err:
            job.fit_errors[task.uid] = err
            if jt.need_continue(sj):
                continue
            break
        if track is not None:
            track.task_hypernode[task.uid] = allocated
        choice = placer.best_node(task, subset=subset, depth=sheet.shapes[task.shape] + 1)
        if choice is None:
            where = "" if hn is None or subset is None else f" in HyperNode {hn.name}"
            job.fit_errors[task.uid] = placer.explain(task, subset) + where
            if jt.need_continue(sj):
                continue
            break
        if choice.fits_idle:
            stmt.allocate(task, choice.node)
        else:
            stmt.pipeline(task, choice.node)
        if track is not None:
            lowest = track.tree.lowest_hypernode_of_node(choice.node)
            if lowest:
                allocated = track.tree.lca(lowest, allocated)
        if ssn.subjob_ready(sj) if policy else ssn.job_ready(job):  # subjob_ready(), inline: once a pod
            break
    if subjob_ready(ssn, jt, sj) or subjob_pipelined(ssn, jt, sj):
        return stmt
    stmt.discard()
    return None
