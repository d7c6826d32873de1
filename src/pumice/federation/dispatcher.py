"""The dispatch cycle: waiting host Jobs, in global-queue order, each to the member cluster choice ranks first.

Like Volcano's enqueue/allocate over queues: the queue served next is the first by ``QueueOrderFn`` (priority,
then share of the federation); from it, its best job (higher priority, then older, then by name). The job
goes out if its queue admits it (``queues.GlobalQueues.admit``) and a member is chosen; its queue's share then
grows and the queues are ordered again. An overused queue is passed over for the rest of the cycle. A job
that fits no member waits with the reasons, unless it may be split by task (``split.py``). Its dependencies
(``federation.pumice.io/depends-on``) must have completed first, wherever they ran.

A job that fitted nowhere is not evaluated again until some member has room it did not have (a member's
``freed`` counter moved, or its readiness): a full federation costs one comparison per waiting job and cycle.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np

from .choice import Choice
from .demand import JobDemand
from .placement import Part
from .propagate import PropagationError
from .queues import GlobalQueues, amounts
from .records import JobRecord
from .split import split_job
from .status import FINISHED

if TYPE_CHECKING:
    from .federation import Federation

__all__ = ["Dispatcher", "decision_json"]

Obj = dict[str, Any]


def decision_json(choice: Choice, outcome: str, cluster: str = "", reason: str = "") -> Obj:
    out: Obj = {"outcome": outcome}
    if cluster:
        out["cluster"] = cluster
    if reason:
        out["reason"] = reason
    out["clusters"] = [v.to_json() for v in choice.verdicts]
    return out


class Dispatcher:
    def __init__(self, fed: Federation) -> None:
        self.fed = fed
        self.decisions = 0  # jobs evaluated against the members (for the benchmark)
        self.dispatched = 0

    # --- the cycle ---------------------------------------------------------------------------------------
    def cycle(self) -> int:
        fed = self.fed
        waiting = [r for r in fed.records.values() if r.waiting]
        if not waiting:
            return 0
        priorities = fed.priorities()
        views = [m.view for m in fed.members.values()]
        space = fed.space(waiting, priorities)
        gq = self._queues(space, priorities)
        signature = tuple((m.name, m.view.ready, m.capacity.freed, m.capacity.static_version)
                          for m in fed.members.values())
        per_queue: dict[str, list[tuple[int, float, str, JobRecord, JobDemand]]] = defaultdict(list)
        for record in waiting:
            demand = record.demand(priorities)
            blocked = self._blocked(record, demand)
            if blocked is not None:
                fed.wait(record, blocked[0], blocked[1])
                continue
            per_queue[demand.queue].append((-demand.priority, demand.created, demand.key, record, demand))
        for jobs in per_queue.values():
            heapq.heapify(jobs)
        served = 0
        while per_queue:
            queue = min(per_queue, key=gq.order_key)
            jobs = per_queue[queue]
            *_, record, demand = heapq.heappop(jobs)
            if not jobs:
                del per_queue[queue]
            request = amounts(space, demand.total)
            refusal = gq.admit(queue, request)
            if refusal is not None:
                fed.wait(record, "QueueLimit", refusal)
                if gq.overused(queue):  # passed over for the rest of the cycle, as allocate skips it
                    for *_, rest, _ in per_queue.pop(queue, []):
                        fed.wait(rest, "QueueLimit", refusal)
                continue
            if record.nofit == signature:
                fed.wait(record, "NoClusterFits", record.nofit_reason)
                continue
            self.decisions += 1
            choice = fed.chooser.choose(demand, views)
            if self._place(record, demand, choice):
                gq.allocate(queue, request)
                served += 1
                continue
            if demand.split and split_job(fed, record, demand, views):
                gq.allocate(queue, request)
                served += 1
                continue
            reason = choice.why_not() if not choice.ranked else "every cluster kept refused the job"
            if demand.split:
                reason += "; no split by task fits either"
            record.nofit, record.nofit_reason = signature, reason
            fed.wait(record, "NoClusterFits", reason, decision=decision_json(choice, "waiting", reason=reason))
        self.dispatched += served
        return served

    def _queues(self, space: Any, priorities: dict[str, int]) -> GlobalQueues:
        fed = self.fed
        allocated: dict[str, np.ndarray] = defaultdict(space.zeros)
        pending: dict[str, np.ndarray] = defaultdict(space.zeros)
        for record in fed.records.values():
            if record.terminal or record.deleting or record.problem:
                continue
            demand = record.demand(priorities)
            target = allocated if record.placement.placed else pending
            target[demand.queue] += amounts(space, demand.total)
        return GlobalQueues(fed.config.queues, space, fed.total(space), fed.queue_objects(), allocated, pending)

    def _blocked(self, record: JobRecord, demand: JobDemand) -> tuple[str, str] | None:
        """Why the job cannot be considered at all this cycle (malformed, dependencies), or None."""
        if demand.errors:
            return "InvalidFederationAnnotation", "; ".join(demand.errors)
        for ns, name in demand.depends_on:
            dep = self.fed.records.get((ns, name))
            if dep is None:
                return "DependencyPending", f"waits for job {ns}/{name}, which does not exist"
            phase = dep.phase
            if phase == "Completed":
                continue
            if phase in FINISHED:
                return "DependencyFailed", f"job {ns}/{name} it depends on ended {phase}"
            where = f" in cluster {dep.placement.label()}" if dep.placement.placed else ""
            return "DependencyPending", f"waits for job {ns}/{name}{where} to complete (now {phase or 'Pending'})"
        return None

    # --- placing one job ---------------------------------------------------------------------------------
    def _place(self, record: JobRecord, demand: JobDemand, choice: Choice) -> bool:
        fed = self.fed
        refused: list[str] = []
        avoid = set(record.placement.returned[-3:])  # members that did not start it lately: others first
        ranked = [v for v in choice.ranked if v.name not in avoid] + [v for v in choice.ranked if v.name in avoid]
        for view in ranked:
            member = fed.members.get(view.name)
            if member is None:
                continue
            placement = choice.placement(view)
            plan = dataclasses.replace(record.placement, dispatch=record.placement.dispatch + 1,
                                       parts=[Part(view.name, demand.name)], moving="", kind="",
                                       at=fed.clock.now())
            detail = ""
            if placement is not None and placement.hypernode:
                detail = f" (HyperNode {placement.hypernode}, tier {placement.tier})"
            decision = decision_json(choice, "dispatched", view.name, f"sent to cluster {view.name}{detail}")
            try:
                fed.dispatch(record, plan, {view.name: placement}, decision, f"sent to cluster {view.name}{detail}")
            except PropagationError as err:
                refused.append(f"{view.name}: {err}")
                continue
            return True
        if refused:  # the members' own refusals become their verdicts (pumice federation explain shows them)
            why = dict(line.split(": ", 1) for line in refused)
            for v in choice.verdicts:
                if v.member in why:
                    v.kept, v.plugin, v.reason = False, "propagation", why[v.member]
            choice.ranked = []
        return False
