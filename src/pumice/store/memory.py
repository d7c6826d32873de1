"""``MemoryStore``: the embedded, versioned, watchable store with no persistence.

Everything (dicts per resource and namespace, the bounded event log, one ``threading.RLock``) lives in
``BaseStore``; this class only plugs in the ``NullBackend`` so that it behaves exactly like ``SqliteStore``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from datetime import datetime

from .backend import NullBackend
from .base import DEFAULT_HISTORY, BaseStore
from .protocol import Admission
from .resources import ResourceInfo

__all__ = ["MemoryStore"]


class MemoryStore(BaseStore):
    """An in-process store: fast, thread-safe, gone when the process ends."""

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] | None = None,
        admission: Admission | None = None,
        history: int = DEFAULT_HISTORY,
        rng: random.Random | None = None,
        resources: Iterable[ResourceInfo] | None = None,
    ) -> None:
        super().__init__(NullBackend(), clock=clock, admission=admission, history=history, rng=rng, resources=resources)
