"""The HyperNode tree of a session (Volcano ``api/hyper_node_info.go`` + the session's virtual root).

Built once per session from the raw HyperNode dicts and the node table: parent links, tiers, the
tier-name map, every HyperNode's leaf nodes as a sorted numpy index array (reused as the node subset
of placement calls, so its identity is stable), and the virtual ``<cluster-top-hypernode>`` that
holds every node and every parentless HyperNode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pumice.api.hypernode_members import HYPERNODE, child_hypernode, member_type, node_members
from pumice.scheduler.model import NodeTable

CLUSTER_TOP = "<cluster-top-hypernode>"


@dataclass(eq=False, slots=True)
class HyperNodeInfo:
    name: str
    tier: int
    tier_name: str
    #: Row of this HyperNode in the tree's per-HyperNode arrays.
    idx: int
    parent: str = ""
    children: list[str] = field(default_factory=list)
    #: Leaf (real) nodes, sorted node indices.
    nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Self first, then parent, ..., up to the cluster top.
    ancestors: list[str] = field(default_factory=list)


class HyperNodeTree:
    """All HyperNodes of a session, plus the virtual cluster-top one."""

    def __init__(self) -> None:
        self.infos: dict[str, HyperNodeInfo] = {}
        #: Row -> HyperNode; the cluster top is the last row.
        self.rows: list[HyperNodeInfo] = []
        #: Distinct tiers of the real HyperNodes, ascending.
        self.tiers: list[int] = []
        self.tier_names: dict[str, int] = {}
        self.by_tier: dict[int, list[HyperNodeInfo]] = {}
        #: False when the tree is inconsistent (two parents, cycles): Volcano then skips topology jobs.
        self.ready = True
        self.error = ""
        #: rows x nodes: which HyperNodes contain which node (the cluster top contains all).
        self.membership = np.zeros((0, 0), dtype=bool)
        #: node -> row of the lowest-tier HyperNode holding it (lowest name on ties), -1 if none.
        self.lowest = np.zeros(0, dtype=np.int64)
        self.top: HyperNodeInfo = HyperNodeInfo(CLUSTER_TOP, 1, "", 0)
        self._lca: dict[tuple[str, str], str] = {}
        self._at_tier: dict[int, np.ndarray] = {}
        #: What the tree was built from (a state kept across sessions keeps its tree while both are
        #: the same objects).
        self.source: tuple[list[dict[str, Any]], NodeTable] | None = None

    # --- construction ---------------------------------------------------------------------------
    @classmethod
    def build(cls, hypernodes: list[dict[str, Any]], nodes: NodeTable) -> HyperNodeTree:
        tree = cls()
        specs: dict[str, dict[str, Any]] = {}
        for hn in sorted(hypernodes, key=lambda h: (h.get("metadata") or {}).get("name", "")):
            name = (hn.get("metadata") or {}).get("name", "")
            if name:
                specs[name] = hn.get("spec") or {}
        for i, (name, spec) in enumerate(specs.items()):
            info = HyperNodeInfo(name, int(spec.get("tier") or 0), spec.get("tierName") or "", i)
            tree.infos[name] = info
            tree.rows.append(info)
        direct: dict[str, list[np.ndarray]] = {name: [] for name in specs}
        index = nodes.index
        for name, spec in specs.items():
            named: list[int] = []  # nodes picked by name alone (the usual member: no array per node)
            for member in spec.get("members") or []:
                if member_type(member) == HYPERNODE:
                    child = child_hypernode(member)
                    if child in tree.infos:
                        tree._link(child, name)
                    continue
                selected = node_members(member)
                if selected.by_name_only:
                    j = index.get(selected.name)
                    if j is not None:
                        named.append(j)
                elif not selected.nothing:  # names that match no schedulable node select nothing here
                    picked = selected.select(nodes.names, nodes.labels, index)
                    direct[name].append(np.array(sorted(picked), dtype=np.int64))
            if named:
                direct[name].append(np.array(sorted(set(named)), dtype=np.int64))
        tree._finish(direct, len(nodes))
        tree.source = (hypernodes, nodes)
        return tree

    def built_from(self, hypernodes: list[dict[str, Any]], nodes: NodeTable) -> bool:
        return self.source is not None and self.source[0] is hypernodes and self.source[1] is nodes

    def _link(self, child: str, parent: str) -> None:
        info = self.infos[child]
        if info.parent and info.parent != parent:
            self.ready = False
            self.error = f"HyperNode {child} has two parents: {info.parent} and {parent}"
            return
        info.parent = parent
        self.infos[parent].children.append(child)

    def _leaf_nodes(self, name: str, direct: dict[str, list[np.ndarray]], chain: set[str]) -> np.ndarray:
        info = self.infos[name]
        if info.ancestors:  # used as a "done" marker during construction
            return info.nodes
        if name in chain:
            self.ready = False
            self.error = f"cyclic HyperNode membership at {name}"
            return np.zeros(0, dtype=np.int64)
        chain.add(name)
        parts = list(direct[name])
        for child in info.children:
            parts.append(self._leaf_nodes(child, direct, chain))
        chain.discard(name)
        if len(parts) == 1:
            info.nodes = parts[0].astype(np.int64)  # sorted and distinct already (a copy: its own identity)
        else:
            info.nodes = np.unique(np.concatenate(parts)).astype(np.int64) if parts else np.zeros(0, np.int64)
        info.ancestors = [name]
        return info.nodes

    def _finish(self, direct: dict[str, list[np.ndarray]], n_nodes: int) -> None:
        for info in self.rows:
            info.children.sort()
            self._leaf_nodes(info.name, direct, set())
        self.tiers = sorted({info.tier for info in self.rows})
        top_tier = self.tiers[-1] + 1 if self.tiers else 1
        self.top = HyperNodeInfo(CLUSTER_TOP, top_tier, "", len(self.rows),
                                 children=sorted(i.name for i in self.rows if not i.parent),
                                 nodes=np.arange(n_nodes, dtype=np.int64), ancestors=[CLUSTER_TOP])
        for info in self.rows:
            info.ancestors = self._chain(info.name)
            self.by_tier.setdefault(info.tier, []).append(info)
            if info.tier_name:
                self.tier_names.setdefault(info.tier_name, info.tier)
        self.infos[CLUSTER_TOP] = self.top
        self.rows.append(self.top)
        self.membership = np.zeros((len(self.rows), n_nodes), dtype=bool)
        for info in self.rows:
            self.membership[info.idx, info.nodes] = True
        self.lowest = np.full(n_nodes, -1, dtype=np.int64)
        for info in sorted(self.rows[:-1], key=lambda h: (h.tier, h.name), reverse=True):
            self.lowest[info.nodes] = info.idx

    def _chain(self, name: str) -> list[str]:
        chain = []
        seen: set[str] = set()
        cur = name
        while cur and cur not in seen:
            seen.add(cur)
            chain.append(cur)
            cur = self.infos[cur].parent
        chain.append(CLUSTER_TOP)
        return chain

    # --- queries -----------------------------------------------------------------------------------
    def get(self, name: str) -> HyperNodeInfo | None:
        return self.infos.get(name)

    def ancestors(self, name: str) -> list[str]:
        info = self.infos.get(name)
        return info.ancestors if info is not None else []

    def lca(self, a: str, b: str) -> str:
        """Lowest common ancestor; an empty side yields the other (Volcano ``GetLCAHyperNode``)."""
        if not a:
            return b
        if not b or a == b:
            return a
        key = (a, b)
        found = self._lca.get(key)
        if found is None:
            mine = set(self.ancestors(a))
            found = next((x for x in self.ancestors(b) if x in mine), "")
            self._lca[key] = found
        return found

    def highest_allowed(self, allocated: str, limit: int) -> str:
        """The highest ancestor of ``allocated`` with tier <= ``limit`` ("" if even it is above); the
        domain later pods of a job must stay in. The cluster top counts like any other ancestor."""
        found = ""
        for name in self.ancestors(allocated):
            if self.infos[name].tier > limit:
                break
            found = name
        return found

    def lowest_hypernode_of_node(self, node: int) -> str:
        """Volcano ``FindHyperNodeForNode``: the lowest-tier HyperNode holding the node, or ""."""
        row = int(self.lowest[node]) if 0 <= node < len(self.lowest) else -1
        return self.rows[row].name if row >= 0 else ""

    def hypernode_of_nodes(self, nodes: np.ndarray) -> str:
        """The lowest HyperNode holding all these nodes (LCA of their lowest HyperNodes); "" if none."""
        found = ""
        for row in np.unique(self.lowest[nodes]):
            if row >= 0:
                found = self.lca(found, self.rows[int(row)].name)
        return found

    def sums(self, columns: np.ndarray, rows: list[HyperNodeInfo] | None = None) -> np.ndarray:
        """Per-node columns (resources x nodes) summed per HyperNode: resources x HyperNodes."""
        rows = self.rows if rows is None else rows
        out = np.zeros((columns.shape[0], len(rows)))
        for i, info in enumerate(rows):
            if len(info.nodes):
                out[:, i] = columns[:, info.nodes].sum(axis=1)
        return out

    def rows_at_tier(self, tier: int) -> np.ndarray:
        """node -> row of the tier-``tier`` HyperNode holding it (lowest name on ties), -1 if none."""
        found = self._at_tier.get(tier)
        if found is None:
            found = np.full(self.membership.shape[1], -1, dtype=np.int64)
            for info in sorted(self.by_tier.get(tier, []), key=lambda h: h.name, reverse=True):
                found[info.nodes] = info.idx
            self._at_tier[tier] = found
        return found
