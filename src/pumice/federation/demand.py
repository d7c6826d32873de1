"""What a host Job asks of a member: its tasks, pods, the gang that must start together, and its wishes.

A ``JobDemand`` is read once per version of the host's Job. Requests are per pod in Volcano's units (cpu in
milli-cores, memory in bytes, other resources in thousandths), a container without requests falling back to
its limits as the API server defaults them. The gang is Volcano's: every task's ``minAvailable`` first, then
more replicas in task order up to the job's ``minAvailable`` (``calcPGMinResources``). The federation's own
annotations are parsed here; a malformed one is an ``error`` the job waits with, never silently ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml

from pumice.api.labels import Selector as LabelSelector
from pumice.api.quantity import QuantityError, milli_value
from pumice.store import BadRequest, parse_label_selector

from . import names

__all__ = [
    "ClusterAffinity",
    "JobDemand",
    "PreferredTerm",
    "TaskDemand",
    "demand_of",
    "pod_request",
    "timestamp",
]

Obj = dict[str, Any]
_PER_UNIT = ("memory", "pods")  # kept in whole units (bytes, pods); everything else in thousandths


def _units(name: str, milli: int) -> float:
    return milli / 1000.0 if name in _PER_UNIT else float(milli)


def pod_request(pod_spec: Mapping[str, Any]) -> dict[str, float]:
    """A pod's effective request: max(sum of containers, each init container) plus overhead, a container's
    limits standing in for requests it does not give."""

    def container(c: Mapping[str, Any]) -> dict[str, int]:
        res = c.get("resources") or {}
        merged = dict(res.get("limits") or {})
        merged.update(res.get("requests") or {})
        return {str(k): milli_value(v) for k, v in merged.items()}

    total: dict[str, int] = {}
    for c in pod_spec.get("containers") or []:
        for k, v in container(c).items():
            total[k] = total.get(k, 0) + v
    for c in pod_spec.get("initContainers") or []:
        for k, v in container(c).items():
            total[k] = max(total.get(k, 0), v)
    for k, v in (pod_spec.get("overhead") or {}).items():
        total[str(k)] = total.get(str(k), 0) + milli_value(v)
    return {k: _units(k, v) for k, v in total.items() if v > 0 and k != "pods"}


@dataclass(frozen=True, slots=True)
class TaskDemand:
    name: str
    replicas: int
    #: Pods of this task in the job's minimum gang.
    gang: int
    #: Per pod, in Volcano's units.
    request: Mapping[str, float]
    node_selector: Mapping[str, str]
    #: Required node affinity (``nodeSelectorTerms``, any one must match); None: no constraint.
    affinity_terms: tuple[Obj, ...] | None
    tolerations: tuple[Obj, ...]
    #: Equal keys mean equal node constraints (selector, affinity, tolerations): eligibility is cached by it.
    shape: str


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    names: frozenset[str] | None
    selector: LabelSelector | None

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.names is not None and name not in self.names:
            return False
        return self.selector is None or self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class ClusterAffinity:
    """Which members a job may use (required) and prefers (weighted terms); ``None`` fields constrain nothing."""

    names: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    selectors: tuple[LabelSelector, ...] = ()
    preferred: tuple[PreferredTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return self.names is None and not self.exclude and not self.selectors and not self.preferred

    def rejects(self, name: str, labels: Mapping[str, str]) -> str | None:
        """Why a member is not allowed (None: allowed)."""
        if self.names is not None and name not in self.names:
            return f"not among the job's clusterNames ({', '.join(sorted(self.names))})"
        if name in self.exclude:
            return "excluded by the job's cluster affinity"
        for selector in self.selectors:
            if not selector.matches(labels):
                return f"labels do not match the job's cluster selector {selector}"
        return None


@dataclass
class JobDemand:
    namespace: str
    name: str
    uid: str
    queue: str
    priority: int
    #: creationTimestamp as seconds since the epoch (0 when absent): the order among equal priorities.
    created: float
    tasks: list[TaskDemand]
    min_available: int
    #: Every replica's request summed (what the job holds once it runs whole).
    total: dict[str, float]
    #: The minimum gang's request.
    gang_total: dict[str, float]
    #: ``(mode, highestTierAllowed, highestTierName)`` or None.
    topology: tuple[str, int | None, str | None] | None
    affinity: ClusterAffinity = field(default_factory=ClusterAffinity)
    tolerations: tuple[Obj, ...] = ()
    region_affinity: tuple[str, ...] = ()
    zone_affinity: tuple[str, ...] = ()
    spread_group: str = ""
    depends_on: tuple[tuple[str, str], ...] = ()
    split: bool = False
    redispatch: bool = True
    #: Malformed federation annotations: the job waits with these.
    errors: list[str] = field(default_factory=list)
    #: The metadata.resourceVersion it was read from.
    version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def gang_pods(self) -> int:
        return sum(t.gang for t in self.tasks)


def timestamp(value: Any) -> float:
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _structured(text: str, what: str, errors: list[str]) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        errors.append(f"annotation {what}: not valid JSON/YAML ({getattr(err, 'problem', None) or err})")
        return None


def _selector(value: Any, what: str, errors: list[str]) -> LabelSelector | None:
    try:
        return parse_label_selector(value)
    except BadRequest as err:
        errors.append(f"annotation {what}: {err.message}")
        return None


def _names(value: Any, what: str, errors: list[str]) -> frozenset[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(f"annotation {what}: expected a list of cluster names")
        return None
    return frozenset(value)


_AFFINITY_KEYS = {"clusterNames", "exclude", "labelSelector", "preferred"}


def _affinity(annotations: Mapping[str, str], errors: list[str]) -> ClusterAffinity:
    selectors: list[LabelSelector] = []
    text = annotations.get(names.CLUSTER_SELECTOR)
    if text is not None:
        sel = _selector(text, names.CLUSTER_SELECTOR, errors)
        if sel is not None:
            selectors.append(sel)
    raw = annotations.get(names.CLUSTER_AFFINITY)
    if raw is None:
        return ClusterAffinity(selectors=tuple(selectors))
    what = names.CLUSTER_AFFINITY
    data = _structured(raw, what, errors)
    if data is None:
        return ClusterAffinity(selectors=tuple(selectors))
    if not isinstance(data, Mapping):
        errors.append(f"annotation {what}: expected a mapping with {', '.join(sorted(_AFFINITY_KEYS))}")
        return ClusterAffinity(selectors=tuple(selectors))
    unknown = sorted(set(data) - _AFFINITY_KEYS)
    if unknown:
        errors.append(f"annotation {what}: unknown field {unknown[0]!r} (use {', '.join(sorted(_AFFINITY_KEYS))})")
    if data.get("labelSelector") is not None:
        sel = _selector(data["labelSelector"], f"{what} labelSelector", errors)
        if sel is not None:
            selectors.append(sel)
    preferred: list[PreferredTerm] = []
    for i, term in enumerate(data.get("preferred") or []):
        where = f"{what} preferred[{i}]"
        if not isinstance(term, Mapping) or set(term) - {"weight", "clusterNames", "labelSelector"}:
            errors.append(f"annotation {where}: expected {{weight, clusterNames, labelSelector}}")
            continue
        weight = term.get("weight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            errors.append(f"annotation {where}.weight: must be an integer from 1 to 100")
            continue
        sel = None if term.get("labelSelector") is None else _selector(term["labelSelector"], where, errors)
        preferred.append(PreferredTerm(weight, _names(term.get("clusterNames"), where, errors), sel))
    return ClusterAffinity(
        names=_names(data.get("clusterNames"), f"{what} clusterNames", errors),
        exclude=_names(data.get("exclude"), f"{what} exclude", errors) or frozenset(),
        selectors=tuple(selectors),
        preferred=tuple(preferred),
    )


def _tolerations(annotations: Mapping[str, str], errors: list[str]) -> tuple[Obj, ...]:
    raw = annotations.get(names.CLUSTER_TOLERATIONS)
    if raw is None:
        return ()
    data = _structured(raw, names.CLUSTER_TOLERATIONS, errors)
    if data is None:
        return ()
    if not isinstance(data, list) or not all(isinstance(t, Mapping) for t in data):
        errors.append(f"annotation {names.CLUSTER_TOLERATIONS}: expected a list of tolerations")
        return ()
    for i, tol in enumerate(data):
        op = tol.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            errors.append(f"annotation {names.CLUSTER_TOLERATIONS}[{i}].operator: must be Equal or Exists")
    return tuple(dict(t) for t in data)


def _listed(annotations: Mapping[str, str], key: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in (annotations.get(key) or "").split(",") if p.strip())


def _depends(annotations: Mapping[str, str], namespace: str) -> tuple[tuple[str, str], ...]:
    out = []
    for item in _listed(annotations, names.DEPENDS_ON):
        ns, _, name = item.rpartition("/")
        out.append((ns or namespace, name))
    return tuple(out)


def _topology(spec: Mapping[str, Any]) -> tuple[str, int | None, str | None] | None:
    nt = spec.get("networkTopology")
    if not isinstance(nt, Mapping):
        return None
    tier = nt.get("highestTierAllowed")
    return (str(nt.get("mode") or "hard"), int(tier) if isinstance(tier, int) else None,
            str(nt["highestTierName"]) if nt.get("highestTierName") else None)


def _gang_counts(spec: Mapping[str, Any], tasks: list[Obj], priorities: Mapping[str, int]) -> list[int]:
    """Pods of each task in the minimum gang: ``calcPGMinResources``' two passes, tasks by priority."""
    wanted = int(spec.get("minAvailable") or sum(int(t.get("replicas") or 0) for t in tasks))
    order = sorted(range(len(tasks)), key=lambda i: -priorities.get(
        str(((tasks[i].get("template") or {}).get("spec") or {}).get("priorityClassName") or ""), 0))
    counts = [0] * len(tasks)
    count = 0
    for i in order:
        if tasks[i].get("minAvailable") is None or count >= wanted:
            continue
        n = min(int(tasks[i]["minAvailable"]), wanted - count)
        counts[i] += n
        count += n
    for i in order:
        if count >= wanted:
            break
        rest = int(tasks[i].get("replicas") or 0) - counts[i]
        n = min(max(rest, 0), wanted - count)
        counts[i] += n
        count += n
    return counts


def _required_terms(pod_spec: Mapping[str, Any]) -> tuple[Obj, ...] | None:
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms")
    return None if terms is None else tuple(dict(t) for t in terms)


def demand_of(job: Mapping[str, Any], priorities: Mapping[str, int] | None = None) -> JobDemand:
    """The demand of a host Job (after Volcano's admission defaults). ``priorities``: PriorityClass -> value."""
    priorities = priorities or {}
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    namespace = str(meta.get("namespace") or "default")
    errors: list[str] = []
    raw_tasks: list[Obj] = [dict(t) for t in spec.get("tasks") or [] if isinstance(t, Mapping)]
    counts = _gang_counts(spec, raw_tasks, priorities)
    tasks: list[TaskDemand] = []
    total: dict[str, float] = {}
    gang_total: dict[str, float] = {}
    for i, (task, gang) in enumerate(zip(raw_tasks, counts, strict=True)):
        pod_spec = (task.get("template") or {}).get("spec") or {}
        try:
            request = pod_request(pod_spec)
        except QuantityError as err:
            errors.append(f"spec.tasks[{i}]: {err}")
            request = {}
        replicas = int(task.get("replicas") or 0)
        selector = {str(k): str(v) for k, v in (pod_spec.get("nodeSelector") or {}).items()}
        terms = _required_terms(pod_spec)
        tolerations = tuple(dict(t) for t in pod_spec.get("tolerations") or [])
        shape = json.dumps([selector, terms, tolerations], sort_keys=True, separators=(",", ":"))
        tasks.append(TaskDemand(str(task.get("name") or f"default{i}"), replicas, gang, request, selector, terms,
                                tolerations, shape))
        for k, v in request.items():
            total[k] = total.get(k, 0.0) + v * replicas
            gang_total[k] = gang_total.get(k, 0.0) + v * gang
    split = annotations.get(names.SPLIT)
    if split not in (None, "", "by-task", "never"):
        errors.append(f"annotation {names.SPLIT}: {split!r} is not by-task or never")
    redispatch = annotations.get(names.REDISPATCH)
    if redispatch not in (None, "", "never", "allowed"):
        errors.append(f"annotation {names.REDISPATCH}: {redispatch!r} is not never or allowed")
    priority_class = str(spec.get("priorityClassName") or "")
    return JobDemand(
        namespace=namespace,
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        queue=str(spec.get("queue") or "default"),
        priority=priorities.get(priority_class, 0),
        created=timestamp(meta.get("creationTimestamp")),
        tasks=tasks,
        min_available=sum(counts),
        total=total,
        gang_total=gang_total,
        topology=_topology(spec),
        affinity=_affinity(annotations, errors),
        tolerations=_tolerations(annotations, errors),
        region_affinity=_listed(annotations, names.REGION_AFFINITY),
        zone_affinity=_listed(annotations, names.ZONE_AFFINITY),
        spread_group=str(annotations.get(names.SPREAD_GROUP) or ""),
        depends_on=_depends(annotations, namespace),
        split=split == "by-task",
        redispatch=redispatch != "never",
        errors=errors,
        version=str(meta.get("resourceVersion") or ""),
    )
