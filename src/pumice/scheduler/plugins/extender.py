"""extender: Volcano's HTTP extender — an outside service answers some extension points.

Each configured verb registers its point; the scheduler POSTs JSON to ``<extender.urlPrefix>/<verb>``
(Go's encoding of the scheduler's objects, :mod:`.extender_wire`) and waits at most
``extender.httpTimeout`` (``1s``). When the extender fails (unreachable, timeout, non-200, bad JSON)
``extender.ignorable: true`` makes the point act as if it agreed (predicate passes, victims permitted
and none chosen, enqueue permitted, queue not overused, job ready); otherwise it disagrees (the node
fails, the job is not enqueued, the queue is overused, the job is not ready). With
``extender.managedResources`` only tasks that request or limit one of those resources are sent to the
task-level verbs (predicate, prioritize, preemptable, reclaimable, allocate/deallocate).

Volcano's protocol asks the predicate one node at a time: a task's feasibility costs one request per
node, as in Volcano.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import (
    ABSTAIN,
    BATCH_NODE_ORDER,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_READY,
    OVERUSED,
    PERMIT,
    PREDICATE,
    PREEMPTABLE,
    RECLAIMABLE,
    REJECT,
    VictimsFn,
)
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo
from pumice.scheduler.plugins.extender_wire import (
    Client,
    ExtenderError,
    job_info,
    node_info,
    queue_info,
    task_info,
)
from pumice.scheduler.plugins.sla import parse_duration

log = logging.getLogger("pumice.scheduler")

VERBS = ("onSessionOpenVerb", "onSessionCloseVerb", "predicateVerb", "prioritizeVerb", "preemptableVerb",
         "reclaimableVerb", "queueOverusedVerb", "jobEnqueueableVerb", "jobEnqueuedVerb", "jobReadyVerb",
         "allocateFuncVerb", "deallocateFuncVerb")


class ExtenderPlugin(Plugin):
    name = "extender"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.url_prefix = arguments.get_string("extender.urlPrefix", "")
        self.verbs = {v: arguments.get_string(f"extender.{v}", "") for v in VERBS}
        self.ignorable = arguments.get_bool("extender.ignorable", False)
        self.timeout = 1.0
        text = arguments.get_string("extender.httpTimeout", "")
        if text:
            parsed = parse_duration(text)
            if parsed is None:
                arguments.warn("extender.httpTimeout", f"{text!r} is not a duration (like 100ms); using 1s")
            else:
                self.timeout = parsed
        managed = arguments.get("extender.managedResources")
        self.managed: frozenset[str] = frozenset()
        if isinstance(managed, list) and all(isinstance(m, str) for m in managed):
            self.managed = frozenset(managed)
        elif managed is not None:
            arguments.warn("extender.managedResources", f"expected a list of resource names, got {managed!r}")
        self.client: Client | None = None

    # --- plumbing ------------------------------------------------------------------------------
    def _send(self, verb: str, body: object, want_answer: bool = True) -> Any:
        if self.client is None:
            raise ExtenderError("extender.urlPrefix is not set")
        return self.client.post(verb, body, want_answer)

    def interested(self, task: TaskInfo) -> bool:
        """Kubernetes' ``IsInterested``: no managed resources, or the pod asks for one of them."""
        if not self.managed:
            return True
        spec = task.pod.get("spec") or {}
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            res = c.get("resources") or {}
            asked = {*(res.get("requests") or {}), *(res.get("limits") or {})}
            if not self.managed.isdisjoint(asked):
                return True
        return False

    def _failed(self, verb: str, err: Exception) -> None:
        log.warning("extender: %s failed: %s%s", verb, err, " (ignorable)" if self.ignorable else "")

    # --- session --------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        try:
            self.client = Client(self.url_prefix, self.timeout) if self.url_prefix else None
        except ValueError as err:
            self.arguments.warn("extender.urlPrefix", str(err))
            self.client = None
        verbs = self.verbs
        if verbs["onSessionOpenVerb"]:
            body = {"Jobs": {uid: job_info(ssn, j) for uid, j in ssn.jobs.items()},
                    "Nodes": {ssn.nodes.names[j]: node_info(ssn, j) for j in range(len(ssn.nodes))},
                    "Queues": {name: queue_info(q) for name, q in ssn.queues.items()},
                    "NamespaceInfo": {}, "RevocableNodes": {}}
            try:
                self._send(verbs["onSessionOpenVerb"], body, want_answer=False)
            except ExtenderError as err:
                self._failed(verbs["onSessionOpenVerb"], err)
                if not self.ignorable:
                    return  # Volcano registers nothing for this session
        if verbs["predicateVerb"]:
            ssn.add(PREDICATE, self.name, self)
        if verbs["prioritizeVerb"]:
            ssn.add(BATCH_NODE_ORDER, self.name, self.prioritize)
        if verbs["preemptableVerb"]:
            ssn.add(PREEMPTABLE, self.name, self._victims_fn(verbs["preemptableVerb"]))
        if verbs["reclaimableVerb"]:
            ssn.add(RECLAIMABLE, self.name, self._victims_fn(verbs["reclaimableVerb"]))
        if verbs["jobEnqueueableVerb"]:
            ssn.add(JOB_ENQUEUEABLE, self.name, self.job_enqueueable)
        if verbs["jobEnqueuedVerb"]:
            ssn.add(JOB_ENQUEUED, self.name, self.job_enqueued)
        if verbs["queueOverusedVerb"]:
            ssn.add(OVERUSED, self.name, self.overused)
        if verbs["jobReadyVerb"]:
            ssn.add(JOB_READY, self.name, self.job_ready)
        if verbs["allocateFuncVerb"] or verbs["deallocateFuncVerb"]:
            ssn.add_event_handler(self.on_allocate if verbs["allocateFuncVerb"] else None,
                                  self.on_deallocate if verbs["deallocateFuncVerb"] else None)

    def on_session_close(self, ssn: Session) -> None:
        verb = self.verbs["onSessionCloseVerb"]
        if verb and self.client is not None:
            try:
                self._send(verb, {}, want_answer=False)
            except ExtenderError as err:
                self._failed(verb, err)
        if self.client is not None:
            self.client.close()

    # --- predicate (NodeFilter) ------------------------------------------------------------------
    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        return []

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        if not self.interested(task):
            return []
        verb = self.verbs["predicateVerb"]
        ssn = self.ssn
        body_task = task_info(ssn, task)
        failed: dict[str, list[int]] = {}
        for k, j in enumerate(view.idx.tolist()):
            message = self._predicate(verb, body_task, j)
            if message:
                failed.setdefault(message, []).append(k)
        out = []
        for message, where in failed.items():
            mask = np.ones(len(view.idx), dtype=bool)
            mask[where] = False
            out.append((message, mask))
        return out

    def _predicate(self, verb: str, body_task: dict[str, Any], j: int) -> str:
        try:
            answer = self._send(verb, {"task": body_task, "node": node_info(self.ssn, j)})
        except ExtenderError as err:
            self._failed(verb, err)
            return "" if self.ignorable else str(err)
        message = answer.get("status") if isinstance(answer, Mapping) else None
        return str(message) if message else ""

    def replica_safe(self, task: TaskInfo) -> bool:
        return False  # the extender may answer from anything

    # --- scores ----------------------------------------------------------------------------------
    def prioritize(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        if not self.interested(task):
            return None
        ssn = self.ssn
        verb = self.verbs["prioritizeVerb"]
        body = {"task": task_info(ssn, task), "nodes": [node_info(ssn, j) for j in idx.tolist()]}
        try:
            answer = self._send(verb, body)
        except ExtenderError as err:
            self._failed(verb, err)
            return None
        scores = answer.get("nodeScore") if isinstance(answer, Mapping) else None
        error = answer.get("errorMessage") if isinstance(answer, Mapping) else "not a JSON object"
        if error or not isinstance(scores, Mapping):
            self._failed(verb, ExtenderError(str(error or "no nodeScore")))
            return None
        names = ssn.nodes.names
        return np.array([float(scores.get(names[j], 0.0)) for j in idx.tolist()])

    # --- victims -----------------------------------------------------------------------------------
    def _victims_fn(self, verb: str) -> VictimsFn:
        def victims(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            if not self.interested(evictor):
                return [], ABSTAIN
            ssn = self.ssn
            body = {"evictor": task_info(ssn, evictor), "evictees": [task_info(ssn, t) for t in evictees]}
            try:
                answer = self._send(verb, body)
            except ExtenderError as err:
                self._failed(verb, err)
                return [], PERMIT if self.ignorable else REJECT
            if not isinstance(answer, Mapping):
                return [], PERMIT if self.ignorable else REJECT
            named = {v.get("UID") for v in answer.get("victims") or [] if isinstance(v, Mapping)}
            status = answer.get("status")
            return [t for t in evictees if t.uid in named], int(status) if isinstance(status, int) else ABSTAIN

        return victims

    # --- jobs and queues -----------------------------------------------------------------------------
    def _ask(self, verb: str, body: object, field: str) -> object:
        try:
            answer = self._send(verb, body)
        except ExtenderError as err:
            self._failed(verb, err)
            return None
        return answer.get(field) if isinstance(answer, Mapping) else None

    def job_enqueueable(self, job: JobInfo) -> int:
        status = self._ask(self.verbs["jobEnqueueableVerb"], {"job": job_info(self.ssn, job)}, "status")
        if not isinstance(status, int) or isinstance(status, bool):
            return PERMIT if self.ignorable else REJECT
        return status

    def job_enqueued(self, job: JobInfo) -> None:
        verb = self.verbs["jobEnqueuedVerb"]
        try:
            self._send(verb, {"job": job_info(self.ssn, job)}, want_answer=False)
        except ExtenderError as err:
            self._failed(verb, err)

    def overused(self, queue: QueueInfo) -> bool:
        answer = self._ask(self.verbs["queueOverusedVerb"], {"queue": queue_info(queue)}, "overused")
        return answer if isinstance(answer, bool) else not self.ignorable

    def job_ready(self, job: JobInfo) -> bool:
        answer = self._ask(self.verbs["jobReadyVerb"], {"job": job_info(self.ssn, job)}, "status")
        return answer if isinstance(answer, bool) else not self.ignorable

    # --- events -----------------------------------------------------------------------------------------
    def _event(self, verb: str, task: TaskInfo) -> None:
        if not self.interested(task):
            return
        message = self._ask(verb, {"task": task_info(self.ssn, task)}, "errorMessage")
        if message:
            log.warning("extender: %s for %s: %s", verb, task.key, message)

    def on_allocate(self, task: TaskInfo) -> None:
        self._event(self.verbs["allocateFuncVerb"], task)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._event(self.verbs["deallocateFuncVerb"], task)

