"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` prints.

Volcano's kinds use the ``additionalPrinterColumns`` of their CRDs; pods and nodes use the columns of
Kubernetes' built-in printers; everything else gets ``NAME AGE``. Ages are computed against the server's
clock (the cluster's, which may run faster than the wall clock).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pumice.api.registry import MODELS
from pumice.api.resources import resource_of

__all__ = [
    "TABLE_MEDIA",
    "Column",
    "federation_host_columns",
    "human_duration",
    "partial_metadata",
    "table_for",
    "wants_metadata",
    "wants_table",
]

TABLE_MEDIA = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str | None) -> bool:
    """Whether an ``Accept`` header asks for a ``meta.k8s.io`` Table (v1 or v1beta1)."""
    if not accept:
        return False
    for part in accept.split(","):
        params = {p.split("=", 1)[0].strip(): p.split("=", 1)[1].strip() for p in part.split(";")[1:] if "=" in p}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
    return False


def wants_metadata(accept: str | None) -> bool:
    """Whether an ``Accept`` header asks for ``PartialObjectMetadata`` (or its List), as metadata clients do."""
    if not accept:
        return False
    first = accept.split(",")[0]
    return "as=PartialObjectMetadata" in first and "g=meta.k8s.io" in first


def partial_metadata(objects: list[dict[str, Any]], resource_version: str | None, single: bool) -> dict[str, Any]:
    """Objects reduced to ``PartialObjectMetadata`` (one, or a ``PartialObjectMetadataList``)."""
    items = [_partial(obj) for obj in objects]
    if single:
        return items[0]
    return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": resource_version or ""}, "items": items}


def human_duration(seconds: float) -> str:
    """Kubernetes' ``duration.HumanDuration`` (``5m30s``, ``3h``, ``2d4h``)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if rest == 0 else f"{hours // 24 // 365}y{rest}d"
    return f"{hours // 24 // 365}y"


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _age(value: Any, now: float) -> str:
    stamp = _parse_time(value)
    return "<unknown>" if stamp is None else human_duration(now - stamp)


_FILTER = re.compile(r"""^(?P<field>[^\[]*)\[\?\(@\.(?P<key>\w+)==["'](?P<value>[^"']*)["']\)\]$""")


def _segments(path: str) -> list[str]:
    """``.a.b\\.c[?(@.k=="v")].d`` -> ``["a", "b.c[?(@.k==\"v\")]", "d"]``: dots split, except escaped or
    inside brackets (escapes are resolved outside brackets)."""
    parts, cur, depth, i = [], "", 0, 0
    text = path.strip(".")
    while i < len(text):
        ch = text[i]
        if ch == "\\" and depth == 0 and i + 1 < len(text):
            cur += text[i + 1]
            i += 2
            continue
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            depth += (ch == "[") - (ch == "]")
            cur += ch
        i += 1
    parts.append(cur)
    return parts


def _path(obj: Any, path: str) -> Any:
    """A CRD column's jsonPath: ``.a.b``, keys with escaped dots (``.metadata.labels.example\\.com/x``) and
    one filter per segment (``.status.conditions[?(@.type=="Ready")].status``)."""
    for part in _segments(path):
        if not isinstance(obj, dict):
            return None
        found = _FILTER.match(part) if "[" in part else None
        if found is None:
            obj = obj.get(part)
            continue
        items = obj.get(found["field"]) if found["field"] else None
        obj = next((item for item in items or () if isinstance(item, dict)
                    and str(item.get(found["key"])) == found["value"]), None)
    return obj


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    path: str = ""  # a CRD jsonPath (``.status.running``), or empty when ``cell`` computes it
    priority: int = 0
    format: str = ""
    description: str = ""

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description or self.name, "priority": self.priority}


_NAME = Column("Name", "string", ".metadata.name", format="name", description="Name of the object")


def _crd_cell(column: Column, obj: dict[str, Any], now: float) -> Any:
    value = _path(obj, column.path)
    if column.type == "date":
        return None if value is None else _age(value, now)
    return value


#: The custom kinds' printer columns, as their CRDs declare them (``KubeObject.PRINTER_COLUMNS``).
_CRD_COLUMNS: dict[str, tuple[Column, ...]] = {
    resource_of(model): tuple(Column(c.name, c.type, c.json_path, priority=c.priority) for c in model.PRINTER_COLUMNS)
    for model in MODELS
    if model.PRINTER_COLUMNS
}


def federation_host_columns() -> dict[str, tuple[Column, ...]]:
    """On a federation host (``pumice up --federation``), vcjob tables also show the member each job runs in."""
    jobs = _CRD_COLUMNS["jobs.batch.volcano.sh"]
    cluster = Column("CLUSTER", "string", ".metadata.labels.federation\\.pumice\\.io/cluster")
    return {"jobs.batch.volcano.sh": (*jobs[:4], cluster, *jobs[4:])}


_DEFAULT_COLUMNS = (Column("Age", "date", ".metadata.creationTimestamp"),)


# --- pods and nodes, as Kubernetes' printers (pkg/printers/internalversion) -------------------------------

_POD_COLUMNS = (
    Column("Ready", "string", description="The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", description="The aggregate status of the containers in this pod."),
    Column("Restarts", "string", description="The number of times the containers in this pod have been restarted."),
    Column("Age", "string"),
    Column("IP", "string", priority=1, description="IP address allocated to the pod."),
    Column("Node", "string", priority=1, description="Name of the Node this pod is assigned to."),
    Column("Nominated Node", "string", priority=1),
    Column("Readiness Gates", "string", priority=1),
)


def _pod_cells(pod: dict[str, Any], now: float) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    reason = status.get("reason") or status.get("phase") or "Pending"
    restarts = 0
    ready = 0
    initializing = False
    for index, cs in enumerate(status.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        restarts += int(cs.get("restartCount") or 0)
        terminated = state.get("terminated")
        if terminated and terminated.get("exitCode") == 0:
            continue
        initializing = True
        if terminated:
            reason = "Init:" + (terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}")
        elif (state.get("waiting") or {}).get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + state["waiting"]["reason"]
        else:
            reason = f"Init:{index}/{len(spec.get('initContainers') or [])}"
        break
    if not initializing:
        has_running = False
        for cs in reversed(statuses):
            state = cs.get("state") or {}
            restarts += int(cs.get("restartCount") or 0)
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated:
                reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                          else f"ExitCode:{terminated.get('exitCode')}")
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            ready_cond = any(c.get("type") == "Ready" and c.get("status") == "True"
                             for c in status.get("conditions") or [])
            reason = "Running" if ready_cond else "NotReady"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    ip = status.get("podIP") or "<none>"
    return [
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        _age((pod.get("metadata") or {}).get("creationTimestamp"), now),
        ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


_NODE_COLUMNS = (
    Column("Status", "string", description="The status of the node"),
    Column("Roles", "string", description="The roles of the node"),
    Column("Age", "string"),
    Column("Version", "string", description="Kubelet Version reported by the node."),
    Column("Internal-IP", "string", priority=1),
    Column("External-IP", "string", priority=1),
    Column("OS-Image", "string", priority=1),
    Column("Kernel-Version", "string", priority=1),
    Column("Container-Runtime", "string", priority=1),
)


def _node_cells(node: dict[str, Any], now: float) -> list[Any]:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    states = []
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            states.append("Ready" if cond.get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = sorted(
        key.split("/", 1)[1] or ""
        for key in (meta.get("labels") or {})
        if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]
    )
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or [] if isinstance(a, dict)}
    return [
        ",".join(states),
        ",".join(roles) or "<none>",
        _age(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion") or "",
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NAMESPACE_COLUMNS = (Column("Status", "string"), Column("Age", "string"))


def _namespace_cells(ns: dict[str, Any], now: float) -> list[Any]:
    return [(ns.get("status") or {}).get("phase") or "Active",
            _age((ns.get("metadata") or {}).get("creationTimestamp"), now)]


def _created(obj: dict[str, Any], now: float) -> str:
    return _age((obj.get("metadata") or {}).get("creationTimestamp"), now)


_PRIORITY_CLASS_COLUMNS = (
    Column("Value", "integer"),
    Column("Global-Default", "boolean"),
    Column("Age", "string"),
    Column("PreemptionPolicy", "string", priority=1),
)


def _priority_class_cells(pc: dict[str, Any], now: float) -> list[Any]:
    return [pc.get("value", 0), bool(pc.get("globalDefault")), _created(pc, now),
            pc.get("preemptionPolicy") or "PreemptLowerPriority"]


_PDB_COLUMNS = (
    Column("Min Available", "string"),
    Column("Max Unavailable", "string"),
    Column("Allowed Disruptions", "integer"),
    Column("Age", "string"),
)


def _pdb_cells(pdb: dict[str, Any], now: float) -> list[Any]:
    spec = pdb.get("spec") or {}
    least, most = spec.get("minAvailable"), spec.get("maxUnavailable")
    return ["N/A" if least is None else str(least), "N/A" if most is None else str(most),
            _int(pdb, "status", "disruptionsAllowed"), _created(pdb, now)]


_CONFIGMAP_COLUMNS = (Column("Data", "string"), Column("Age", "string"))


def _configmap_cells(cm: dict[str, Any], now: float) -> list[Any]:
    return [len(cm.get("data") or {}) + len(cm.get("binaryData") or {}), _created(cm, now)]


_SECRET_COLUMNS = (Column("Type", "string"), Column("Data", "string"), Column("Age", "string"))


def _secret_cells(secret: dict[str, Any], now: float) -> list[Any]:
    return [secret.get("type") or "Opaque", len(secret.get("data") or {}), _created(secret, now)]


#: Events print without a leading Name column (Kubernetes' event printer).
_EVENT_COLUMNS = (
    Column("Last Seen", "string"),
    Column("Type", "string"),
    Column("Reason", "string"),
    Column("Object", "string"),
    Column("Subobject", "string", priority=1),
    Column("Source", "string", priority=1),
    Column("Message", "string"),
    Column("First Seen", "string", priority=1),
    Column("Count", "integer", priority=1),
    Column("Name", "string", priority=1, format="name"),
)


def _event_cells(event: dict[str, Any], now: float) -> list[Any]:
    meta = event.get("metadata") or {}
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    last = event.get("lastTimestamp") or event.get("eventTime") or meta.get("creationTimestamp")
    first = event.get("firstTimestamp") or event.get("eventTime") or meta.get("creationTimestamp")
    origin = ", ".join(x for x in (source.get("component") or event.get("reportingComponent"), source.get("host"))
                       if x)
    return [
        _age(last, now),
        event.get("type") or "",
        event.get("reason") or "",
        f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
        involved.get("fieldPath") or "",
        origin,
        (event.get("message") or "").strip(),
        _age(first, now),
        int(event.get("count") or 1),
        meta.get("name"),
    ]


def _int(obj: dict[str, Any], *path: str) -> int:
    value: Any = obj
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return int(value or 0)


_DEPLOYMENT_COLUMNS = (Column("Ready", "string"), Column("Up-to-date", "integer"), Column("Available", "integer"),
                       Column("Age", "string"))


def _deployment_cells(obj: dict[str, Any], now: float) -> list[Any]:
    return [f"{_int(obj, 'status', 'readyReplicas')}/{_int(obj, 'spec', 'replicas')}",
            _int(obj, "status", "updatedReplicas"), _int(obj, "status", "availableReplicas"), _created(obj, now)]


_REPLICASET_COLUMNS = (Column("Desired", "integer"), Column("Current", "integer"), Column("Ready", "integer"),
                       Column("Age", "string"))


def _replicaset_cells(obj: dict[str, Any], now: float) -> list[Any]:
    return [_int(obj, "spec", "replicas"), _int(obj, "status", "replicas"), _int(obj, "status", "readyReplicas"),
            _created(obj, now)]


_STATEFULSET_COLUMNS = (Column("Ready", "string"), Column("Age", "string"))


def _statefulset_cells(obj: dict[str, Any], now: float) -> list[Any]:
    return [f"{_int(obj, 'status', 'readyReplicas')}/{_int(obj, 'spec', 'replicas')}", _created(obj, now)]


_JOB_COLUMNS = (Column("Status", "string"), Column("Completions", "string"), Column("Duration", "string"),
                Column("Age", "string"))


def _job_cells(obj: dict[str, Any], now: float) -> list[Any]:
    status = obj.get("status") or {}
    states = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
    phase = "Complete" if "Complete" in states else "Failed" if "Failed" in states else \
        "Suspended" if "Suspended" in states else "Running"
    completions = (obj.get("spec") or {}).get("completions")
    done = f"{_int(obj, 'status', 'succeeded')}/{completions}" if completions is not None else \
        f"{_int(obj, 'status', 'succeeded')}/1 of {(obj.get('spec') or {}).get('parallelism', 1)}"
    start, end = _parse_time(status.get("startTime")), _parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration((end if end is not None else now) - start)
    return [phase, done, duration, _created(obj, now)]


_BUILTIN: dict[str, tuple[tuple[Column, ...], Callable[[dict[str, Any], float], list[Any]]]] = {
    "deployments.apps": (_DEPLOYMENT_COLUMNS, _deployment_cells),
    "replicasets.apps": (_REPLICASET_COLUMNS, _replicaset_cells),
    "statefulsets.apps": (_STATEFULSET_COLUMNS, _statefulset_cells),
    "jobs.batch": (_JOB_COLUMNS, _job_cells),
    "pods": (_POD_COLUMNS, _pod_cells),
    "nodes": (_NODE_COLUMNS, _node_cells),
    "namespaces": (_NAMESPACE_COLUMNS, _namespace_cells),
    "priorityclasses.scheduling.k8s.io": (_PRIORITY_CLASS_COLUMNS, _priority_class_cells),
    "configmaps": (_CONFIGMAP_COLUMNS, _configmap_cells),
    "poddisruptionbudgets.policy": (_PDB_COLUMNS, _pdb_cells),
    "secrets": (_SECRET_COLUMNS, _secret_cells),
    "events": (_EVENT_COLUMNS, _event_cells),
}
_NO_NAME_COLUMN = frozenset({"events"})


def _partial(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table_for(
    resource: str,
    objects: Iterable[dict[str, Any]],
    now: float,
    *,
    resource_version: str | None = None,
    include_object: str = "Metadata",
    with_columns: bool = True,
    columns_of: Mapping[str, tuple[Column, ...]] | None = None,
) -> dict[str, Any]:
    """A ``Table`` of ``objects`` (all of type ``resource``, a store resource name); ``columns_of`` replaces the
    columns of some custom resources (``federation_host_columns``)."""
    if resource in _BUILTIN:
        columns, cells = _BUILTIN[resource]
    else:
        columns = (columns_of or {}).get(resource) or _CRD_COLUMNS.get(resource, _DEFAULT_COLUMNS)

        def cells(obj: dict[str, Any], t: float) -> list[Any]:
            return [_crd_cell(c, obj, t) for c in columns]

    named = resource not in _NO_NAME_COLUMN
    rows = []
    for obj in objects:
        try:
            row: dict[str, Any] = {"cells": cells(obj, now)}
        except (AttributeError, TypeError, ValueError, KeyError, IndexError):
            # a field of the wrong type (the server keeps what it was given): the row says so, the table stands
            row = {"cells": ["<unknown>"] * len(columns)}
        if named:
            row["cells"].insert(0, (obj.get("metadata") or {}).get("name"))
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = _partial(obj)
        rows.append(row)
    table: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}}
    if resource_version is not None:
        table["metadata"]["resourceVersion"] = resource_version
    heads = (_NAME, *columns) if named else columns
    table["columnDefinitions"] = [c.definition() for c in heads] if with_columns else []
    table["rows"] = rows
    return table
