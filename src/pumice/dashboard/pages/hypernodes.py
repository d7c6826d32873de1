"""The HyperNode tree as the dashboard draws it: each HyperNode's member nodes, children and leaf nodes.

Membership is the scheduler's (``pumice.api.hypernode_members``, Volcano's rules); the dashboard adds the
members that name no existing node (drawn as missing). When the tree is one the scheduler refuses (a
HyperNode with two parents, a cycle), ``error`` says so: the scheduler then places no topology-aware job.
"""

from __future__ import annotations

from pumice.api.hypernode_members import HYPERNODE, child_hypernode, member_type, node_members

from .objects import meta_of, name_of, spec_of
from .snapshot import Snapshot

__all__ = ["HyperNodeTree"]


class HyperNodeTree:
    """HyperNodes as a tree: direct member nodes, child HyperNodes (one parent each), leaf node sets."""

    def __init__(self, snap: Snapshot) -> None:
        self.hypernodes = {name_of(h): h for h in snap.hypernodes}
        names = [name_of(n) for n in snap.nodes]
        labels = [meta_of(n).get("labels") or {} for n in snap.nodes]
        index = {n: j for j, n in enumerate(names)}
        self.direct: dict[str, list[str]] = {}
        self.children: dict[str, list[str]] = {}
        self.parent: dict[str, str] = {}
        self.error = ""
        for hname in sorted(self.hypernodes):
            direct: set[str] = set()
            kids: list[str] = []
            for member in spec_of(self.hypernodes[hname]).get("members") or []:
                if member_type(member) == HYPERNODE:
                    child = child_hypernode(member)
                    if child not in self.hypernodes or self.parent.get(child) == hname:
                        continue
                    if child == hname or child in self.parent:
                        self.error = self.error or (
                            f"HyperNode {child} has two parents: {self.parent[child]} and {hname}"
                            if child in self.parent else f"HyperNode {hname} is a member of itself")
                        continue
                    self.parent[child] = hname
                    kids.append(child)
                    continue
                selected = node_members(member)
                if selected.name and selected.name not in index:  # a member that is not (yet) a node: shown anyway
                    direct.add(selected.name)
                direct.update(names[j] for j in selected.select(names, labels, index))
            self.direct[hname] = sorted(direct)
            self.children[hname] = sorted(kids)
        self.leaves: dict[str, set[str]] = {}
        for hname in self.hypernodes:
            self._leaves(hname, set())

    def _leaves(self, hname: str, visiting: set[str]) -> set[str]:
        if hname in self.leaves:
            return self.leaves[hname]
        if hname in visiting:
            self.error = self.error or f"cyclic HyperNode membership at {hname}"
            return set()
        visiting.add(hname)
        out = set(self.direct.get(hname, []))
        for kid in self.children.get(hname, []):
            out |= self._leaves(kid, visiting)
        self.leaves[hname] = out
        return out

    def tier(self, hname: str) -> int:
        try:
            return int(spec_of(self.hypernodes[hname]).get("tier") or 0)
        except (TypeError, ValueError):
            return 0

    def lowest_of_node(self) -> dict[str, str]:
        """Node -> the lowest-tier HyperNode that contains it (the first name on ties)."""
        out: dict[str, tuple[int, str]] = {}
        for hname, leaves in self.leaves.items():
            for n in leaves:
                cand = (self.tier(hname), hname)
                if n not in out or cand < out[n]:
                    out[n] = cand
        return {n: h for n, (_, h) in out.items()}

    def roots(self) -> list[str]:
        return sorted((h for h in self.hypernodes if h not in self.parent), key=lambda h: (-self.tier(h), h))
