"""allocate for jobs with hard network topology or SubJob policies (Volcano ``allocateForJob``).

Two-level search: the job's candidate HyperNodes come in gradients (lowest tier first); each
candidate of a gradient is *dry-run*: its SubJobs are placed, each SubJob in turn searching its own
gradients inside the job's HyperNode, with the full predicates restricted to the HyperNode's leaf
nodes. Every dry run is rolled back; the best solution of the first gradient that has one is
replayed. Later pods stay under the highest allowed ancestor of the HyperNode already used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pumice.scheduler.actions.allocate_tasks import allocate_tasks
from pumice.scheduler.framework.points import HYPERNODE_GRADIENT, HYPERNODE_ORDER
from pumice.scheduler.framework.statement import ALLOCATE, PIPELINE, Statement
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from pumice.scheduler.topology.context import (
    PURPOSE_ALLOCATE,
    HyperNodeSearchShortcuts,
    SearchRequest,
    SearchShortcuts,
    TopologyContext,
    best_of,
    topology_of,
)
from pumice.scheduler.topology.reason import no_fit_reason
from pumice.scheduler.topology.subjobs import JobTopology, SubJob
from pumice.scheduler.topology.tree import HyperNodeInfo
from pumice.scheduler.topology.worksheet import JobSheet, TaskSheet, build_job_sheet

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session

Ops = list[tuple[str, TaskInfo, int]]


# --- gang checks with SubJobs (gang plugin semantics, flags as configured) ----------------------
def gang_flag(ssn: Session, flag: str) -> bool:
    """Whether the gang plugin is on and its ``flag`` is enabled: Volcano's gang checks a job's
    SubJobs inside its JobReadyFn / JobPipelinedFn (``CheckSubJobReady``)."""
    if "gang" not in ssn.plugins:
        return False
    opt = ssn.conf.plugin("gang")
    return opt is not None and opt.enabled(flag)


def job_ready(ssn: Session, jt: JobTopology) -> bool:
    if not ssn.job_ready(jt.job):
        return False
    return not (jt.has_policy and gang_flag(ssn, "enableJobReady")) or jt.subjobs_ready(SubJob.is_ready)


def job_pipelined(ssn: Session, jt: JobTopology) -> bool:
    if not ssn.job_pipelined(jt.job):
        return False
    return not (jt.has_policy and gang_flag(ssn, "enableJobPipelined")) or jt.subjobs_ready(SubJob.is_pipelined)


def _reset_fit_errors(job: JobInfo, sj: SubJob | None = None) -> None:
    if sj is None:
        job.fit_errors.clear()
        return
    for t in sj.tasks:
        job.fit_errors.pop(t.uid, None)


# --- statements: dry runs are saved as operations and replayed -------------------------------
def _save(stmts: list[Statement]) -> Ops:
    return [(op, task, node) for s in stmts for op, task, node, _ in s.operations if op in (ALLOCATE, PIPELINE)]


def _replay(ssn: Session, ops: Ops) -> Statement:
    stmt = Statement(ssn)
    for op, task, node in ops:
        if op == ALLOCATE:
            stmt.allocate(task, node)
        else:
            stmt.pipeline(task, node)
    return stmt


# --- the three levels ---------------------------------------------------------------------------
def _request(jt: JobTopology, sj: SubJob | None) -> SearchRequest:
    if sj is None:
        return SearchRequest(jt.topology, jt.allocated_hypernode, jt.min_resources())
    return SearchRequest(sj.topology, sj.allocated_hypernode, sj.min_resources(jt.job.resources.zeros()))


def _shortcuts(ssn: Session) -> SearchShortcuts:
    """Which plugin offers topology allocate search shortcuts (looked up once per session)."""
    ctx = topology_of(ssn)
    found = ctx.shortcuts
    if found is None:
        found = ctx.shortcuts = SearchShortcuts()
        orders = ssn.registered(HYPERNODE_ORDER)
        plugin = ssn.plugins.get(orders[0][0]) if len(orders) == 1 else None
        if isinstance(plugin, HyperNodeSearchShortcuts):
            # the plugin of the only enabled HyperNodeOrderFn offers them
            found.order = plugin
            grads = ssn.registered(HYPERNODE_GRADIENT)
            if grads and grads[0][0] == orders[0][0]:  # and it is the first HyperNodeGradientFn
                found.alone = plugin
    return found


def _ties_only_at_max(ssn: Session) -> bool:
    """Whether the HyperNode order scores a HyperNode by itself and adds a bonus (at most 1 point
    per 100) only to HyperNodes tied at the best score (see :class:`HyperNodeSearchShortcuts`):
    then the winner is among the best-scored successful candidates, so candidates may be dry-run
    best score first and the search stopped at the first score level with a solution."""
    return _shortcuts(ssn).order is not None


def _dry_run_subjob(ssn: Session, ctx: TopologyContext, jt: JobTopology, sj: SubJob, sheet: TaskSheet,
                    hn: HyperNodeInfo, queue: QueueInfo) -> tuple[Statement | None, TaskSheet]:
    _reset_fit_errors(jt.job, sj)
    copy = sheet.clone()
    stmt = allocate_tasks(ssn, jt, sj, copy, queue, hn, ctx)
    if stmt is not None and not len(stmt):
        stmt = None
    return stmt, copy


def allocate_subjob(ssn: Session, ctx: TopologyContext, jt: JobTopology, sj: SubJob, sheet: TaskSheet,
                    hn_for_job: HyperNodeInfo, queue: QueueInfo,
                    decisions: dict[str, str]) -> tuple[Statement | None, float]:
    """Volcano ``allocateForSubJob``: best HyperNode of the SubJob's first gradient with a solution.

    Volcano dry-runs every candidate of a gradient, rolls each back, scores the successful ones and
    replays the best. HyperNode scores do not depend on the dry runs (they are taken after the roll
    backs), so the same choice is made with less work: a lone candidate is scored first and its dry
    run kept; with the network-topology-aware order, candidates are dry-run best score first and the
    search stops at the first score level that has a solution. The job's predicate errors are left
    as Volcano's last dry run of the gradient leaves them (it is re-run when it was skipped).
    """
    if sheet.empty():
        return None, 0.0
    ordered = _ties_only_at_max(ssn)
    for gradient in ssn.hypernode_gradients(_request(jt, sj), hn_for_job, PURPOSE_ALLOCATE):
        if len(gradient) == 1:
            hn = gradient[0]
            score = ssn.hypernode_scores(sj, [hn])[hn.name]
            final, remaining = _dry_run_subjob(ssn, ctx, jt, sj, sheet, hn, queue)
            if final is None:
                continue
            return _subjob_chosen(ctx, sj, sheet, decisions, hn.name, remaining, final, score)
        solutions: dict[str, tuple[Ops, TaskSheet]] = {}
        if ordered:
            alone = {h.name: ssn.hypernode_scores(sj, [h])[h.name] for h in gradient}
            levels = sorted(set(alone.values()), reverse=True)
            last_run = ""
            for level in levels:
                for hn in gradient:
                    if alone[hn.name] != level:
                        continue
                    stmt, copy = _dry_run_subjob(ssn, ctx, jt, sj, sheet, hn, queue)
                    last_run = hn.name
                    if stmt is not None:
                        solutions[hn.name] = (_save([stmt]), copy)
                        stmt.discard()
                if solutions:
                    break
            if last_run != gradient[-1].name:
                _dry_run_discarded(ssn, ctx, jt, sj, sheet, gradient[-1], queue)
        else:
            for hn in gradient:
                stmt, copy = _dry_run_subjob(ssn, ctx, jt, sj, sheet, hn, queue)
                if stmt is not None:
                    solutions[hn.name] = (_save([stmt]), copy)
                    stmt.discard()
        if not solutions:
            continue
        candidates = [ctx.tree.infos[name] for name in sorted(solutions)]
        best, score = best_of(ssn.hypernode_scores(sj, candidates))
        ops, remaining = solutions[best]
        return _subjob_chosen(ctx, sj, sheet, decisions, best, remaining, _replay(ssn, ops), score)
    return None, 0.0


def _dry_run_discarded(ssn: Session, ctx: TopologyContext, jt: JobTopology, sj: SubJob, sheet: TaskSheet,
                       hn: HyperNodeInfo, queue: QueueInfo) -> None:
    """A dry run for its side effects only (the predicate errors it leaves on the job)."""
    stmt, _ = _dry_run_subjob(ssn, ctx, jt, sj, sheet, hn, queue)
    if stmt is not None:
        stmt.discard()


def _subjob_chosen(ctx: TopologyContext, sj: SubJob, sheet: TaskSheet, decisions: dict[str, str], best: str,
                   remaining: TaskSheet, final: Statement, score: float) -> tuple[Statement, float]:
    sj.allocated_hypernode = ctx.tree.lca(sj.allocated_hypernode, best)
    sheet.take(remaining)
    decisions[sj.uid] = sj.allocated_hypernode
    return final, score


def _job_sheet(ssn: Session, ctx: TopologyContext, jt: JobTopology, run: TaskSheet | None) -> JobSheet:
    """The job's worksheet for this allocate run (``run``: the action's sheet of the job, unique to
    the run, listing its schedulable tasks in task order: they need no sorting again)."""
    found = ctx.sheets.get(jt.job.uid)
    if found is None or found[0] is not run:
        sheet = build_job_sheet(ssn, jt, run.tasks if run is not None else None)
        found = ctx.sheets[jt.job.uid] = (run, sheet)
    return found[1]


@dataclass(slots=True)
class _JobRun:
    """One dry run of a job in a HyperNode: its statements stay applied until discarded."""

    stmts: list[Statement]
    remaining: JobSheet
    total: float
    decisions: dict[str, str]
    #: allocate_subjob calls that placed something (1 for a simple gang: see ``_bounds``).
    calls: int
    solution: bool

    def discard(self) -> None:
        for stmt in reversed(self.stmts):
            stmt.discard()


def _dry_run_job(ssn: Session, ctx: TopologyContext, jt: JobTopology, sheet: JobSheet, hn: HyperNodeInfo,
                 queue: QueueInfo, snapshot: dict[str, str]) -> _JobRun:
    _reset_fit_errors(jt.job)
    copy = sheet.clone()
    stmts: list[Statement] = []
    total = 0.0
    decisions: dict[str, str] = {}
    while not copy.subjobs.empty():
        sj = copy.subjobs.pop()
        tasks = copy.sheets[sj.uid]
        stmt, score = allocate_subjob(ssn, ctx, jt, sj, tasks, hn, queue, decisions)
        if stmt is not None and len(stmt):
            stmts.append(stmt)
            total += score
            if not tasks.empty():
                copy.subjobs.push(sj)
            if job_ready(ssn, jt):
                break
    for uid, name in snapshot.items():
        jt.subjobs[uid].allocated_hypernode = name
    solution = bool(stmts) and (job_ready(ssn, jt) or job_pipelined(ssn, jt))
    return _JobRun(stmts, copy, total, decisions, len(stmts), solution)


_MUST_RUN, _NO_SOLUTION = math.inf, -math.inf


def _bounds(ssn: Session, ctx: TopologyContext, jt: JobTopology, sheet: JobSheet,
            gradient: list[HyperNodeInfo]) -> list[float] | None:
    """Per candidate of ``gradient``, the score its dry run would reach if it succeeded, where that
    is known without the dry run; None when the job is not a simple gang.

    A simple gang (no SubJob policy, one SubJob, no pipelining possible: nothing is releasing or
    pipelined) places its tasks in one ``allocate_subjob`` call, which ends once the gang is ready.
    If that SubJob's own gradient inside the candidate is just the candidate, the job's score is
    the candidate's HyperNode score, taken before any dry run as Volcano takes it after the roll
    back; if the gradient is empty there is no solution; otherwise the dry run must tell.
    """
    if jt.has_policy or len(jt.subjobs) != 1 or len(sheet.sheets) != 1:
        return None
    nodes = ssn.nodes
    if nodes.releasing.any() or nodes.pipelined.any():
        return None
    if jt.job.count(TaskStatus.PIPELINED):
        return None
    sj = next(iter(jt.subjobs.values()))
    request = _request(jt, sj)
    fast = _alone_bounds(ssn)
    if fast is not None:
        found = fast.alone_bounds(request, sj, gradient)
        if found is not None:
            return found
    out: list[float] = []
    for hn in gradient:
        inner = ssn.hypernode_gradients(request, hn, PURPOSE_ALLOCATE)
        if not inner:
            out.append(_NO_SOLUTION)
        elif len(inner) == 1 and len(inner[0]) == 1 and inner[0][0] is hn:
            out.append(ssn.hypernode_scores(sj, [hn])[hn.name])
        else:
            out.append(_MUST_RUN)
    return out


def _alone_bounds(ssn: Session) -> HyperNodeSearchShortcuts | None:
    """The plugin that owns both the first gradient and the (only) order function, if it offers
    ``alone_bounds``: the values ``_bounds`` computes, for all candidates at once."""
    return _shortcuts(ssn).alone


def _none_pending(jt: JobTopology) -> bool:
    return all(t.status != TaskStatus.PENDING for t in jt.job.tasks.values())


def _better(total: float, name: str, best: tuple[float, str] | None) -> bool:
    return best is None or total > best[0] or (total == best[0] and name < best[1])


def _search_gradient(ssn: Session, ctx: TopologyContext, jt: JobTopology, sheet: JobSheet,
                     gradient: list[HyperNodeInfo], queue: QueueInfo,
                     snapshot: dict[str, str]) -> tuple[str, _JobRun] | None:
    """The best job HyperNode of one gradient (highest score, then name), its run applied.

    Volcano dry-runs every candidate; when ``_bounds`` knows the scores, candidates are dry-run in
    score order and those that cannot win are skipped. The job's predicate errors are left as the
    gradient's last dry run in Volcano's order leaves them (that run is repeated when needed). The
    best run stays applied while no other dry run follows it; otherwise it is replayed.
    """
    bounds = _bounds(ssn, ctx, jt, sheet, gradient)
    # best bound first, ties in gradient order (a stable sort)
    order = range(len(gradient)) if bounds is None else np.argsort(-np.asarray(bounds), kind="stable").tolist()
    best: tuple[float, str] | None = None
    best_run: _JobRun | None = None
    best_ops: Ops = []
    applied = False  # whether best_run's statements are still applied
    last_run = ""
    exhaustive = bounds is None

    def dry_run(hn: HyperNodeInfo) -> _JobRun:
        nonlocal applied
        if applied:
            best_run.discard()  # type: ignore[union-attr]
            applied = False
        return _dry_run_job(ssn, ctx, jt, sheet, hn, queue, snapshot)

    for i in order:
        hn = gradient[i]
        if not exhaustive:
            bound = bounds[i]  # type: ignore[index]
            if bound == _NO_SOLUTION or (best is not None and bound < best[0]):
                break  # no later candidate (a bound as low or lower) can win either
            if not _better(bound, hn.name, best):
                continue
        run = dry_run(hn)
        last_run = hn.name
        if (not exhaustive and run.solution and bounds[i] != _MUST_RUN  # type: ignore[index]
                and (run.calls != 1 or run.total != bounds[i])):  # type: ignore[index]
            exhaustive = True  # not the simple gang assumed: no candidate may be skipped
        if run.solution and _better(run.total, hn.name, best):
            best, best_run, best_ops, applied = (run.total, hn.name), run, _save(run.stmts), True
        else:
            run.discard()
    last = gradient[-1] if gradient else None
    if last is not None and last_run != last.name and not (applied and _none_pending(jt)):
        # Leave the job's predicate errors as Volcano's last dry run of the gradient does (not
        # needed once the chosen placement leaves no pod of the job pending: nothing reads them).
        if bounds is not None and bounds[-1] == _NO_SOLUTION:
            _reset_fit_errors(jt.job)
        else:
            dry_run(last).discard()
    if best is None or best_run is None:
        return None
    if not applied:
        best_run.stmts = [_replay(ssn, best_ops)]
    return best[1], best_run


def allocate_for_job(ssn: Session, job: JobInfo, queue: QueueInfo, run: TaskSheet | None = None) -> Statement | None:
    """Volcano ``allocateForJob`` from the cluster top: one statement for the best job HyperNode."""
    ctx = topology_of(ssn)
    jt = ctx.job(job)
    sheet = _job_sheet(ssn, ctx, jt, run)
    if sheet.empty():
        return None
    snapshot = {uid: sj.allocated_hypernode for uid, sj in jt.subjobs.items()}
    for gradient in ssn.hypernode_gradients(_request(jt, None), ctx.tree.top, PURPOSE_ALLOCATE):
        found = _search_gradient(ssn, ctx, jt, sheet, gradient, queue, snapshot)
        if found is None:
            continue
        best, chosen = found
        sheet.take(chosen.remaining)
        ctx.decisions[job.uid] = (best, chosen.decisions)
        final = Statement(ssn)
        for stmt in chosen.stmts:
            final.merge(stmt)
        return final
    return None


def _commit_decision(ctx: TopologyContext, jt: JobTopology) -> None:
    """Volcano ``UpdateDecisionToJob``: remember where the job and its SubJobs now live."""
    decision = ctx.decisions.get(jt.job.uid)
    if decision is None:
        return
    best, subjobs = decision
    jt.allocated_hypernode = ctx.tree.lca(jt.allocated_hypernode, best)
    for uid, name in subjobs.items():
        sj = jt.subjobs[uid]
        sj.allocated_hypernode = ctx.tree.lca(sj.allocated_hypernode, name)


# --- the allocate action's branch -----------------------------------------------------------------
def uses_topology_path(ssn: Session, job: JobInfo) -> bool:
    """Jobs with hard topology (soft counts, converted) or SubJob policies take this path."""
    if job.plain:
        return False
    return topology_of(ssn).job(job).needs_topology_path()


def allocate_job_turn(ssn: Session, job: JobInfo, queue: QueueInfo, run: TaskSheet | None = None) -> bool:
    """One turn of a topology job in allocate; True if the job should be pushed back for more.

    ``run`` identifies the allocate run (the action passes its own sheet of the job): the job's SubJob
    worksheet lives across the job's turns of one run, as in Volcano, and is rebuilt for the next.
    """
    ctx = topology_of(ssn)
    jt = ctx.job(job)
    if not ctx.tree.ready and jt.with_topology():
        job.pending_reason = f"HyperNodes are not ready for scheduling: {ctx.tree.error}"
        return False
    if jt.has_policy and not jt.subjobs_valid():
        job.pending_reason = "not enough subGroups for the minSubGroups of the job's subGroupPolicy"
        return False
    stmt = allocate_for_job(ssn, job, queue, run)
    if stmt is None:
        if not job_ready(ssn, jt):
            reason = no_fit_reason(ssn, ctx, jt)
            if reason:
                job.pending_reason = reason
        return False
    if not job_ready(ssn, jt):
        return False  # pipelined: the placements stay in the session, nothing is bound
    stmt.commit()
    _commit_decision(ctx, jt)
    return not ctx.sheets[job.uid][1].empty()

