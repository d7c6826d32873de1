"""The store contract shared by every implementation (memory, SQLite, a real API server).

Objects are plain JSON dicts in Kubernetes wire form; resources are Kubernetes resource strings
(``pods``, ``podgroups.scheduling.volcano.sh``); resourceVersions are decimal strings that only grow.
Everything handed out is a copy owned by the caller, except watch event objects: those are read-only.

Three knobs let the hot loops (scheduler write-back, controllers, simulated kubelets) skip work a store
would otherwise do for safety; a store for which that work costs nothing (a remote one, whose results are
decoded fresh per call) accepts them and ignores them:

- ``copy=False`` on every read and write: the result may be the store's own object, read-only (the caller
  only reads it, or ignores it). Without it, the result is the caller's to modify.
- ``owned=True`` on ``create`` and ``patch``: the caller hands the object or merge patch over (plain JSON,
  built for this call, never touched again), so the store may keep any part of it instead of a copy.
- ``change_marker()``: a cheap value that moves whenever the store changes as its watches see it, for loops
  that poll until quiet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pumice.api.labels import Selector

from .selectors import FieldSelector

__all__ = [
    "Admission",
    "EventType",
    "FieldSelectorArg",
    "LabelSelectorArg",
    "Operation",
    "Store",
    "Watch",
    "WatchEvent",
]

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
Operation = Literal["CREATE", "UPDATE", "DELETE"]
LabelSelectorArg = str | Mapping[str, Any] | Selector | None
FieldSelectorArg = str | FieldSelector | None

Admission = Callable[[str, str, dict[str, Any] | None, dict[str, Any] | None], dict[str, Any] | None]
"""``admission(operation, resource, new, old) -> new | None``.

Called on every write, inside the store's lock, before anything is stored. ``operation`` is ``"CREATE"``,
``"UPDATE"`` or ``"DELETE"``. ``resource`` is the resource string, qualified with the subresource for
subresource writes as Kubernetes does (``"pods/status"``, ``"pods/binding"``), so that a policy written for
the main resource is not applied to status writes by accident. ``new`` is the object about to be stored
(``None`` for DELETE), ``old`` a copy of the stored one (``None`` for CREATE). Return a (possibly mutated)
object to store instead (defaulting), or ``None`` to keep ``new``; raise ``Invalid`` to refuse the write,
which then changes nothing. System fields (uid, resourceVersion, creationTimestamp, ...) are re-applied
after admission, and for subresource writes only the subresource's part of a returned object is used.

A hook may declare the resource strings (qualified as above) it wants to see as a ``resources`` attribute (a
set); the embedded stores then skip it for every other write, and with it the copies made to protect the
stored objects from it. ``updates`` and ``deletes`` attributes (sets) likewise narrow the updates and the
deletions it sees (without one: those of ``resources``). A hook that declares ``plain_results = True``
promises that when it answers with ``new`` itself (or ``None``), whatever it changed in it is plain JSON it
keeps no reference to: the embedded stores then store it without copying it once more.
"""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change seen by a watch.

    ``object`` is read-only: the embedded stores share one object among all watches of an event (and with
    their own index), so mutating it would corrupt them; copy it first (``BaseStore.watch(copy=True)``
    gives private copies).
    """

    type: EventType
    object: dict[str, Any]


@runtime_checkable
class Watch(Protocol):
    """A stream of ``WatchEvent``; thread-safe, and usable from asyncio via ``anext``."""

    @property
    def closed(self) -> bool:
        """True once closed (by the caller or by the store); queued events can still be read."""
        ...

    @property
    def pending(self) -> int:
        """How many events are queued, unread (cheap: no wait); an event counted here is there to read."""
        ...

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        """Wait up to ``timeout`` seconds (``None``: forever); ``None`` on timeout or closed and empty."""
        ...

    def drain(self) -> list[WatchEvent]:
        """All queued events, without blocking."""
        ...

    async def anext(self, timeout: float | None = None) -> WatchEvent | None:
        """Like ``next`` but awaits without blocking the event loop."""
        ...

    def close(self) -> None:
        """Stop receiving events; blocked readers wake up and get ``None``."""
        ...

    def __iter__(self) -> Iterator[WatchEvent]: ...


@runtime_checkable
class Store(Protocol):
    """Get, list, watch and write Kubernetes objects (see the module docstring for the conventions)."""

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the latest write ("0" for an empty store)."""
        ...

    def change_marker(self) -> object:
        """A value, cheap to read (no lock, no I/O), that differs from every earlier one once any watch of this
        store has been handed a new event; an equal value means no watch got anything new in between.

        The embedded stores count their writes (each counted after its event reached every watch); a remote
        store counts the events its watches receive. Not a resourceVersion: only compare it for equality.
        """
        ...

    def get(self, resource: str, namespace: str | None, name: str, *, copy: bool = True) -> dict[str, Any]:
        """One object; ``NotFound`` if absent. ``namespace`` is ``None`` for cluster-scoped resources."""
        ...

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        label_selector: LabelSelectorArg = None,
        field_selector: FieldSelectorArg = None,
        *,
        copy: bool = True,
    ) -> tuple[list[dict[str, Any]], str]:
        """Matching objects sorted by namespace/name, and the resourceVersion to watch from."""
        ...

    def create(
        self, resource: str, obj: Mapping[str, Any], *, copy: bool = True, owned: bool = False
    ) -> dict[str, Any]:
        """Store a new object; sets uid (unless given), creationTimestamp, resourceVersion, generation 1.

        ``metadata.generateName`` is honoured when ``metadata.name`` is absent; a namespaced object without
        a namespace goes to ``default``. ``AlreadyExists`` if the name is taken. ``owned=True`` hands ``obj``
        over (the store may fill in its system fields in it and keep it).
        """
        ...

    def update(
        self, resource: str, obj: Mapping[str, Any], *, subresource: str | None = None, copy: bool = True
    ) -> dict[str, Any]:
        """Replace an object. A given ``metadata.resourceVersion`` must be current (else ``Conflict``).

        Without ``subresource`` the stored ``status`` is kept (for resources with a status subresource);
        with ``subresource="status"`` only ``status`` changes. ``generation`` bumps when the spec changes.
        """
        ...

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        copy: bool = True,
        owned: bool = False,
    ) -> dict[str, Any]:
        """Apply a JSON merge patch (``"merge"``) or a JSON patch (``"json"``) and store the result.

        ``owned=True`` hands a merge patch over: the store may keep its lists and values as they are.
        """
        ...

    def delete(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        *,
        resource_version: str | None = None,
        copy: bool = True,
    ) -> dict[str, Any]:
        """Delete an object (or mark it with ``deletionTimestamp`` while finalizers remain)."""
        ...

    def bind(self, namespace: str, pod_name: str, node_name: str, *, copy: bool = True) -> dict[str, Any]:
        """Set ``spec.nodeName`` of an unbound pod; ``Conflict`` if it is bound already or being deleted."""
        ...

    def watch(
        self,
        resource: str,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: LabelSelectorArg = None,
        field_selector: FieldSelectorArg = None,
        allow_bookmarks: bool = False,
    ) -> Watch:
        """Events after ``resource_version`` (``Gone`` if compacted), then live events.

        ``None`` or ``"0"`` starts with a synthetic ``ADDED`` for every current object, as Kubernetes does.
        """
        ...

    def bookmark(self) -> None:
        """Send a ``BOOKMARK`` with the current resourceVersion to every watch that allows bookmarks."""
        ...

    def close(self) -> None:
        """Release resources and close every open watch."""
        ...
