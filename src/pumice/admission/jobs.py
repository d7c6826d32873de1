"""Job admission (``pkg/webhooks/admission/jobs/validate/admit_job.go``), after defaulting.

All problems found are reported together in one line, separated by "; ".
"""

from __future__ import annotations

import re
from typing import Any

from pumice.api.validation import validate_pod_template
from pumice.api.validation.names import is_dns1123_label
from pumice.store import Invalid

from .lookup import Reader, children, get_queue

__all__ = ["KNOWN_PLUGINS", "POLICY_ACTIONS", "POLICY_EVENTS", "job_problems", "validate_job", "validate_job_update"]

Obj = dict[str, Any]
KNOWN_PLUGINS = frozenset({"env", "svc", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank"})
POLICY_EVENTS = frozenset(
    {"*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"}
)
POLICY_ACTIONS = frozenset(
    {"AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition", "TerminateJob", "CompleteJob",
     "ResumeJob"}
)
_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def _policy_problems(policies: list[Obj], where: str) -> list[str]:
    problems: list[str] = []
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for i, policy in enumerate(policies):
        label = f"{where} policies[{i}]"
        events = list(policy.get("events") or []) + ([policy["event"]] if policy.get("event") else [])
        code = policy.get("exitCode")
        if events and code is not None:
            problems.append(f"{label}: must not specify event and exitCode simultaneously")
        elif not events and code is None:
            problems.append(f"{label}: either event or exitCode must be specified")
        action = policy.get("action")
        if action not in POLICY_ACTIONS:
            problems.append(f"{label}: invalid policy action {action!r}")
        timeout = policy.get("timeout")
        if timeout is not None and not _DURATION.match(str(timeout)):
            problems.append(f"{label}: invalid timeout {timeout!r}")
        for event in events:
            if event not in POLICY_EVENTS:
                problems.append(f"{label}: invalid policy event {event!r}")
            elif event in seen_events:
                problems.append(f"{label}: duplicate event {event!r} across policies")
            seen_events.add(event)
        if code is not None:
            if int(code) == 0:
                problems.append(f"{label}: 0 is not a valid error code")
            elif int(code) in seen_codes:
                problems.append(f"{label}: duplicate exitCode {code}")
            seen_codes.add(int(code))
    if "*" in seen_events and len(seen_events) > 1:
        problems.append(f"{where}: if there is a policy for event *, there must be no other event policy")
    return problems


def _dag_problems(tasks: list[Obj]) -> list[str]:
    names = {str(t.get("name")) for t in tasks}
    graph: dict[str, list[str]] = {}
    problems = []
    for task in tasks:
        deps = [str(d) for d in ((task.get("dependsOn") or {}).get("name") or [])]
        for dep in deps:
            if dep not in names:
                problems.append(f"task {task.get('name')!r} depends on task {dep!r}, which does not exist")
        graph[str(task.get("name"))] = [d for d in deps if d in names]
    state: dict[str, int] = {}

    def cyclic(node: str) -> bool:
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1 or (state.get(nxt) is None and cyclic(nxt)):
                return True
        state[node] = 2
        return False

    if any(state.get(n) is None and cyclic(n) for n in sorted(graph)):
        problems.append("the tasks' dependsOn do not form a directed acyclic graph (DAG)")
    return problems


def _task_problems(task: Obj, index: int, seen: set[str]) -> list[str]:
    problems = []
    name = str(task.get("name") or "")
    replicas = int(task.get("replicas") or 0)
    if is_dns1123_label(name):
        problems.append(f"task name {name!r} is not a valid DNS-1123 label (lowercase alphanumerics and '-', "
                        "at most 63 characters)")
    if name in seen:
        problems.append(f"duplicated task name {name!r}")
    seen.add(name)
    if replicas < 0:
        problems.append(f"task {name!r}: replicas {replicas} must not be negative")
    minimum = task.get("minAvailable")
    if minimum is not None and int(minimum) < 0:
        problems.append(f"task {name!r}: minAvailable {minimum} must not be negative")
    if minimum is not None and int(minimum) > replicas:
        problems.append(f"task {name!r}: minAvailable {minimum} is greater than replicas {replicas}")
    if task.get("maxRetry") is not None and int(task["maxRetry"]) < -1:
        problems.append(f"task {name!r}: maxRetry {task['maxRetry']} must be -1 (unlimited) or more")
    problems += _policy_problems(task.get("policies") or [], f"task {name!r}")
    template = validate_pod_template(task.get("template"))
    if template:  # Volcano's validateTaskTemplate: Kubernetes' own rules of a pod template
        problems.append(f"spec.task[{index}]." + " ".join(f"{error}." for error in template))
    partition = task.get("partitionPolicy")
    if partition:
        total, size = int(partition.get("totalPartitions") or 0), int(partition.get("partitionSize") or 0)
        if total < 1 or size < 1:
            problems.append(f"task {name!r}: partitionPolicy needs totalPartitions >= 1 and partitionSize >= 1")
        elif replicas != total * size:
            problems.append(f"task {name!r}: replicas {replicas} must equal totalPartitions {total} x "
                            f"partitionSize {size} = {total * size}")
        min_parts = int(partition.get("minPartitions") or 0)
        if min_parts > total:
            problems.append(f"task {name!r}: minPartitions {min_parts} is greater than totalPartitions {total}")
        elif min_parts > 0 and minimum is not None and int(minimum) != min_parts * size:
            problems.append(f"task {name!r}: minAvailable {minimum} must equal minPartitions {min_parts} x "
                            f"partitionSize {size} = {min_parts * size}")
    return problems


def _topology_problems(spec: Obj | None, where: str) -> list[str]:
    if not spec:
        return []
    problems = []
    if spec.get("mode") not in (None, "hard", "soft"):
        problems.append(f"{where}: networkTopology mode {spec.get('mode')!r} must be hard or soft")
    if spec.get("highestTierAllowed") is not None and spec.get("highestTierName"):
        problems.append(f"{where}: networkTopology highestTierAllowed and highestTierName are mutually exclusive")
    if spec.get("highestTierAllowed") is not None and int(spec["highestTierAllowed"]) < 0:
        problems.append(f"{where}: networkTopology highestTierAllowed must not be negative")
    return problems


def job_problems(job: Obj) -> list[str]:
    """Everything wrong with a (defaulted) job's spec that needs no other object."""
    spec = job.get("spec") or {}
    tasks: list[Obj] = spec.get("tasks") or []
    problems: list[str] = []
    for field in ("minAvailable", "maxRetry", "ttlSecondsAfterFinished"):
        if spec.get(field) is not None and int(spec[field]) < 0:
            problems.append(f"job {field} {spec[field]} must not be negative")
    if not tasks:
        problems.append("no task specified in job spec")
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        problems += _task_problems(task, index, seen)
    replicas = sum(int(t.get("replicas") or 0) for t in tasks)
    minimum = int(spec.get("minAvailable") or 0)
    if minimum > replicas:
        problems.append(f"job minAvailable {minimum} is greater than the total replicas {replicas} of its tasks")
    if spec.get("minSuccess") is not None:
        min_success = int(spec["minSuccess"])
        if min_success < 1 or min_success > replicas:
            problems.append(f"job minSuccess {min_success} must be between 1 and the total replicas {replicas}")
    problems += _policy_problems(spec.get("policies") or [], "job")
    problems += _dag_problems(tasks)
    for plugin in sorted(spec.get("plugins") or {}):
        if plugin not in KNOWN_PLUGINS:
            problems.append(f"unknown job plugin {plugin!r} (known: {', '.join(sorted(KNOWN_PLUGINS))})")
    problems += _topology_problems(spec.get("networkTopology"), "job")
    return problems


def _queue_problems(store: Reader, queue_name: str) -> list[str]:
    queue = get_queue(store, queue_name)
    if queue is None:
        return [f'unable to find job queue: queue "{queue_name}" does not exist']
    if queue_name == "root":
        return ['can not submit job to the root queue "root"']
    state = (queue.get("status") or {}).get("state") or "Open"
    if state != "Open":
        return [f'can only submit job to queue with state Open, queue "{queue_name}" status is {state}']
    kids = children(store, queue_name)
    if kids:
        return [f'can only submit job to leaf queue, queue "{queue_name}" has {len(kids)} child queues']
    return []


def _describe(job: Obj) -> str:
    meta = job.get("metadata") or {}
    return f'job "{meta.get("namespace") or "default"}/{meta.get("name")}"'


def validate_job(store: Reader, job: Obj) -> None:
    """CREATE: the spec's own rules, then the queue's."""
    problems = job_problems(job)
    problems += _queue_problems(store, str((job.get("spec") or {}).get("queue") or "default"))
    if problems:
        raise Invalid(f"{_describe(job)} is invalid: " + "; ".join(problems))


_MUTABLE_TASK_FIELDS = ("replicas", "minAvailable")


def validate_job_update(job: Obj, old: Obj) -> None:
    """UPDATE: only ``minAvailable`` and the tasks' ``replicas``/``minAvailable`` may change."""
    new_spec, old_spec = dict(job.get("spec") or {}), dict(old.get("spec") or {})
    new_tasks = [{k: v for k, v in t.items() if k not in _MUTABLE_TASK_FIELDS} for t in new_spec.pop("tasks", [])]
    old_tasks = [{k: v for k, v in t.items() if k not in _MUTABLE_TASK_FIELDS} for t in old_spec.pop("tasks", [])]
    new_spec.pop("minAvailable", None)
    old_spec.pop("minAvailable", None)
    if new_spec != old_spec or new_tasks != old_tasks:
        raise Invalid(
            f"{_describe(job)} is invalid: job updates may only change minAvailable and the tasks' replicas "
            "and minAvailable"
        )
    problems = job_problems(job)
    if problems:
        raise Invalid(f"{_describe(job)} is invalid: " + "; ".join(problems))
