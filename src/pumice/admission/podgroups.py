"""PodGroup admission: a PodGroup may only go to a leaf queue (as jobs), and only an Open one on create."""

from __future__ import annotations

from typing import Any

from pumice.store import Invalid

from .lookup import Reader, queue_and_children

__all__ = ["validate_podgroup"]


def validate_podgroup(store: Reader, pg: dict[str, Any]) -> None:
    meta = pg.get("metadata") or {}
    queue_name = str((pg.get("spec") or {}).get("queue") or "default")
    where = f'podgroup "{meta.get("namespace") or "default"}/{meta.get("name")}"'
    min_member = (pg.get("spec") or {}).get("minMember")
    if min_member is not None and int(min_member) < 0:
        raise Invalid(f"{where}: minMember {min_member} must not be negative")
    queue, kids = queue_and_children(store, queue_name)
    if queue is None:
        return  # the scheduler leaves it alone until the queue exists, as Volcano's does
    if kids:
        raise Invalid(f'{where}: can only submit a PodGroup to a leaf queue, queue "{queue_name}" has '
                      f"{len(kids)} child queues")
    state = (queue.get("status") or {}).get("state") or "Open"
    if state != "Open":
        raise Invalid(f'{where}: can only submit a PodGroup to queue with state Open, queue "{queue_name}" '
                      f"status is {state}")
