"""``SqliteStore``: ``BaseStore`` made durable by one SQLite file (stdlib ``sqlite3``, WAL, synchronous=FULL).

Tables: ``objects`` (resource, namespace, name, resource_version, json), ``events`` (the bounded log that
watches resume from, with the previous state so selector transitions replay correctly after a restart) and
``meta`` (the resourceVersion counter). Each write is one transaction committed before the call returns,
so an acknowledged write survives ``kill -9``. The in-memory index serves reads; SQLite is written, and
read only on open. The file is opened in exclusive locking mode: a second store on the same file (which
could bind a pod twice) fails to open instead.

Objects larger than ``max_object_bytes`` (3 MiB by default, Kubernetes' limit) are refused with
``TooLarge`` (413) before anything is written, whatever write would have made them so (a patch that grows
an object included). The file and its journal are private to the user (mode 0600): they hold every object,
Secrets included.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from .backend import LoadedState, StoredEvent
from .base import DEFAULT_HISTORY, BaseStore
from .errors import StoreError, TooLarge
from .protocol import Admission
from .resources import ResourceInfo

__all__ = ["SqliteBackend", "SqliteStore"]

SCHEMA_VERSION = "1"
#: Largest object stored, as JSON (Kubernetes: 3 MiB per request body, about 1.5 MiB per object in etcd).
DEFAULT_MAX_OBJECT_BYTES = 3 * 1024 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    resource_version INTEGER NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    resource_version INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    resource TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    json TEXT NOT NULL,
    previous_json TEXT
);
"""


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _loads_optional(text: str | None) -> dict[str, Any] | None:
    return None if text is None else json.loads(text)


class SqliteBackend:
    """Durable ``Backend`` on one SQLite file; see the module docstring."""

    def __init__(self, path: str | os.PathLike[str], *, history: int, timeout: float = 5.0,
                 max_object_bytes: int | None = DEFAULT_MAX_OBJECT_BYTES) -> None:
        self.path = os.fspath(path)
        self._history = history
        self.max_object_bytes = max_object_bytes
        _private(self.path)
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=timeout)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store file {self.path!r}: {exc}") from exc
        try:
            self._conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() not in ("wal", "memory"):
                raise StoreError(f"cannot put {self.path!r} in WAL mode (got {mode!r})")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)
            self._conn.execute("BEGIN IMMEDIATE")  # in exclusive mode the write lock is kept from now on
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('resource_version', '0')")
            self._conn.execute("COMMIT")
            version = self._meta("schema_version")
            if version != SCHEMA_VERSION:
                raise StoreError(f"{self.path!r} has store schema {version!r}, expected {SCHEMA_VERSION!r}")
        except sqlite3.OperationalError as exc:
            self._conn.close()
            raise StoreError(f"cannot open store file {self.path!r}: {exc} (is another store using it?)") from exc
        except BaseException:
            self._conn.close()
            raise

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def load(self) -> LoadedState:
        """Read every object and the newest ``history`` events."""
        state = LoadedState(resource_version=int(self._meta("resource_version") or 0))
        rows = self._conn.execute("SELECT resource, namespace, name, json FROM objects")
        state.objects = [(resource, ns, name, json.loads(text)) for resource, ns, name, text in rows]
        rows = self._conn.execute(
            "SELECT resource_version, type, resource, namespace, name, json, previous_json FROM events "
            "ORDER BY resource_version DESC LIMIT ?",
            (self._history,),
        )
        events = [
            StoredEvent(rv, kind, resource, ns, name, json.loads(text), _loads_optional(prev))
            for rv, kind, resource, ns, name, text, prev in rows
        ]
        events.reverse()
        state.events = events
        return state

    def record(self, event: StoredEvent) -> None:
        """Stage one write; opens a transaction when none is open."""
        conn = self._conn
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")
        text = _dumps(event.object)
        limit = self.max_object_bytes
        if limit is not None and event.type != "DELETED" and len(text) > limit >> 2:
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > limit:
                raise TooLarge(f"Request entity too large: the object would be {size} bytes, the limit is {limit}")
        key = (event.resource, event.namespace, event.name)
        if event.type == "DELETED":
            conn.execute("DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?", key)
        else:
            conn.execute("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)", (*key, event.resource_version, text))
        previous = None if event.previous is None else _dumps(event.previous)
        conn.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
            (event.resource_version, event.type, *key, text, previous),
        )
        rv = event.resource_version
        conn.execute("DELETE FROM events WHERE resource_version <= ?", (rv - self._history,))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'resource_version'", (str(rv),))

    def commit(self) -> None:
        """Commit (WAL + synchronous=FULL: durable when this returns)."""
        if self._conn.in_transaction:
            self._conn.execute("COMMIT")

    def rollback(self) -> None:
        """Discard the open transaction, if any."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        """Roll back anything uncommitted and close the file."""
        self.rollback()
        self._conn.close()


def _private(path: str) -> None:
    """Create ``path`` (and the journal files SQLite derives from it, which take its mode) as 0600."""
    if path in ("", ":memory:") or path.startswith("file:"):
        return
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError:
        return  # not a file we can create: SQLite says why when it opens it
    for name in (path, path + "-wal", path + "-shm", path + "-journal"):
        try:
            if os.stat(name).st_mode & 0o077:
                os.chmod(name, 0o600)
        except FileNotFoundError:
            continue


class SqliteStore(BaseStore):
    """A durable store in one SQLite file; reopening it restores objects, the counter and the event log."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], datetime] | None = None,
        admission: Admission | None = None,
        history: int = DEFAULT_HISTORY,
        rng: random.Random | None = None,
        resources: Iterable[ResourceInfo] | None = None,
        timeout: float = 5.0,
        max_object_bytes: int | None = DEFAULT_MAX_OBJECT_BYTES,
    ) -> None:
        if history < 1:
            raise ValueError("history must keep at least one event")
        backend = SqliteBackend(path, history=history, timeout=timeout, max_object_bytes=max_object_bytes)
        self.path = backend.path
        try:
            super().__init__(backend, clock=clock, admission=admission, history=history, rng=rng, resources=resources)
        except BaseException:
            backend.close()
            raise
