"""What admission rules read from the store: queues, children, and pods allocated to a queue.

Rules only read what they look up, so the lookups take the store's own objects, uncopied, when it can
hand them out (``copy=False``). They read through a :class:`Reader`: the store they guard (embedded), or a
read-only view of a real API server (the webhook server's ``pumice.webhooks.ApiReader``).
"""

from __future__ import annotations

from typing import Any, Protocol

from pumice.api.group_name import group_name
from pumice.api.resources import PODGROUPS, QUEUES
from pumice.store import NotFound
from pumice.store.protocol import FieldSelectorArg, LabelSelectorArg

__all__ = [
    "PODGROUPS",
    "QUEUES",
    "Reader",
    "allocated_pods",
    "ancestors",
    "children",
    "get_queue",
    "parent_of",
    "queue_and_children",
]

Obj = dict[str, Any]



class Reader(Protocol):
    """The reads of ``pumice.store.Store`` that admission rules make (``NotFound`` from ``get`` when absent)."""

    def get(self, resource: str, namespace: str | None, name: str, *, copy: bool = True) -> Obj: ...

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        label_selector: LabelSelectorArg = None,
        field_selector: FieldSelectorArg = None,
        *,
        copy: bool = True,
    ) -> tuple[list[Obj], str]: ...


def get_queue(store: Reader, name: str) -> Obj | None:
    try:
        return store.get(QUEUES, None, name, copy=False)
    except NotFound:
        return None


def parent_of(queue: Obj) -> str:
    """The parent's name; "" only for root (an unset parent means root)."""
    name = (queue.get("metadata") or {}).get("name")
    parent = str((queue.get("spec") or {}).get("parent") or "")
    return "" if name == "root" else parent or "root"


def children(store: Reader, name: str) -> list[Obj]:
    """Queues whose parent is ``name`` (queues without a parent are root's children)."""
    items, _ = store.list(QUEUES, copy=False)
    return _children(items, name)


def _children(queues: list[Obj], name: str) -> list[Obj]:
    return [q for q in queues if (q.get("metadata") or {}).get("name") != "root" and parent_of(q) == name]


def queue_and_children(store: Reader, name: str) -> tuple[Obj | None, list[Obj]]:
    """``(get_queue(store, name), children(store, name))`` from one list of the queues."""
    items, _ = store.list(QUEUES, copy=False)
    queue = next((q for q in items if (q.get("metadata") or {}).get("name") == name), None)
    return queue, _children(items, name) if queue is not None else []


def ancestors(store: Reader, name: str, limit: int = 64) -> list[str]:
    """``name``'s parent, grandparent, ... up to root (stops on a missing queue or a cycle)."""
    chain: list[str] = []
    current = get_queue(store, name)
    while current is not None and len(chain) < limit:
        parent = parent_of(current)
        if not parent or parent in chain:
            break
        chain.append(parent)
        current = get_queue(store, parent)
    return chain


def allocated_pods(store: Reader, queue: Obj) -> int:
    """Pods allocated in ``queue``: bound, not finished, not being deleted, in PodGroups of the queue.

    Volcano reads ``status.allocated.pods`` written by the scheduler; that figure can lag (it is
    rewritten only by a session that still sees the queue's jobs), so the pods are counted live.
    """
    name = (queue.get("metadata") or {}).get("name")
    groups, _ = store.list(PODGROUPS, copy=False)
    members = {
        ((g.get("metadata") or {}).get("namespace"), (g.get("metadata") or {}).get("name"))
        for g in groups
        if ((g.get("spec") or {}).get("queue") or "default") == name
    }
    if not members:
        return 0
    pods, _ = store.list("pods", copy=False)
    count = 0
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("namespace"), group_name(pod)) not in members or meta.get("deletionTimestamp"):
            continue
        if (pod.get("spec") or {}).get("nodeName") and (pod.get("status") or {}).get("phase") not in (
            "Succeeded",
            "Failed",
        ):
            count += 1
    return count
