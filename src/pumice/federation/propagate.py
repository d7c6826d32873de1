"""Writing a job into a member: its namespace, its Queue (and the Queue's ancestors), its PriorityClass, then
the Job itself; and taking it back out.

A copied Queue keeps the host's weight, capability, priority, parent and reclaim settings, so the member's own
scheduler orders and reclaims by the same rules; ``guarantee`` and ``deserved`` are not copied (they are shares
of the federation, and reserving a guarantee in every member would multiply it). Queues and PriorityClasses the
federation created carry the managed label and follow the host's spec; ones the member already had are left
as they are. A PriorityClass is never copied as ``globalDefault``.

The member's Job is the host's, with the federation's labels and annotations: ``managed``, the host Job's uid
and name, and the dispatch number (see ``placement.py``). A job split by task gets one Job per part holding
only its tasks, named ``<job>-<cluster>``, its ``minAvailable`` that part's share of the gang.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import Any

from pumice.store import AlreadyExists, Conflict, NotFound, Store

from . import names
from .placement import Part

__all__ = ["PropagationError", "create_part", "delete_part", "ensure_dependencies", "member_job"]

Obj = dict[str, Any]
_QUEUE_SPEC_KEYS = ("weight", "capability", "reclaimable", "parent", "priority", "type", "dequeueStrategy",
                    "affinity")
_OWN_ANNOTATIONS = (names.PLACEMENT, names.DECISION)


class PropagationError(Exception):
    """A member refused or cannot take a job now (the message says why); nothing of the job was created."""


def _queue_copy(queue: Obj) -> Obj:
    spec = {k: copy.deepcopy(v) for k, v in (queue.get("spec") or {}).items() if k in _QUEUE_SPEC_KEYS}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": queue["metadata"]["name"], "labels": {names.MANAGED_LABEL: "true"}},
            "spec": spec}


def _ensure_queue(store: Store, queue: Obj) -> None:
    want = _queue_copy(queue)
    name = want["metadata"]["name"]
    try:
        have = store.get(names.QUEUES, None, name)
    except NotFound:
        try:
            store.create(names.QUEUES, want)
        except AlreadyExists:
            return
        with contextlib.suppress(NotFound, Conflict):  # a fresh queue is Open, as Volcano's controller sets it
            store.patch(names.QUEUES, None, name, {"status": {"state": "Open"}}, subresource="status")
        return
    if ((have.get("metadata") or {}).get("labels") or {}).get(names.MANAGED_LABEL) != "true":
        return  # the member's own queue: left alone
    if {k: v for k, v in (have.get("spec") or {}).items() if k in _QUEUE_SPEC_KEYS} != want["spec"]:
        store.patch(names.QUEUES, None, name, {"spec": want["spec"]})


def ensure_dependencies(store: Store, job: Obj, queues: Mapping[str, Obj], priority_classes: Mapping[str, Obj],
                        known: set[Any] | None = None) -> None:
    """Namespace, queue chain and PriorityClass of ``job`` in the member ``store``. ``known``: what this connection
    has ensured already (skipped; it is reset with the connection)."""
    known = set() if known is None else known
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    namespace = str(meta.get("namespace") or "default")
    if ("ns", namespace) not in known:
        with contextlib.suppress(AlreadyExists):
            store.create(names.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        known.add(("ns", namespace))
    chain: list[Obj] = []
    queue = queues.get(str(spec.get("queue") or "default"))
    seen: set[str] = set()
    while queue is not None:
        qname = str(queue["metadata"]["name"])
        if qname in seen or qname == "root":
            break
        seen.add(qname)
        chain.append(queue)
        parent = str((queue.get("spec") or {}).get("parent") or "root")
        queue = queues.get(parent)
    for q in reversed(chain):  # parents first: the member's webhook wants them to exist
        queue_key = ("queue", q["metadata"]["name"], q["metadata"].get("resourceVersion"))
        if queue_key not in known:
            _ensure_queue(store, q)
            known.add(queue_key)
    pc_names = {str(spec.get("priorityClassName") or "")}
    for task in spec.get("tasks") or []:
        pc_names.add(str(((task.get("template") or {}).get("spec") or {}).get("priorityClassName") or ""))
    for pc_name in sorted(pc_names - {""}):
        pc = priority_classes.get(pc_name)
        if pc is None or ("pc", pc_name) in known:
            continue
        known.add(("pc", pc_name))
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": pc_name, "labels": {names.MANAGED_LABEL: "true"}},
                "value": pc.get("value", 0), "globalDefault": False}
        for field in ("preemptionPolicy", "description"):
            if field in pc:
                body[field] = pc[field]
        with contextlib.suppress(AlreadyExists):
            store.create(names.PRIORITYCLASSES, body)


def member_job(job: Obj, part: Part, dispatch: int, gang: Mapping[str, int] | None = None) -> Obj:
    """The Job to create in the member for ``part`` (``gang``: task -> pods of the gang, for split parts)."""
    meta = job.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != names.CLUSTER_LABEL}
    labels[names.MANAGED_LABEL] = "true"
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _OWN_ANNOTATIONS}
    annotations[names.HOST_UID] = str(meta.get("uid") or "")
    annotations[names.PART_OF] = f"{namespace}/{meta.get('name')}"
    annotations[names.DISPATCH] = str(dispatch)
    spec = copy.deepcopy(job.get("spec") or {})
    if part.tasks is not None:
        keep = set(part.tasks)
        spec["tasks"] = [t for t in spec.get("tasks") or [] if str(t.get("name")) in keep]
        spec["minAvailable"] = sum(int((gang or {}).get(str(t.get("name")), 0)) for t in spec["tasks"]) or 1
        replicas = sum(int(t.get("replicas") or 0) for t in spec["tasks"])
        if spec.get("minSuccess") is not None and int(spec["minSuccess"]) > replicas:
            del spec["minSuccess"]
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": part.name, "namespace": namespace, "labels": labels, "annotations": annotations},
            "spec": spec}


def create_part(store: Store, job: Obj, part: Part, dispatch: int, queues: Mapping[str, Obj],
                priority_classes: Mapping[str, Obj], gang: Mapping[str, int] | None = None,
                known: set[Any] | None = None) -> Obj:
    """Create ``part`` of ``job`` in the member; the stored Job. Idempotent for the same dispatch."""
    body = member_job(job, part, dispatch, gang)
    namespace = body["metadata"]["namespace"]
    try:
        ensure_dependencies(store, job, queues, priority_classes, known)
        return store.create(names.JOBS, body)
    except AlreadyExists:
        pass
    except Exception as err:  # the member's admission (Invalid), or any other refusal
        raise PropagationError(str(getattr(err, "message", err))) from None
    have = store.get(names.JOBS, namespace, part.name)
    ann = (have.get("metadata") or {}).get("annotations") or {}
    if ann.get(names.HOST_UID) != body["metadata"]["annotations"][names.HOST_UID]:
        raise PropagationError(f"a Job {namespace}/{part.name} the federation did not create exists there")
    if ann.get(names.DISPATCH) != str(dispatch):
        with contextlib.suppress(NotFound):
            store.delete(names.JOBS, namespace, part.name)
        raise PropagationError(f"an older copy of {namespace}/{part.name} is still being removed there")
    return have


def delete_part(store: Store, namespace: str, name: str) -> Obj | None:
    """Delete a member's copy and its pods at once (no grace: it must not run on while placed elsewhere)."""
    try:
        deleted = store.delete(names.JOBS, namespace, name)
    except NotFound:
        deleted = None
    pods, _ = store.list(names.PODS, namespace, label_selector=f"volcano.sh/job-name={name}")
    for pod in pods:
        with contextlib.suppress(NotFound):
            store.delete(names.PODS, namespace, str(pod["metadata"]["name"]))
    return deleted
