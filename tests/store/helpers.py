"""Helpers shared by the store tests (manifests come from ``tests.builders``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pumice.store import BaseStore, StoredEvent
from pumice.store.jsonutil import copy_json


@contextmanager
def shared_objects_checked() -> Iterator[None]:
    """Fail if anything mutates an object after a store published it (watch events share them, read-only).

    Every ``BaseStore`` event published inside the block is snapshotted; on exit every published object
    (and the state it replaced) must still equal its snapshot.
    """
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    original = BaseStore._publish

    def publish(self: BaseStore, event: StoredEvent) -> None:
        for obj in (event.object, event.previous):
            if obj is not None:
                seen.append((obj, copy_json(obj)))
        original(self, event)

    BaseStore._publish = publish  # type: ignore[method-assign]
    try:
        yield
    finally:
        BaseStore._publish = original  # type: ignore[method-assign]
    changed = [obj for obj, snapshot in seen if obj != snapshot]
    assert not changed, f"{len(changed)} published objects were mutated, e.g. {changed[0]}"
