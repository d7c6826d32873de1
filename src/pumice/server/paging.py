"""Chunked lists: ``limit`` and ``continue`` as kube-apiserver answers them.

A list with ``limit=N`` returns the first N objects (in namespace/name order, as etcd's keys), and, when
more remain, ``metadata.continue`` (kube-apiserver's token: base64 JSON of the list's resourceVersion and
the key to start after) and ``metadata.remainingItemCount`` (without selectors, as kube-apiserver). The
next request with that token continues the *same* list: etcd reads at the list's revision; here the rest
of the list is kept as it was (the store's own read-only objects, no copies) for ``ttl`` seconds, the
part of etcd's compaction interval. A token whose list is no longer kept is answered ``410 Expired`` with
kube-apiserver's message; one that does not decode is a ``400``.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from pumice.api.reader import load_json
from pumice.store import BadRequest, StoreError

__all__ = ["DEFAULT_TTL", "Expired", "ListPager", "Page"]

#: How long the rest of a chunked list is kept: etcd's default compaction interval in kube-apiserver.
DEFAULT_TTL = 300.0
#: How many chunked lists are kept at once (the oldest go first).
MAX_LISTS = 64


class Expired(StoreError):
    code = 410
    reason = "Expired"


@dataclass(frozen=True, slots=True)
class Page:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str | None
    remaining: int | None


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def encode_token(resource_version: str, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": int(resource_version or 0), "start": start},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str) -> tuple[str, str]:
    try:
        data = load_json(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))  # a forged token: 400
        if data.get("v") != "meta.k8s.io/v1" or not isinstance(data.get("start"), str):
            raise ValueError
        return str(int(data["rv"])), data["start"]
    except (ValueError, TypeError, AttributeError, json.JSONDecodeError):
        raise BadRequest("continue key is not valid: incorrect encoded start resourceVersion (version "
                         "meta.k8s.io/v1)") from None


class ListPager:
    """The lists that were returned in chunks, kept until their rest is read or ``ttl`` passes."""

    def __init__(self, ttl: float = DEFAULT_TTL, max_lists: int = MAX_LISTS) -> None:
        self.ttl = ttl
        self.max_lists = max_lists
        self._lists: OrderedDict[tuple[Any, ...], tuple[float, list[dict[str, Any]], list[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def page(self, scope: tuple[Any, ...], items: list[dict[str, Any]] | None, resource_version: str | None,
             limit: int | None, token: str | None, *, selectors: bool) -> Page:
        """One chunk. ``scope`` names the list (resource, namespace, selectors); ``items``/``resource_version``
        are a fresh list (ignored when ``token`` continues a kept one)."""
        now = time.monotonic()
        if token:
            rv, start = decode_token(token)
            with self._lock:
                self._expire(now)
                kept = self._lists.get((*scope, rv))
            if kept is None:
                raise Expired("The provided continue parameter is too old to display a consistent list result. "
                              "You can start a new list without the continue parameter.")
            _, items, keys = kept
            first = _after(keys, start)
        else:
            assert items is not None and resource_version is not None
            rv, first, keys = resource_version, 0, []
        assert items is not None
        if limit is None or limit <= 0 or first + limit >= len(items):
            return Page(items[first:], rv, None, None)
        end = first + limit
        if not token:
            keys = [_key(o) for o in items]
            with self._lock:
                self._expire(now)
                self._lists[(*scope, rv)] = (now, items, keys)
                self._lists.move_to_end((*scope, rv))
                while len(self._lists) > self.max_lists:
                    self._lists.popitem(last=False)
        return Page(items[first:end], rv, encode_token(rv, keys[end - 1] + "\x00"),
                    None if selectors else len(items) - end)

    def _expire(self, now: float) -> None:
        for key in [k for k, (at, _, _) in self._lists.items() if now - at > self.ttl]:
            del self._lists[key]


def _after(keys: list[str], start: str) -> int:
    """Index of the first key >= ``start`` (keys are sorted)."""
    from bisect import bisect_left

    return bisect_left(keys, start)
