"""Kubernetes Events, written the way client-go's recorder writes them.

Controllers and the scheduler tell the story of an object (``kubectl describe``, ``kubectl get events``)
through one :class:`EventRecorder` each. The same event repeated about the same object is folded into
one Event whose ``count`` and ``lastTimestamp`` move, as client-go's correlator does, so a pod that
stays unschedulable for an hour is one Event, not three thousand. Events are best effort: a failed
write is logged and never fails the caller.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Literal

from pumice.clock import Clock, WallClock, rfc3339
from pumice.store import NotFound, Store, StoreError

__all__ = ["EVENTS", "EventRecorder", "EventType"]

EVENTS = "events"
EventType = Literal["Normal", "Warning"]

log = logging.getLogger("pumice.events")

#: How many distinct (object, type, reason, message) keys a recorder remembers for folding.
_REMEMBERED = 4096


class EventRecorder:
    """Records Events about objects into ``store`` as ``component`` (``volcano``, ``vc-controller-manager``)."""

    def __init__(self, store: Store, component: str, *, clock: Clock | None = None, host: str = "") -> None:
        self.store = store
        self.component = component
        self.host = host
        self.clock: Clock = clock or WallClock()
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, str, int]] = OrderedDict()
        self._serial = 0
        # events are built here for the call and their results unread: no copy either way
        self._handed: dict[str, Any] = {"copy": False, "owned": True}

    def event(self, obj: Mapping[str, Any], type: EventType, reason: str, message: str) -> None:
        """Record that ``reason: message`` happened to ``obj`` (a wire-form object with kind and metadata)."""
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        key = (str(meta.get("uid") or f"{obj.get('kind')}/{namespace}/{meta.get('name')}"), type, reason, message)
        now = rfc3339(self.clock.now())
        try:
            folded = self._seen.get(key)
            if folded is not None and self._fold(key, folded, now):
                return
            self._create(key, obj, meta, namespace, type, reason, message, now)
        except StoreError as exc:
            log.warning("event %s on %s/%s not recorded: %s", reason, namespace, meta.get("name"), exc)

    def _fold(self, key: tuple[str, str, str, str], folded: tuple[str, str, int], now: str) -> bool:
        namespace, name, count = folded
        try:
            self.store.patch(EVENTS, namespace, name, {"count": count + 1, "lastTimestamp": now}, **self._handed)
        except NotFound:
            del self._seen[key]
            return False
        self._seen[key] = (namespace, name, count + 1)
        self._seen.move_to_end(key)
        return True

    def _create(self, key: tuple[str, str, str, str], obj: Mapping[str, Any], meta: Mapping[str, Any],
                namespace: str, type: EventType, reason: str, message: str, now: str) -> None:
        self._serial += 1
        name = f"{meta.get('name')}.{int(self.clock.now() * 1e9):x}{self._serial:x}"
        involved = {
            "kind": obj.get("kind"),
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "apiVersion": obj.get("apiVersion"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {k: v for k, v in involved.items() if v is not None},
            "reason": reason,
            "message": message,
            "type": type,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "reportingComponent": self.component,
            "reportingInstance": self.host or self.component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self.store.create(EVENTS, event, **self._handed)
        self._seen[key] = (namespace, name, 1)
        if len(self._seen) > _REMEMBERED:
            self._seen.popitem(last=False)
