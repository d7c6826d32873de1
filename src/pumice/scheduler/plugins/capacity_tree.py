"""The capacity plugin's queue attributes, flat or as a tree (Volcano ``capacity.go``:
``buildQueueAttrs``, ``buildHierarchicalQueueAttrs``, ``checkHierarchicalQueue``).

Vectors follow :mod:`pumice.scheduler.resources`. A queue's ``capability`` is +inf on dimensions it
does not limit; ``deserved_keys`` marks the dimensions its ``deserved`` names (Volcano tells a
scalar set to 0 from a missing one when it looks for over-deserved dimensions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import ALLOCATED_STATUS, JobInfo, QueueInfo, TaskStatus
from pumice.scheduler.resources import EPS, ResourceSpace

ROOT = "root"


@dataclass
class QueueAttr:
    name: str
    queue: QueueInfo | None
    deserved: np.ndarray
    deserved_keys: np.ndarray
    guarantee: np.ndarray
    capability: np.ndarray
    capability_keys: np.ndarray
    real_capability: np.ndarray
    allocated: np.ndarray
    request: np.ndarray
    inqueue: np.ndarray
    elastic: np.ndarray
    #: Ancestor names, the root first (hierarchy mode only).
    ancestors: list[str] = field(default_factory=list)
    children: dict[str, QueueAttr] = field(default_factory=dict)
    share: float = 0.0

    @property
    def leaf(self) -> bool:
        return not self.children

    def update_share(self) -> None:
        """``max_r allocated_r / deserved_r``; a queue without deserved is best-effort: share 1."""
        dims = self.deserved >= EPS
        if not dims.any():
            self.share = 1.0
            return
        self.share = float(np.max(self.allocated[dims] / self.deserved[dims]))


def _keys(space: ResourceSpace, resources: dict[str, Any] | None) -> np.ndarray:
    mask = np.zeros(space.size, dtype=bool)
    for name in resources or {}:
        i = space.index.get(name)
        if i is not None:
            mask[i] = True
    return mask


def new_attr(space: ResourceSpace, name: str, q: QueueInfo | None) -> QueueAttr:
    cap_spec = q.capability if q is not None else None
    cap_keys = _keys(space, cap_spec)
    capability = np.where(cap_keys, space.vector(cap_spec), np.inf)
    capability[:2] = space.vector(cap_spec)[:2]  # cpu/memory: 0 when unset (inherited or +inf later)
    deserved_spec = q.deserved if q is not None else None
    return QueueAttr(
        name=name, queue=q,
        deserved=space.vector(deserved_spec), deserved_keys=_keys(space, deserved_spec),
        guarantee=space.vector(q.guarantee if q is not None else None),
        capability=capability, capability_keys=cap_keys, real_capability=space.zeros(),
        allocated=space.zeros(), request=space.zeros(), inqueue=space.zeros(), elastic=space.zeros(),
    )


def job_inqueue(job: JobInfo) -> np.ndarray | None:
    """What an admitted job still holds in its queue beyond its allocated pods."""
    if job.min_resources is None:
        return None
    if job.phase == "Inqueue" or (
        job.phase == "Running" and job.count(ALLOCATED_STATUS | TaskStatus.SUCCEEDED) >= job.min_available
    ):
        out: np.ndarray = np.maximum(job.min_resources - job.allocated, 0)
        return out
    return None


def add_job(attr: QueueAttr, job: JobInfo) -> None:
    attr.allocated += job.allocated  # the job keeps these sums as its tasks change
    attr.request += job.allocated
    attr.request += job.pending_request
    inq = job_inqueue(job)
    if inq is not None:
        attr.inqueue += inq
    if job.min_resources is None:
        attr.elastic += job.allocated
    else:
        attr.elastic += np.maximum(job.allocated - job.min_resources, 0)


def _real_capability(base: np.ndarray, guarantees: np.ndarray, attr: QueueAttr) -> np.ndarray:
    out: np.ndarray = np.minimum(np.maximum(base - guarantees, 0) + attr.guarantee, attr.capability)
    return out


def build_flat(ssn: Session) -> dict[str, QueueAttr]:
    """One attribute per queue that has jobs; deserved is capped by the real capability."""
    space = ssn.space
    total_guarantee = space.zeros()
    for q in ssn.queues.values():
        total_guarantee += space.vector(q.guarantee)
    attrs: dict[str, QueueAttr] = {}
    for job in ssn.jobs.values():
        attr = attrs.get(job.queue)
        if attr is None:
            q = ssn.queues[job.queue]
            attr = attrs[job.queue] = new_attr(space, q.name, q)
            cap = attr.capability
            cap[:2] = np.where(cap[:2] <= 0, np.inf, cap[:2])
            attr.real_capability = _real_capability(ssn.total_resource, total_guarantee, attr)
        add_job(attr, job)
    known = (ssn.total_resource >= EPS) | (total_guarantee >= EPS)
    known[:2] = True
    for attr in attrs.values():
        # deserved is capped only on dimensions the real capability names (Volcano's
        # MinDimensionResource with Infinity for the others)
        capped = np.minimum(attr.deserved, attr.real_capability)
        attr.deserved = np.where(known | (attr.guarantee >= EPS), capped, attr.deserved)
        attr.deserved = np.maximum(attr.deserved, attr.guarantee)
        attr.deserved_keys |= attr.guarantee >= EPS
        attr.update_share()
    return attrs


@dataclass
class Tree:
    attrs: dict[str, QueueAttr]
    #: Queues that cannot schedule (unknown parent, cycle), with the reason.
    broken: dict[str, str]
    #: Jobs left out of the accounting because their queue is not a leaf, with the reason.
    rejected_jobs: dict[str, str]


def build_tree(ssn: Session) -> Tree:
    """Every queue under ``root`` (made up when the cluster declares none, as Volcano's queue
    controller always creates it); jobs are counted in their leaf queue and all its ancestors."""
    space = ssn.space
    attrs = {name: new_attr(space, name, q) for name, q in ssn.queues.items()}
    if ROOT not in attrs:
        attrs[ROOT] = new_attr(space, ROOT, None)
    broken: dict[str, str] = {}
    for name in ssn.queues:
        _link(ssn, attrs, broken, name, [])
    rejected: dict[str, str] = {}
    for job in ssn.jobs.values():
        attr = attrs.get(job.queue)
        if attr is None or job.queue in broken:
            continue
        if not attr.leaf:
            rejected[job.uid] = (
                f"queue {job.queue} is not a leaf queue (child queues: "
                f"{', '.join(sorted(attr.children))}); jobs can only run in leaf queues"
            )
            continue
        before = [attr.allocated.copy(), attr.request.copy(), attr.inqueue.copy(), attr.elastic.copy()]
        add_job(attr, job)
        deltas = [now - old for now, old in zip(
            (attr.allocated, attr.request, attr.inqueue, attr.elastic), before, strict=True)]
        for name in attr.ancestors:
            anc = attrs[name]
            for total, delta in zip((anc.allocated, anc.request, anc.inqueue, anc.elastic), deltas, strict=True):
                total += delta
    root = attrs[ROOT]
    if bool(np.all(np.where(root.capability_keys | (np.arange(space.size) < 2), root.capability, 0) < EPS)):
        root.capability = np.full(space.size, np.inf)
        root.capability_keys[:] = True
    root.real_capability = np.where(root.capability_keys | (np.arange(space.size) < 2), root.capability, 0)
    _check(root, is_root=True)
    for attr in attrs.values():
        attr.update_share()
    return Tree(attrs, broken, rejected)


def _link(ssn: Session, attrs: dict[str, QueueAttr], broken: dict[str, str], name: str,
          visiting: list[str]) -> bool:
    """Set ``name``'s ancestors (recursively its parents' first); False if it cannot be placed."""
    if name == ROOT:
        return True
    if name in broken:
        return False
    attr = attrs[name]
    if attr.ancestors:
        return True
    if name in visiting:
        for member in visiting[visiting.index(name):]:
            broken[member] = f"queue {member} is in a cycle of parents: {' -> '.join([*visiting, name])}"
        return False
    q = ssn.queues[name]
    parent = q.parent or ROOT
    if parent not in attrs:
        broken[name] = f"queue {name} has parent {parent}, which does not exist"
        return False
    if not _link(ssn, attrs, broken, parent, [*visiting, name]):
        broken.setdefault(name, f"queue {name} is under queue {parent}, which cannot schedule")
        return False
    attrs[parent].children[name] = attr
    attr.ancestors = [*attrs[parent].ancestors, parent]
    return True


def _check(attr: QueueAttr, is_root: bool = False) -> None:
    """Volcano's ``checkHierarchicalQueue``: deserved >= guarantee, capabilities inherited from the
    parent where unset, and the real capability: what the parent can give minus the siblings'
    guarantees, plus the queue's own guarantee, within its capability."""
    total_guarantee = np.zeros_like(attr.guarantee)
    total_deserved = np.zeros_like(attr.deserved)
    deserved_keys = np.zeros_like(attr.deserved_keys)
    for child in attr.children.values():
        child.deserved = np.maximum(child.deserved, child.guarantee)
        child.deserved_keys |= child.guarantee >= EPS
        total_deserved += child.deserved
        total_guarantee += child.guarantee
        deserved_keys |= child.deserved_keys
        for d in (0, 1):
            if child.capability[d] <= 0:
                child.capability[d] = attr.capability[d]
        inherit = ~child.capability_keys & attr.capability_keys
        inherit[:2] = False
        child.capability[inherit] = attr.capability[inherit]
        child.capability_keys |= inherit
    if is_root:
        attr.guarantee = total_guarantee
        attr.deserved = total_deserved
        attr.deserved_keys = deserved_keys
    for child in attr.children.values():
        child.real_capability = _real_capability(attr.real_capability, total_guarantee, child)
    for child in attr.children.values():
        _check(child)
