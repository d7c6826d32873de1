"""The one walk that places tasks (Volcano ``allocateResourcesForTasks``), for every job: a plain
job is one SubJob at the cluster top; a job with network topology or SubJob policies has its SubJobs
placed HyperNode by HyperNode by the topology search (``topology/allocate.py``), each with this walk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pumice.scheduler.framework.points import ALLOCATABLE, JOB_READY, PRE_PREDICATE
from pumice.scheduler.framework.replica_run import place_run
from pumice.scheduler.framework.statement import Statement
from pumice.scheduler.model import QueueInfo, TaskInfo
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


def all_pass(fns: list[Callable[..., bool]], *args: Any) -> bool:
    """AND over callbacks (``Session.allocatable`` and ``job_ready`` with their callbacks at hand)."""
    for fn in fns:  # noqa: SIM110 - once per pod: no generator
        if not fn(*args):
            return False
    return True


def first_error(fns: list[Callable[[TaskInfo], str | None]], task: TaskInfo) -> str | None:
    """``Session.pre_predicate`` with its callbacks at hand."""
    for fn in fns:
        err = fn(task)
        if err:
            return err
    return None


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
    # ssn.allocatable / pre_predicate / job_ready, inline (once per pod): the plugins' callbacks,
    # fixed once the session is open
    allocatable = ssn.callbacks(ALLOCATABLE)
    pre_predicate = ssn.callbacks(PRE_PREDICATE)
    ready = ssn.callbacks(JOB_READY)
    # replicas a live ladder answers are placed a run at a time (replica_run.py), for a plain SubJob
    hooks = ssn.run_hooks if track is None and not policy else None
    while not sheet.empty():
        if hooks is not None and not job.fit_errors:
            pick = placer.live_picks(sheet.peek(), subset)
            if pick is not None and place_run(hooks, stmt, job, queue, sheet, pick):
                if all_pass(ready, job):
                    break
                continue
        task = sheet.pop()
        if not all_pass(allocatable, queue, task):
            continue
        if task.role and job.fit_errors and jt.role_failed(sj, task):
            continue  # the predicate-error cache: this role fitted nowhere already
        err = first_error(pre_predicate, task) if pre_predicate else None
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
        if ssn.subjob_ready(sj) if policy else all_pass(ready, job):  # subjob_ready(), inline
            break
    if subjob_ready(ssn, jt, sj) or subjob_pipelined(ssn, jt, sj):
        return stmt
    stmt.discard()
    return None
