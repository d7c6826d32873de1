"""The snapshot a session starts from: API objects (wire-format dicts) turned into jobs, tasks,
queues and the columnar node table (Volcano's cache snapshot; the cache kept current by events is
:mod:`pumice.scheduler.live`).

The scheduler reads dicts, never YAML files: every store (memory, SQLite, a real API server)
hands out the same wire format, so the same code serves them all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import marshal
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from pumice.api.gpus import NOUSE_GPU_TYPE, USE_GPU_TYPE
from pumice.api.group_name import group_key
from pumice.scheduler.model import JobInfo, NodeTable, QueueInfo, Shape, TaskInfo, TaskStatus
from pumice.scheduler.resources import CPU, DEFAULT_MEMORY, DEFAULT_MILLI_CPU, MEMORY, ResourceSpace

if TYPE_CHECKING:
    from pumice.node_metrics import NodeUsage
    from pumice.scheduler.topology.tree import HyperNodeTree

TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
DEFAULT_SCHEDULER_NAME = "volcano"
DEFAULT_TASK_PRIORITY = 1


@dataclass
class ClusterState:
    """Everything one session starts from."""

    space: ResourceSpace
    nodes: NodeTable
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    priority_classes: dict[str, int]
    hypernodes: list[dict[str, Any]] = field(default_factory=list)
    #: Pods of the scheduler that have no PodGroup (left out, as Volcano does), for explanations.
    orphan_pods: list[str] = field(default_factory=list)
    #: Every job, those whose queue does not exist included (``jobs`` leaves them out, as Volcano does).
    all_jobs: dict[str, JobInfo] = field(default_factory=dict)
    #: Kept by a live cache: ``jobs`` less the finished ones (Completed, every pod done), which a
    #: session would only walk past. None: sessions take ``jobs``.
    active_jobs: dict[str, JobInfo] | None = None
    #: Kept by a live cache: jobs an event touched since the last session's report (None: every
    #: job is reported). A session reports these, the jobs it changed itself, and waiting ones.
    dirty_jobs: set[str] | None = None
    #: Kept by a live cache: a superset of the active jobs that may have work for a session — not
    #: admitted yet, or with Pending tasks (see :func:`may_wait`). None: every active job may.
    waiting_jobs: set[str] | None = None
    #: The HyperNode tree of the last session (topology code rebuilds it when ``nodes`` or
    #: ``hypernodes`` are replaced).
    hypernode_tree: HyperNodeTree | None = None
    #: When a plugin last chose victims on its own schedule (tdm's evict period), by plugin name:
    #: kept across sessions with the state.
    evicted_at: dict[str, float] = field(default_factory=dict)
    #: ``v1`` ResourceQuotas by namespace (Volcano's ``NamespaceInfo.QuotaStatus``).
    resource_quotas: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: PodDisruptionBudgets (wire format), for the ``pdb`` plugin.
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    #: Numatopologies (wire format), for the ``numa-aware`` plugin.
    numatopologies: list[dict[str, Any]] = field(default_factory=list)
    #: Measured node usage, set by the scheduler loop from its metrics source (None: no metrics).
    node_usage: NodeUsage | None = None


def may_wait(job: JobInfo) -> bool:
    """The job has something for enqueue, allocate or backfill: it is not admitted, or has Pending tasks."""
    return job.is_pending() or job.count(TaskStatus.PENDING) > 0


def parse_time(value: Any) -> float:
    if not value:
        return 0.0
    if isinstance(value, datetime):
        return value.timestamp()
    return _parse_timestamp(str(value))


@functools.lru_cache(maxsize=65536)
def _parse_timestamp(text: str) -> float:
    """RFC 3339 to epoch seconds (timestamps repeat: objects are re-read on every event)."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return 0.0


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _is_ready(node: dict[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return True  # nodes that report no condition (fixtures, simulated nodes) count as ready


def task_status(pod: dict[str, Any]) -> int:
    """Volcano's ``getTaskStatus``."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = bool(_meta(pod).get("deletionTimestamp"))
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if (pod.get("spec") or {}).get("nodeName") else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def _container_requests(containers: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [((c.get("resources") or {}).get("requests") or {}) for c in containers or []]


def pod_resource_names(pod: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    _add_resource_names(names, pod)
    return names


def _add_resource_names(names: set[str], pod: dict[str, Any]) -> None:
    """Add the resource names ``pod`` requests (containers, init containers, overhead) to ``names``."""
    spec = pod.get("spec") or {}
    for containers in (spec.get("containers"), spec.get("initContainers")):
        for c in containers or ():
            resources = c.get("resources")
            if resources:
                requests = resources.get("requests")
                if requests:
                    names.update(requests)
    overhead = spec.get("overhead")
    if overhead:
        names.update(overhead)


def pod_requests(space: ResourceSpace, pod: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
    """(Resreq, InitResreq, non-zero cpu/memory) of a pod, as Volcano and kube-scheduler count them."""
    spec = pod.get("spec") or {}
    resreq = space.zeros()
    nz_cpu = nz_mem = 0.0
    for req in _container_requests(spec.get("containers")):
        vec = space.vector(req)
        resreq += vec
        nz_cpu += vec[0] if CPU in req else DEFAULT_MILLI_CPU
        nz_mem += vec[1] if MEMORY in req else DEFAULT_MEMORY
    init = resreq.copy()
    for req in _container_requests(spec.get("initContainers")):
        init = np.maximum(init, space.vector(req))
    overhead = spec.get("overhead")
    if overhead:
        ov = space.vector(overhead)
        resreq += ov
        init += ov
        nz_cpu += ov[0]
        nz_mem += ov[1]
    return resreq, init, (float(nz_cpu), float(nz_mem))


def _pod_index(name: str) -> int | None:
    """Volcano's ``GetPodIndexUnderTask``: the last dash-separated part of ``<job>-<task>-<i>``."""
    if name.count("-") < 2:
        return None
    try:
        return int(name[name.rfind("-") + 1 :])
    except ValueError:
        return None


def _flag(meta: dict[str, Any], key: str, default: bool) -> bool:
    for source in (meta.get("annotations") or {}, meta.get("labels") or {}):
        if key in source:
            return str(source[key]).lower() == "true"
    return default


class ShapeTable:
    """Shape keys, interned: replicas of one task share one key object, so hot paths compare them
    by identity. One table per snapshot builder (a live cache keeps its own across rebuilds)."""

    #: A long-lived process sees many pod templates come and go: the table starts over past this.
    LIMIT = 200_000

    def __init__(self) -> None:
        self._keys: dict[Shape, Shape] = {}

    def key(self, pod: dict[str, Any], resreq: np.ndarray, init: np.ndarray, extra: tuple[str, ...] = ()) -> Shape:
        """The pod's shape: replicas of one task share it (their static feasibility and scores are
        equal). ``extra``: what else plugins place by (:func:`shape_extra`)."""
        spec = pod.get("spec") or {}
        labels = _meta(pod).get("labels") or {}
        key = (
            *extra,
            _meta(pod).get("namespace") or "default",
            resreq.tobytes(),
            init.tobytes(),
            repr(spec.get("nodeSelector")),
            repr(spec.get("affinity")),
            repr(spec.get("tolerations")),
            repr(spec.get("topologySpreadConstraints")),
            repr(sorted(labels.items())) if (spec.get("affinity") or {}) else "",
            repr([c.get("ports") for c in spec.get("containers") or [] if c.get("ports")]),
        )
        if len(self._keys) > self.LIMIT:
            self._keys.clear()
        return self._keys.setdefault(key, key)


#: The kinds a snapshot reads (``Catalog.add``); any other object in a dry run's file is not the scheduler's.
CATALOG_KINDS = frozenset({"Node", "Pod", "PodGroup", "Queue", "HyperNode", "PodDisruptionBudget", "ResourceQuota",
                           "Numatopology", "PriorityClass"})


@dataclass
class Catalog:
    """Objects of one cluster by kind, and what a session needs to turn them into jobs and tasks."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    queues: list[dict[str, Any]] = field(default_factory=list)
    hypernodes: list[dict[str, Any]] = field(default_factory=list)
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    numatopologies: list[dict[str, Any]] = field(default_factory=list)
    #: ``v1`` ResourceQuotas (the resourcequota plugin).
    resource_quotas: list[dict[str, Any]] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    default_priority: int = 0
    shapes: ShapeTable = field(default_factory=ShapeTable)

    def add(self, obj: dict[str, Any]) -> None:
        """Sort ``obj`` by its kind (one of :data:`CATALOG_KINDS`; others are not the scheduler's)."""
        kind = obj.get("kind")
        if kind == "Node":
            if _is_ready(obj):
                self.nodes.append(obj)
        elif kind == "Pod":
            self.pods.append(obj)
        elif kind == "PodGroup":
            self.groups.append(obj)
        elif kind == "Queue":
            self.queues.append(obj)
        elif kind == "HyperNode":
            self.hypernodes.append(obj)
        elif kind == "PodDisruptionBudget":
            self.pdbs.append(obj)
        elif kind == "ResourceQuota":
            self.resource_quotas.append(obj)
        elif kind == "Numatopology":
            self.numatopologies.append(obj)
        elif kind == "PriorityClass":
            value = int(obj.get("value") or 0)
            self.priority_classes[_meta(obj).get("name", "")] = value
            if obj.get("globalDefault"):
                self.default_priority = value

    def resource_space(self) -> ResourceSpace:
        names: set[str] = set()
        for nd in self.nodes:
            names.update(((nd.get("status") or {}).get("allocatable") or {}).keys())
        for pod in self.pods:
            _add_resource_names(names, pod)
        return ResourceSpace(names)


def make_queue(q: dict[str, Any]) -> QueueInfo:
    meta = _meta(q)
    spec = q.get("spec") or {}
    name = meta.get("name", "")
    reclaimable = spec.get("reclaimable")
    weight = spec.get("weight")
    return QueueInfo(
        uid=name,
        name=name,
        weight=int(weight) if weight is not None else 1,
        priority=int(spec.get("priority") or 0),
        parent=spec.get("parent") or "",
        state=(q.get("status") or {}).get("state") or "Open",
        reclaimable=True if reclaimable is None else bool(reclaimable),
        capability=spec.get("capability"),
        guarantee=(spec.get("guarantee") or {}).get("resource"),
        deserved=spec.get("deserved"),
        creation=parse_time(meta.get("creationTimestamp")),
        queue=q,
    )


def make_job(space: ResourceSpace, pg: dict[str, Any], catalog: Catalog) -> JobInfo:
    meta = _meta(pg)
    spec = pg.get("spec") or {}
    ns = meta.get("namespace") or "default"
    pc = spec.get("priorityClassName")
    default = catalog.default_priority
    priority = catalog.priority_classes.get(pc, default) if pc else default
    min_res = spec.get("minResources")
    return JobInfo(
        uid=f"{ns}/{meta.get('name', '')}",
        namespace=ns,
        name=meta.get("name", ""),
        queue=spec.get("queue") or "default",
        priority=priority,
        min_available=int(spec.get("minMember") or 0),
        min_task_member={k: int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
        creation=parse_time(meta.get("creationTimestamp")),
        pod_group=pg,
        phase=(pg.get("status") or {}).get("phase") or "Pending",
        min_resources=space.vector(min_res) if min_res is not None else None,
        preemptable=_flag(meta, "volcano.sh/preemptable", False),
        resources=space,
        network_topology=spec.get("networkTopology"),
    )


#: The parts of a pod spec its requests and shape come from.
SchedulingFields = tuple[Any, ...]

#: Pod annotations that plugins place by (tdm: revocable zones; resource-strategy-fit: a pod's own
#: scoring strategy): part of a task's shape.
SHAPE_ANNOTATIONS = (
    "volcano.sh/revocable-zone",
    "volcano.sh/resource-strategy-scoring-type",
    "volcano.sh/resource-strategy-weight",
    "volcano.sh/numa-topology-policy",
)


def shape_extra(queue: str, annotations: dict[str, str]) -> tuple[str, ...]:
    """What a task's shape holds beyond its pod spec: its queue (nodegroup places by the queue's
    node-group affinity) and the annotations of :data:`SHAPE_ANNOTATIONS`."""
    return (queue, *(str(annotations.get(k, "")) for k in SHAPE_ANNOTATIONS))


#: The annotations :func:`_alike_key` reads: those of the shape, and those a GPU request reads.
_ALIKE_ANNOTATIONS = (*SHAPE_ANNOTATIONS, USE_GPU_TYPE, NOUSE_GPU_TYPE)
_ALIKE_ANNOTATION_SET = frozenset(_ALIKE_ANNOTATIONS)
_NO_ALIKE_ANNOTATIONS = (None,) * len(_ALIKE_ANNOTATIONS)


def _alike_key(ns: str, queue: str, meta: dict[str, Any], ann: dict[str, Any], spec: dict[str, Any]) -> bytes | str:
    """What a pod's requests, shape and derived TaskInfo fields are made of, as one exact key:
    pods with equal keys parse alike (``make_task``'s ``alike``).

    The parts: the namespace, the queue and the annotations of :data:`SHAPE_ANNOTATIONS`
    (:func:`shape_extra`), the spec fields of :func:`_scheduling_fields` (requests, GPU limits,
    ports, selectors, affinity, ...), the labels when the pod has an affinity (``ShapeTable.key``),
    and the annotations a GPU request reads (``TaskInfo.gpu``). ``marshal`` writes them faithfully
    (types, dict order, float bits: equal bytes are equal values that ``repr`` alike) and several
    times faster than ``repr``; values it cannot write (not plain JSON types) fall back to ``repr``
    (a ``str`` key: never equal to a ``bytes`` one). Version 2 leaves out marshal's back-references,
    which depend on reference counts: equal values then give equal bytes more often."""
    # most pods have none of these annotations: one pass over the pod's annotations tells
    read = _NO_ALIKE_ANNOTATIONS if _ALIKE_ANNOTATION_SET.isdisjoint(ann) else [ann.get(k) for k in _ALIKE_ANNOTATIONS]
    parts = (ns, queue, *read, meta.get("labels") if spec.get("affinity") else None, spec.get("containers"),
             spec.get("initContainers"), spec.get("overhead"), spec.get("nodeSelector"), spec.get("affinity"),
             spec.get("tolerations"), spec.get("topologySpreadConstraints"))
    try:
        return marshal.dumps(parts, 2)
    except ValueError:
        return repr(parts)


def _scheduling_fields(spec: dict[str, Any]) -> SchedulingFields:
    """The parts of a pod spec its requests and shape come from (a pod's spec barely changes: a
    live cache re-parses it only when these do)."""
    return (spec.get("containers"), spec.get("initContainers"), spec.get("overhead"), spec.get("nodeSelector"),
            spec.get("affinity"), spec.get("tolerations"), spec.get("topologySpreadConstraints"))


@dataclass(slots=True)
class ParsedPod:
    """What parsing a pod's spec gave, kept by a live cache (per pod uid) while the parts it came
    from (``fields``, ``labels``) do not change."""

    fields: SchedulingFields
    labels: dict[str, str]
    resreq: np.ndarray
    init_resreq: np.ndarray
    nonzero: tuple[float, float]
    shape: Shape
    #: TaskInfo's fields derived from the requests (``TaskInfo.derived``).
    derived: dict[str, Any]


#: TaskInfo's first fields (those without a default), in order: :func:`make_task` passes them by
#: position, which takes a third less time than by keyword on this path (once per pod).
_TASK_POSITIONAL = ("uid", "namespace", "name", "job", "status", "resreq", "init_resreq", "nonzero", "priority",
                    "preemptable", "role", "index", "creation", "pod", "shape")
if tuple(f.name for f in dataclasses.fields(TaskInfo))[: len(_TASK_POSITIONAL)] != _TASK_POSITIONAL:
    raise ImportError("TaskInfo's fields changed: update snapshot._TASK_POSITIONAL and make_task")


def make_task(space: ResourceSpace, pod: dict[str, Any], catalog: Catalog, job: JobInfo | None,
              parsed: dict[str, ParsedPod] | None = None,
              alike: dict[bytes | str, ParsedPod] | None = None) -> TaskInfo:
    """A TaskInfo for ``pod``; ``parsed`` (uid -> earlier parse) lets a live cache skip re-parsing
    requests and shape when an event changed only the pod's status or node; ``alike`` (an exact key
    of those parts, :func:`_alike_key` -> their parse) lets a snapshot, and a live cache for new pods,
    parse the replicas of one task once."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    ns: str = meta.get("namespace") or "default"
    name: str = meta.get("name", "")
    uid: str = meta.get("uid") or f"{ns}-{name}"
    ann = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    queue = job.queue if job is not None else ""
    hit: ParsedPod | None = None
    fields: SchedulingFields | None = None
    content: bytes | str = b""
    if parsed is not None:
        fields = (*_scheduling_fields(spec), *shape_extra(queue, ann))
        hit = parsed.get(uid)
        if hit is not None and not (hit.fields == fields and hit.labels == labels):
            hit = None
    if hit is None and alike is not None:
        content = _alike_key(ns, queue, meta, ann, spec)
        hit = alike.get(content)
        if hit is not None and fields is not None and parsed is not None:  # its own entry, for its next version
            parsed[uid] = ParsedPod(fields, labels, hit.resreq, hit.init_resreq, hit.nonzero, hit.shape, hit.derived)
    derived: dict[str, Any]
    if hit is not None:
        resreq, init, nonzero, shape, derived = hit.resreq, hit.init_resreq, hit.nonzero, hit.shape, hit.derived
    else:
        extra = shape_extra(queue, ann)
        if fields is None and (parsed is not None or alike is not None):
            fields = (*_scheduling_fields(spec), *extra)
        resreq, init, nonzero = pod_requests(space, pod)
        shape = catalog.shapes.key(pod, resreq, init, extra)
        derived = {}
    priority = spec.get("priority")
    if priority is None:
        priority = catalog.priority_classes.get(spec.get("priorityClassName") or "", DEFAULT_TASK_PRIORITY)
    if TASK_PRIORITY_ANNOTATION in ann:
        with contextlib.suppress(ValueError):
            priority = int(ann[TASK_PRIORITY_ANNOTATION])
    # _flag(meta, PREEMPTABLE_KEY, True), without looking the annotations and labels up again
    if PREEMPTABLE_KEY in ann:
        preemptable = str(ann[PREEMPTABLE_KEY]).lower() == "true"
    elif PREEMPTABLE_KEY in labels:
        preemptable = str(labels[PREEMPTABLE_KEY]).lower() == "true"
    else:
        preemptable = True
    task = TaskInfo(  # by position up to ``shape``: see _TASK_POSITIONAL
        uid,
        ns,
        name,
        job,
        task_status(pod),
        resreq,
        init,
        nonzero,
        int(priority),
        preemptable,
        ann.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY) or "",
        _pod_index(name),
        parse_time(meta.get("creationTimestamp")),
        pod,
        shape,
        preemption_never=spec.get("preemptionPolicy") == "Never",
        nominated_node=(pod.get("status") or {}).get("nominatedNodeName") or "",
        **derived,
    )
    if fields is not None and hit is None:
        got = ParsedPod(fields, labels, resreq, init, nonzero, shape, task.derived())
        if parsed is not None:
            parsed[uid] = got
        if alike is not None:
            alike[content] = got
    return task


def place_task(table: NodeTable, task: TaskInfo) -> None:
    """Put a task on its node's row (if it holds resources there) and in its job."""
    node_name = (task.pod.get("spec") or {}).get("nodeName") or ""
    if node_name and not task.status & (TaskStatus.SUCCEEDED | TaskStatus.FAILED):
        j = table.index.get(node_name)
        if j is not None:
            task.node = j
            task.node_name = node_name
            table.add_task(j, task)
    elif node_name:
        task.node_name = node_name
    if task.job is not None:
        task.job.add_task(task)


def is_ours(pod: dict[str, Any], scheduler_names: set[str]) -> bool:
    return ((pod.get("spec") or {}).get("schedulerName") or "default-scheduler") in scheduler_names


def build_cluster_state(
    objects: Iterable[dict[str, Any]], scheduler_names: Iterable[str] = (DEFAULT_SCHEDULER_NAME,)
) -> ClusterState:
    """Group wire-format objects into the session's starting state (Volcano's cache snapshot)."""
    catalog = Catalog()
    for obj in objects:
        catalog.add(obj)
    return build_from_catalog(catalog, set(scheduler_names))


def build_from_catalog(catalog: Catalog, scheduler_names: set[str]) -> ClusterState:
    space = catalog.resource_space()
    table = NodeTable(space, catalog.nodes)
    queues = {q.name: q for q in map(make_queue, catalog.queues)}
    jobs = {j.uid: j for j in (make_job(space, pg, catalog) for pg in catalog.groups)}
    orphans: list[str] = []
    alike: dict[bytes | str, ParsedPod] = {}
    for pod in catalog.pods:
        ours = is_ours(pod, scheduler_names)
        group = group_key(pod) if ours else ""
        task = make_task(space, pod, catalog, jobs.get(group) if group else None, alike=alike)
        place_task(table, task)
        if task.job is None and ours and task.status == TaskStatus.PENDING:
            orphans.append(task.key)
    table.clear_changes()
    # Volcano's snapshot skips jobs whose queue does not exist.
    present = {k: j for k, j in jobs.items() if j.queue in queues}
    state = ClusterState(space, table, present, queues, catalog.priority_classes, catalog.hypernodes, orphans, jobs)
    state.resource_quotas = quotas_by_namespace(catalog.resource_quotas)
    state.pdbs = catalog.pdbs
    state.numatopologies = catalog.numatopologies
    return state


def quotas_by_namespace(quotas: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for q in quotas:
        out.setdefault(_meta(q).get("namespace") or "default", []).append(q)
    return out
