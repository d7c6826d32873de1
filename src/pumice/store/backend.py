"""The small persistence interface under ``BaseStore``, and the do-nothing backend of ``MemoryStore``.

All semantics (validation, concurrency, watches, admission) live in ``BaseStore`` over an in-memory index;
a backend only makes each write durable. It sees one ``StoredEvent`` per write, in resourceVersion order,
and is told when to commit or roll back, so memory and SQLite cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = ["Backend", "LoadedState", "NullBackend", "StoredEvent"]


@dataclass(slots=True)
class StoredEvent:
    """One write: the state after it (``object``) and before it (``previous``, ``None`` for ADDED).

    For ``DELETED`` the object is the last state, carrying the deletion's resourceVersion. The event and both
    dicts are owned by the store and never mutated (not frozen: a frozen dataclass costs every write a slower
    constructor).
    """

    resource_version: int
    type: Literal["ADDED", "MODIFIED", "DELETED"]
    resource: str
    namespace: str
    name: str
    object: dict[str, Any]
    previous: dict[str, Any] | None


@dataclass(slots=True)
class LoadedState:
    """What a backend hands back on open: the counter, every object and the tail of the event log."""

    resource_version: int = 0
    objects: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)
    events: list[StoredEvent] = field(default_factory=list)


class Backend(Protocol):
    """Durability for ``BaseStore``; every method is called with the store's lock held."""

    def load(self) -> LoadedState:
        """Read the persisted state (empty for a new store)."""
        ...

    def record(self, event: StoredEvent) -> None:
        """Stage one write (object upsert/delete, event append, counter) in the current transaction."""
        ...

    def commit(self) -> None:
        """Make every staged write durable before returning."""
        ...

    def rollback(self) -> None:
        """Discard every staged write."""
        ...

    def close(self) -> None:
        """Release files; staged writes are discarded."""
        ...


class NullBackend:
    """No persistence: the in-memory index is the whole store."""

    def load(self) -> LoadedState:
        return LoadedState()

    def record(self, event: StoredEvent) -> None:
        pass

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass
