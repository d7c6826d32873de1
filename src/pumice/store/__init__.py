"""``pumice.store``: the Kubernetes-style object store that the scheduler and controllers talk to.

One protocol (``Store``, ``Watch``, ``WatchEvent``: ``protocol.py``), two embedded implementations sharing one
``BaseStore``: ``MemoryStore`` (in-process) and ``SqliteStore`` (durable, one SQLite file). ``BaseStore`` is
put together from the write path (``writes.py``, applying ``rules.py``), the admission hook (``hooks.py``)
and the watch fan-out (``fanout.py``, over the queues of ``watch.py``).

Names are imported on first use (PEP 562): a command that only reads files (``pumice schedule``) does not import
asyncio, sqlite3 and the store's machinery for the one error class a controller helper names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pumice.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .backend import Backend, LoadedState, NullBackend, StoredEvent
    from .base import DEFAULT_HISTORY, BaseStore
    from .errors import (
        AlreadyExists,
        BadRequest,
        Conflict,
        Denied,
        Forbidden,
        Gone,
        Invalid,
        NotFound,
        StoreClosed,
        StoreError,
        TooLarge,
        error_from_status,
    )
    from .memory import MemoryStore
    from .patch import apply_json_patch, apply_merge_patch, apply_patch
    from .protocol import Admission, EventType, Operation, Store, Watch, WatchEvent
    from .resources import CRDS, DEFAULT_RESOURCES, ResourceInfo, ResourceRegistry, custom_resource, custom_resources
    from .rules import format_timestamp
    from .selectors import (
        FieldRequirement,
        FieldSelector,
        parse_field_selector,
        parse_label_selector,
    )
    from .sqlite import SqliteBackend, SqliteStore
    from .watch import FeedWatcher, Watcher

_EXPORTS: dict[str, str] = {
    "Backend": "pumice.store.backend",
    "LoadedState": "pumice.store.backend",
    "NullBackend": "pumice.store.backend",
    "StoredEvent": "pumice.store.backend",
    "DEFAULT_HISTORY": "pumice.store.base",
    "BaseStore": "pumice.store.base",
    "AlreadyExists": "pumice.store.errors",
    "BadRequest": "pumice.store.errors",
    "Conflict": "pumice.store.errors",
    "Denied": "pumice.store.errors",
    "Forbidden": "pumice.store.errors",
    "Gone": "pumice.store.errors",
    "Invalid": "pumice.store.errors",
    "NotFound": "pumice.store.errors",
    "StoreClosed": "pumice.store.errors",
    "StoreError": "pumice.store.errors",
    "TooLarge": "pumice.store.errors",
    "error_from_status": "pumice.store.errors",
    "MemoryStore": "pumice.store.memory",
    "apply_json_patch": "pumice.store.patch",
    "apply_merge_patch": "pumice.store.patch",
    "apply_patch": "pumice.store.patch",
    "Admission": "pumice.store.protocol",
    "EventType": "pumice.store.protocol",
    "Operation": "pumice.store.protocol",
    "Store": "pumice.store.protocol",
    "Watch": "pumice.store.protocol",
    "WatchEvent": "pumice.store.protocol",
    "CRDS": "pumice.store.resources",
    "DEFAULT_RESOURCES": "pumice.store.resources",
    "ResourceInfo": "pumice.store.resources",
    "ResourceRegistry": "pumice.store.resources",
    "custom_resource": "pumice.store.resources",
    "custom_resources": "pumice.store.resources",
    "format_timestamp": "pumice.store.rules",
    "FieldRequirement": "pumice.store.selectors",
    "FieldSelector": "pumice.store.selectors",
    "parse_field_selector": "pumice.store.selectors",
    "parse_label_selector": "pumice.store.selectors",
    "SqliteBackend": "pumice.store.sqlite",
    "SqliteStore": "pumice.store.sqlite",
    "FeedWatcher": "pumice.store.watch",
    "Watcher": "pumice.store.watch",
}

__all__ = [
    "CRDS",
    "DEFAULT_HISTORY",
    "DEFAULT_RESOURCES",
    "Admission",
    "AlreadyExists",
    "Backend",
    "BadRequest",
    "BaseStore",
    "Conflict",
    "Denied",
    "EventType",
    "FeedWatcher",
    "FieldRequirement",
    "FieldSelector",
    "Forbidden",
    "Gone",
    "Invalid",
    "LoadedState",
    "MemoryStore",
    "NotFound",
    "NullBackend",
    "Operation",
    "ResourceInfo",
    "ResourceRegistry",
    "SqliteBackend",
    "SqliteStore",
    "Store",
    "StoreClosed",
    "StoreError",
    "StoredEvent",
    "TooLarge",
    "Watch",
    "WatchEvent",
    "Watcher",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_patch",
    "custom_resource",
    "custom_resources",
    "error_from_status",
    "format_timestamp",
    "parse_field_selector",
    "parse_label_selector",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
