"""What cluster choice sees of a member (``MemberView``) and what it learns about one job (``Evaluation``).

A view is built from the member's watched state and lives across cycles; its free columns are recomputed
only when the member's capacity moved. An ``Evaluation`` holds per-member facts the plugins share for one
job (the gang's placement, the HyperNode found), so a fit is computed once and reserved as chosen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pumice.api.quantity import QuantityError, milli_value

from .capacity import MemberCapacity
from .demand import JobDemand
from .fit import Fit, Placement, fit_gang

__all__ = ["Evaluation", "MemberView", "prices_of"]

_GIB = 1024.0**3


def prices_of(cost: Mapping[str, Any] | None) -> dict[str, float]:
    """``spec.cost`` -> price per Volcano unit-hour: cpu per milli-core, memory per byte, others per thousandth."""
    out: dict[str, float] = {}
    for name, value in (cost or {}).items():
        try:
            per_unit = milli_value(value) / 1000.0
        except QuantityError:
            continue  # refused by admission on the host; never reached with a stored Cluster
        if name == "memory":
            out[name] = per_unit / _GIB
        elif name == "pods":
            continue
        else:
            out[name] = per_unit / 1000.0
    return out


@dataclass
class MemberView:
    name: str
    labels: dict[str, str]
    capacity: MemberCapacity
    taints: list[dict[str, Any]] = field(default_factory=list)
    prices: dict[str, float] = field(default_factory=dict)
    #: answers and is not cordoned: jobs may be sent
    ready: bool = True
    #: why not (when not ready)
    not_ready: str = ""
    #: unfinished federated jobs here per spread group
    groups: Counter[str] = field(default_factory=Counter)
    _free: tuple[int, np.ndarray, np.ndarray] | None = None
    _hn_room: tuple[int, np.ndarray] | None = None

    def free(self) -> tuple[np.ndarray, np.ndarray]:
        """The capacity's free columns (room x resources, pods), cached until it moves."""
        cap = self.capacity
        cached = self._free
        if cached is None or cached[0] != cap.version:
            room, pods = cap.free()
            cached = self._free = (cap.version, room, pods)
        return cached[1], cached[2]

    def hypernode_room(self) -> np.ndarray | None:
        """Free resources per HyperNode row of the member's tree (None without a tree)."""
        tree = self.capacity.tree
        if tree is None:
            return None
        cached = self._hn_room
        if cached is None or cached[0] != self.capacity.version:
            room, _ = self.free()
            cached = self._hn_room = (self.capacity.version, tree.membership.astype(float) @ room)
        return cached[1]

    def cost_per_hour(self, job: JobDemand) -> float:
        """What the whole job costs here for one hour at ``spec.cost`` prices."""
        return sum(self.prices.get(name, 0.0) * value for name, value in job.total.items())


@dataclass
class Evaluation:
    """Per-member facts about one job, shared by the plugins while it is evaluated."""

    job: JobDemand
    fits: dict[str, Fit] = field(default_factory=dict)
    topology: dict[str, Fit] = field(default_factory=dict)

    def gang(self, member: MemberView) -> Fit:
        found = self.fits.get(member.name)
        if found is None:
            room, pods = member.free()
            found = self.fits[member.name] = fit_gang(member.capacity, self.job, room, pods)
        return found

    def placement(self, member: MemberView) -> Placement | None:
        """Where the gang goes in ``member``: the topology plugin's block if it found one, else any fit."""
        topo = self.topology.get(member.name)
        if topo is not None and topo.ok:
            return topo.placement
        fit = self.gang(member)
        return fit.placement if fit.ok else None
