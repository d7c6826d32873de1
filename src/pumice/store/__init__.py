"""``pumice.store``: the Kubernetes-style object store that the scheduler and controllers talk to.

One protocol (``Store``, ``Watch``, ``WatchEvent``: ``protocol.py``), two embedded implementations sharing one
``BaseStore``: ``MemoryStore`` (in-process) and ``SqliteStore`` (durable, one SQLite file). ``BaseStore`` is
put together from the write path (``writes.py``, applying ``rules.py``), the admission hook (``hooks.py``)
and the watch fan-out (``fanout.py``, over the queues of ``watch.py``).
"""

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
