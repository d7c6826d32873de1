"""network-topology: the gang inside one HyperNode of the tier the job allows; the tightest tier wins.

For a job with ``networkTopology`` in ``hard`` mode, a member is kept only if one of its HyperNodes of tier
<= ``highestTierAllowed`` (or the tier named ``highestTierName``) can hold the whole gang now; the fit found
is the placement reserved. ``soft`` jobs are never filtered. The score ranks members by the lowest tier that
holds the gang (lowest: 100, highest: 0); jobs without topology score 0 everywhere.

A member without HyperNodes offers no known network domain: a hard-topology job does not go there, unless the
argument ``unknownTopologyFits`` is true (then it counts as one domain of tier 1 over all its nodes, as
Volcano's virtual cluster-top HyperNode would).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..fit import Fit, fit_topology, tier_limit
from ..view import Evaluation, MemberView
from .base import ClusterPlugin, register


@register
class NetworkTopologyPlugin(ClusterPlugin):
    name = "network-topology"
    ARGUMENTS: ClassVar[Mapping[str, Any]] = {"unknownTopologyFits": False}
    has_filter = True
    has_score = True

    def __init__(self, arguments: dict[str, object] | None = None, *, source: str = "") -> None:
        super().__init__(arguments, source=source)
        if not isinstance(self.args["unknownTopologyFits"], bool):
            raise self.bad_argument("unknownTopologyFits", "expected true or false")

    def _fit(self, ev: Evaluation, member: MemberView) -> Fit | None:
        job = ev.job
        if job.topology is None:
            return None
        found = ev.topology.get(member.name)
        if found is not None:
            return found
        cap = member.capacity
        if cap.tree is None and self.args["unknownTopologyFits"]:
            gang = ev.gang(member)
            found = Fit(gang.ok, gang.reason, gang.placement, tier=1)
        elif cap.tree is None:
            found = Fit(False, "the member has no HyperNodes: its network topology is unknown")
        elif job.topology[0] == "soft":
            found = self._block(ev, member, cap.tree.top.tier)
        else:
            limit, why = tier_limit(cap, job)
            if limit is None:
                found = Fit(False, why)
            else:
                gang = ev.gang(member)
                found = Fit(False, gang.reason) if not gang.ok else self._block(ev, member, limit)
        ev.topology[member.name] = found
        return found

    @staticmethod
    def _block(ev: Evaluation, member: MemberView, limit: int) -> Fit:
        """The lowest-tier, tightest HyperNode holding the gang: counted from cached slots for a one-task gang,
        packed greedily block by block otherwise."""
        cap = member.capacity
        tree = cap.tree
        assert tree is not None
        if not tree.ready:
            return Fit(False, f"the member's HyperNode tree is unusable: {tree.error}")
        tasks = [t for t in ev.job.tasks if t.gang > 0]
        if len(tasks) != 1:
            room, pods = member.free()
            return fit_topology(cap, ev.job, room, pods, limit, member.hypernode_room())
        task = tasks[0]
        per_block = member.hypernode_slots(task)
        if per_block is None:
            return Fit(False, f"no node offers {', '.join(cap.missing(task.request))}")
        tiers = member.row_tiers()
        ok = np.flatnonzero((tiers <= limit) & (per_block >= task.gang - 1e-9))
        if not len(ok):
            allowed = tiers <= limit
            most = int(per_block[allowed].max()) if allowed.any() else 0
            return Fit(False, f"task {task.name}: {task.gang} pods must start in one HyperNode of tier <= {limit}, "
                              f"at most {most} fit in any one ({int(allowed.sum())} HyperNodes of tier <= {limit})")
        # lowest tier, then the tightest block (fewest slots), then the name (rows are in name order)
        row = int(ok[np.lexsort((ok, per_block[ok], tiers[ok]))[0]])
        return Fit(True, hypernode=tree.rows[row].name, tier=int(tiers[row]))

    def filter(self, ev: Evaluation, member: MemberView) -> str | None:
        if ev.job.topology is None or ev.job.topology[0] == "soft":
            return None
        fit = self._fit(ev, member)
        return None if fit is None or fit.ok else fit.reason

    def score(self, ev: Evaluation, members: list[MemberView]) -> list[float]:
        if ev.job.topology is None:
            return [0.0] * len(members)
        tiers: list[float | None] = []
        for m in members:
            fit = self._fit(ev, m)
            tier = fit.tier if fit is not None and fit.ok else None
            tiers.append(None if tier is None else float(tier))
        known = [t for t in tiers if t is not None]
        if not known:
            return [0.0] * len(members)
        lo, hi = min(known), max(known)
        out = []
        for t in tiers:
            if t is None:
                out.append(0.0)
            elif hi == lo:
                out.append(100.0)
            else:
                out.append(100.0 * (hi - t) / (hi - lo))
        return out
