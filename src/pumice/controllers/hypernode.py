"""The HyperNode controller (``pkg/controllers/hypernode``): node counts, and discovery from node labels.

* ``status.nodeCount`` of every HyperNode is the number of Nodes its ``type: Node`` members pick (exactMatch name,
  regexMatch pattern, labelMatch labels), counted as Volcano's ``actualNodeCnt`` counts them, and kept current
  as Nodes and HyperNodes come, go and change labels.
* With a discovery configuration (the label source of ``volcano-controller.conf``, the same file as
  ``pumice schedule --discover-topology``), the HyperNodes labelled
  ``volcano.sh/network-topology-source: label`` are reconciled with what the Nodes' labels say, as Volcano's
  ``reconcileTopology``: missing ones created, changed ones updated, the rest deleted. HyperNodes made by
  hand (without that label) are never touched.
"""

from __future__ import annotations

from typing import Any

from pumice.api.hypernode_members import node_members
from pumice.clock import Clock
from pumice.store import AlreadyExists, NotFound, Store, StoreError
from pumice.topology_discovery import SOURCE, SOURCE_LABEL, DiscoveryConfig, discover_hypernodes

from .mirror import Delta, Mirror

__all__ = ["HYPERNODES", "HyperNodeController", "node_count"]

HYPERNODES = "hypernodes.topology.volcano.sh"
NODES = "nodes"
#: Seconds before a count whose status write failed (a conflict, the API server away) is written again.
RETRY_AFTER = 2.0
Obj = dict[str, Any]


def node_count(hypernode: Obj, nodes: dict[str, dict[str, str]]) -> int:
    """How many of ``nodes`` (name -> labels) the HyperNode's members select, each counted once (Volcano's
    ``actualNodeCnt``, with the membership rules of ``pumice.api.hypernode_members``)."""
    names = list(nodes)
    labels = [nodes[n] for n in names]
    index = {n: j for j, n in enumerate(names)}
    picked: set[int] = set()
    for member in (hypernode.get("spec") or {}).get("members") or []:
        if isinstance(member, dict):
            picked |= node_members(member).select(names, labels, index)
    return len(picked)


def _labels(node: Obj | None) -> dict[str, str]:
    return dict(((node or {}).get("metadata") or {}).get("labels") or {})


class HyperNodeController:
    """Keeps HyperNodes' ``status.nodeCount`` current and, with ``discovery``, HyperNodes from node labels."""

    def __init__(self, store: Store, clock: Clock, discovery: DiscoveryConfig | None = None) -> None:
        self.store = store
        self.clock = clock
        self.discovery = discovery
        self.nodes = Mirror(store, NODES)
        self.hypernodes = Mirror(store, HYPERNODES)
        self._node_labels: dict[str, dict[str, str]] = {}
        self._stale: set[str] | None = None  # HyperNodes whose count to check (None: all)
        self._rediscover = discovery is not None
        # Writes that failed (a conflict, the API server away) are tried again at ``_retry_at``, not only
        # when something else changes: the HyperNodes whose count could not be written, and discovery.
        self._failed: set[str] = set()
        self._failed_discovery = False
        self._retry_at = 0.0

    def _retrying(self) -> bool:
        return bool(self._failed) or self._failed_discovery

    def pending(self) -> bool:
        return self._rediscover or self._stale is None or bool(self._stale) or self.nodes.pending() \
            or self.hypernodes.pending() or (self._retrying() and self.clock.now() >= self._retry_at)

    def next_wakeup(self) -> float | None:
        return self._retry_at if self._retrying() else None

    def set_discovery(self, discovery: DiscoveryConfig | None) -> None:
        """A new discovery configuration (re-read): reconcile again."""
        self.discovery = discovery
        self._rediscover = discovery is not None

    def sync(self) -> bool:
        if self._retrying() and self.clock.now() >= self._retry_at:
            for name in self._failed:
                self._recount(name)
            self._failed = set()
            self._rediscover |= self._failed_discovery and self.discovery is not None
            self._failed_discovery = False
        self._drain()
        wrote = False
        if self._rediscover:
            self._rediscover = False
            wrote |= self._reconcile()
            self._drain()
        wrote |= self._count()
        return wrote

    def _drain(self) -> None:
        self._nodes_moved(self.nodes.drain())
        for delta in self.hypernodes.drain():
            if delta.new is not None:
                self._recount(delta.key[1])

    def _recount(self, name: str) -> None:
        """Count HyperNode ``name`` at the next ``_count`` (all are counted when ``_stale`` is None)."""
        if self._stale is not None:
            self._stale.add(name)

    def _nodes_moved(self, deltas: list[Delta]) -> None:
        moved = False
        for delta in deltas:
            name = delta.key[1]
            if delta.new is None:
                moved |= self._node_labels.pop(name, None) is not None
                continue
            labels = _labels(delta.new)
            if self._node_labels.get(name) != labels:
                self._node_labels[name] = labels
                moved = True
        if moved:
            self._stale = None
            self._rediscover = self.discovery is not None

    def _count(self) -> bool:
        stale, self._stale = self._stale, set()
        names = list(self.hypernodes.objects) if stale is None else [("", n) for n in sorted(stale)]
        wrote = False
        for key in names:
            hn = self.hypernodes.objects.get(key)
            if hn is None:
                continue
            count = node_count(hn, self._node_labels)
            if (hn.get("status") or {}).get("nodeCount") == count:
                continue
            try:
                self.hypernodes.put(self.store.patch(HYPERNODES, None, key[1], {"status": {"nodeCount": count}},
                                                     subresource="status"))
                wrote = True
            except NotFound:
                pass  # deleted meanwhile: its watch event follows
            except StoreError:
                self._retry_later()
                self._failed.add(key[1])
        return wrote

    def _reconcile(self) -> bool:
        """Volcano ``reconcileTopology`` for the label source."""
        assert self.discovery is not None
        discovered = {h["metadata"]["name"]: h for h in discover_hypernodes(self.nodes.objects.values(),
                                                                            self.discovery)}
        existing = {key[1]: hn for key, hn in self.hypernodes.objects.items()
                    if ((hn.get("metadata") or {}).get("labels") or {}).get(SOURCE_LABEL) == SOURCE}
        wrote = False
        for name, want in discovered.items():
            try:
                have = existing.get(name)
                if have is None:
                    if self.hypernodes.get("", name) is not None:
                        continue  # a HyperNode made by hand owns the name
                    try:
                        self.hypernodes.put(self.store.create(HYPERNODES, want))
                    except AlreadyExists:
                        continue
                    wrote = True
                    self._recount(name)  # its own write's watch event is dropped: counted from here
                elif have.get("spec") != want["spec"] or any(
                        ((have.get("metadata") or {}).get("labels") or {}).get(k) != v
                        for k, v in want["metadata"]["labels"].items()):
                    patch = {"metadata": {"labels": want["metadata"]["labels"]}, "spec": want["spec"]}
                    self.hypernodes.put(self.store.patch(HYPERNODES, None, name, patch))
                    wrote = True
                    self._recount(name)
            except StoreError:
                self._retry_later()
                self._failed_discovery = True
        for name in existing.keys() - discovered.keys():
            try:
                self.hypernodes.forget(self.store.delete(HYPERNODES, None, name))
                wrote = True
            except NotFound:
                pass
            except StoreError:
                self._retry_later()
                self._failed_discovery = True
        return wrote

    def _retry_later(self) -> None:
        if not self._retrying():
            self._retry_at = self.clock.now() + RETRY_AFTER

    def close(self) -> None:
        self.nodes.close()
        self.hypernodes.close()
