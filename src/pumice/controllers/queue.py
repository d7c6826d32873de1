"""The Queue controller (``pkg/controllers/queue``): default queues, parents, Open/Closing/Closed, counts.

``root`` and ``default`` always exist; a queue without a parent gets ``parent: root``. ``CloseQueue`` /
``OpenQueue`` Commands move the state machine: a queue closes to Closed when it holds no PodGroups and
to Closing otherwise (Closed once they are gone); closing a parent first closes its open children
(marked closed-by-parent), and reopening the parent reopens exactly those. A child cannot be opened
while its parent is Closing or Closed. ``status`` counts the queue's PodGroups per phase.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from typing import Any

from pumice.clock import Clock
from pumice.events import EventRecorder
from pumice.store import AlreadyExists, NotFound, Store

from .mirror import Delta, Mirror
from .names import COMMANDS, PODGROUPS, QUEUES, annotations_of, name_of, namespace_of

__all__ = [
    "CLOSED_BY_PARENT",
    "DEFAULT_QUEUES",
    "QueueController",
    "ensure_default_queues",
]

Obj = dict[str, Any]
OPEN, CLOSING, CLOSED = "Open", "Closing", "Closed"
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"
_COUNTED = ("pending", "running", "inqueue", "unknown", "completed")
_RECONCILED = ("state", *_COUNTED)  # the status fields ``_reconcile`` reads
_NO_COUNTS: Counter[str] = Counter()  # read-only
_NO_STATUS: Obj = {}  # read-only

#: The queues the scheduler creates at start-up (``newDefaultAndRootQueue``).
DEFAULT_QUEUES: tuple[Obj, ...] = (
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "root"},
     "spec": {"weight": 1, "reclaimable": False}, "status": {"state": OPEN}},
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
     "spec": {"weight": 1, "reclaimable": True, "parent": "root"}, "status": {"state": OPEN}},
)


def ensure_default_queues(store: Store) -> bool:
    """Create ``root`` and ``default`` if missing; True if one was created."""
    created = False
    for queue in DEFAULT_QUEUES:
        with contextlib.suppress(AlreadyExists):
            store.create(QUEUES, queue)
            created = True
    return created


def _state(queue: Obj | None) -> str:
    return str(((queue or {}).get("status") or {}).get("state") or "")


def _parent(queue: Obj | None) -> str:
    return str(((queue or {}).get("spec") or {}).get("parent") or "")


def _reconciled(queue: Obj) -> tuple[Any, ...]:
    """What ``_reconcile`` reads of a queue: a change elsewhere (say, the scheduler's ``allocated``) needs none."""
    status = queue.get("status") or _NO_STATUS
    return _parent(queue), *map(status.get, _RECONCILED)


def _pg_queue(pg: Obj | None) -> str:
    return str(((pg or {}).get("spec") or {}).get("queue") or "default") if pg is not None else ""


def _pg_phase(pg: Obj) -> str:
    return str((pg.get("status") or {}).get("phase") or "Pending").lower()


class QueueController:
    """Keeps queue parents, states and PodGroup counts; handles Open/CloseQueue Commands."""

    def __init__(self, store: Store, clock: Clock, recorder: EventRecorder | None = None) -> None:
        self.store = store
        self.clock = clock
        self.recorder = recorder or EventRecorder(store, "vc-controller-manager", clock=clock)
        self.queues = Mirror(store, QUEUES)
        self.podgroups = Mirror(store, PODGROUPS)
        self.commands = Mirror(store, COMMANDS)
        self._children: dict[str, set[str]] = defaultdict(set)
        self._counts: dict[str, Counter[str]] = defaultdict(Counter)
        self._dirty: set[str] = set(name for _, name in self.queues.objects)
        self._wrote = False
        for queue in self.queues.objects.values():
            self._children[_parent(queue) or "root"].add(name_of(queue))
        for pg in self.podgroups.objects.values():
            self._counts[_pg_queue(pg)][_pg_phase(pg)] += 1
        self.queues.drain()
        self.podgroups.drain()

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        """Whether ``sync`` has anything to do (see ``ControllerManager.sync``)."""
        return bool(self._dirty) or self.queues.pending() or self.podgroups.pending() or self.commands.pending()

    def sync(self) -> bool:
        self._wrote = False
        for d in self.queues.drain():
            self._on_queue(d)
        for d in self.podgroups.drain():
            self._on_podgroup(d)
        for d in self.commands.drain():
            self._on_command(d)
        while self._dirty:
            dirty, self._dirty = sorted(self._dirty), set()
            for name in dirty:
                self._reconcile(name)
        return self._wrote

    # --- deltas ------------------------------------------------------------------------------------

    def _on_queue(self, d: Delta) -> None:
        name = d.key[1]
        was = None if d.old is None else _parent(d.old) or "root"
        now = None if d.new is None else _parent(d.new) or "root"
        if was != now:
            if was is not None:
                self._children[was].discard(name)
            if now is not None:
                self._children[now].add(name)
        # a change _reconcile does not read (say, the scheduler's ``allocated``) leaves it as it last left it
        if d.new is not None and (d.old is None or _reconciled(d.old) != _reconciled(d.new)):
            self._dirty.add(name)

    def _on_podgroup(self, d: Delta) -> None:
        old, new = d.old, d.new
        if (old is not None and new is not None and old.get("spec") is new.get("spec")
                and (old.get("status") or _NO_STATUS).get("phase") == (new.get("status") or _NO_STATUS).get("phase")):
            return  # same spec (stored objects share what a write left alone), same phase: counted as before
        was = None if old is None else (_pg_queue(old), _pg_phase(old))
        now = None if new is None else (_pg_queue(new), _pg_phase(new))
        if was == now:
            return  # counted as before (a condition changed, say): the queue is as its last reconcile left it
        if was is not None:
            self._counts[was[0]][was[1]] -= 1
            self._dirty.add(was[0])
        if now is not None:
            self._counts[now[0]][now[1]] += 1
            self._dirty.add(now[0])

    def _on_command(self, d: Delta) -> None:
        cmd = d.new
        if cmd is None or d.old is not None:
            return
        target = cmd.get("target") or {}
        if target.get("kind") != "Queue":
            return
        with contextlib.suppress(NotFound):
            self.commands.forget(self.store.delete(COMMANDS, namespace_of(cmd) or "default", name_of(cmd)))
            self._wrote = True
        name, action = str(target.get("name")), cmd.get("action")
        if action == "CloseQueue":
            self.close(name)
        elif action == "OpenQueue":
            self.open(name)

    # --- state machine -----------------------------------------------------------------------------

    def _holds_podgroups(self, name: str) -> bool:
        counts = self._counts.get(name)
        return counts is not None and sum(counts.values()) > 0

    def _set_state(self, name: str, state: str) -> bool:
        queue = self.queues.get("", name)
        if queue is None or _state(queue) == state:
            return False
        try:
            self.queues.put(self.store.patch(QUEUES, None, name, {"status": {"state": state}}, subresource="status",
                                             copy=False))
        except NotFound:
            return False
        self._wrote = True
        return True

    def _annotate(self, name: str, value: str | None) -> None:
        with contextlib.suppress(NotFound):
            patch = {"metadata": {"annotations": {CLOSED_BY_PARENT: value}}}
            self.queues.put(self.store.patch(QUEUES, None, name, patch, copy=False))
            self._wrote = True

    def close(self, name: str) -> None:
        """CloseQueue: close open children first (marked closed-by-parent), then this queue."""
        if self.queues.get("", name) is None:
            return
        for child in sorted(self._children.get(name, ())):
            if _state(self.queues.get("", child)) not in (CLOSING, CLOSED):
                self._annotate(child, name)
                self.close(child)
        if self._set_state(name, CLOSING if self._holds_podgroups(name) else CLOSED):
            self.recorder.event(self.queues.get("", name) or {}, "Normal", "CloseQueue", "Close queue succeed")

    def open(self, name: str) -> None:
        """OpenQueue: refused while the parent is Closing/Closed; reopens children this queue closed."""
        queue = self.queues.get("", name)
        if queue is None:
            return
        parent = _parent(queue)
        if parent and _state(self.queues.get("", parent)) in (CLOSING, CLOSED):
            self.recorder.event(queue, "Warning", "OpenQueue",
                                f"OpenQueue queue failed for Failed to open queue {name} because its parent queue "
                                f"{parent} is closing or closed. Open the parent queue first.")
            return
        self._set_state(name, OPEN)
        for child in sorted(self._children.get(name, ())):
            if annotations_of(self.queues.get("", child) or {}).get(CLOSED_BY_PARENT) == name:
                self._annotate(child, None)
                self.open(child)

    # --- reconcile ---------------------------------------------------------------------------------

    def _reconcile(self, name: str) -> None:
        queue = self.queues.get("", name)
        if queue is None:
            return
        if name != "root" and not _parent(queue):
            with contextlib.suppress(NotFound):
                queue = self.store.patch(QUEUES, None, name, {"spec": {"parent": "root"}}, copy=False)
                self.queues.put(queue)
                self._wrote = True
        status = queue.get("status") or {}
        wanted: Obj = {}
        state = _state(queue)
        if not state:
            wanted["state"] = OPEN
        elif state == CLOSING and not self._holds_podgroups(name):
            wanted["state"] = CLOSED
        counts = self._counts.get(name) or _NO_COUNTS
        for field in _COUNTED:
            count = counts.get(field, 0)
            if int(status.get(field) or 0) != count:
                wanted[field] = count
        if wanted:
            try:
                patched = self.store.patch(QUEUES, None, name, {"status": wanted}, subresource="status", copy=False)
            except NotFound:
                return
            self.queues.put(patched)
            self._wrote = True
