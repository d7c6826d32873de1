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
from .demand import JobDemand, TaskDemand
from .fit import Fit, Placement, fit_gang, short_of, slots

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
    #: per capacity version: task key -> (slots per node, their sum, slots per HyperNode row or None)
    _slots: tuple[int, dict[tuple[Any, ...], Any]] = (-1, {})
    #: per static version: task key -> the hardware verdict
    _hardware: tuple[int, dict[tuple[Any, ...], str | None]] = (-1, {})
    _totals: tuple[int, np.ndarray, np.ndarray] | None = None
    _tiers: tuple[Any, np.ndarray] | None = None

    def task_slots(self, task: TaskDemand) -> tuple[np.ndarray, float] | None:
        """Pods of ``task`` each node can take now, and their sum (None: a resource no node offers); cached until
        the capacity moves."""
        cap = self.capacity
        version, cache = self._slots
        if version != cap.version:
            cache = {}
            self._slots = (cap.version, cache)
        key = (task.shape, tuple(sorted(task.request.items())))
        found = cache.get(key)
        if found is None:
            vec = cap.vector(task.request)
            if vec is None:
                found = cache[key] = (None, 0.0, None)
            else:
                room, pods = self.free()
                per = slots(cap, room, pods, task, vec)
                found = cache[key] = [per, float(per.sum()), None]
        return None if found[0] is None else (found[0], found[1])

    def hypernode_slots(self, task: TaskDemand) -> np.ndarray | None:
        """Pods of ``task`` each HyperNode row (the cluster top last) can take now."""
        tree = self.capacity.tree
        got = self.task_slots(task)
        if tree is None or got is None:
            return None
        entry = self._slots[1][(task.shape, tuple(sorted(task.request.items())))]
        if entry[2] is None:
            entry[2] = tree.membership.astype(float) @ got[0]
        return entry[2]  # type: ignore[no-any-return]

    def row_tiers(self) -> np.ndarray:
        """The tier of each HyperNode row of the member's tree (the cluster top last)."""
        tree = self.capacity.tree
        assert tree is not None
        cached = self._tiers
        if cached is None or cached[0] is not tree:
            cached = self._tiers = (tree, np.array([info.tier for info in tree.rows], dtype=float))
        return cached[1]

    def hardware(self, key: tuple[Any, ...], compute: Any) -> str | None:
        """A verdict on the member's hardware for a task (cached until nodes change)."""
        version, cache = self._hardware
        if version != self.capacity.static_version:
            cache = {}
            self._hardware = (self.capacity.static_version, cache)
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """(Σ allocatable, Σ allocated + reserved) over usable nodes, cached until the capacity moves."""
        cap = self.capacity
        cached = self._totals
        if cached is None or cached[0] != cap.version:
            usable = cap.usable
            cached = self._totals = (cap.version, cap.alloc[usable].sum(axis=0),
                                     (cap.used + cap.reserved)[usable].sum(axis=0))
        return cached[1], cached[2]

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
        """Whether the gang fits on the member's nodes now. A gang of one task is counted from the cached slots per
        node (exact: its pods are alike); several tasks are packed greedily (``fit_gang``)."""
        found = self.fits.get(member.name)
        if found is None:
            found = self.fits[member.name] = self._gang(member)
        return found

    def _gang(self, member: MemberView) -> Fit:
        tasks = [t for t in self.job.tasks if t.gang > 0]
        cap = member.capacity
        if len(tasks) != 1:
            room, pods = member.free()
            return fit_gang(cap, self.job, room, pods)
        task = tasks[0]
        got = member.task_slots(task)
        if got is None:
            return Fit(False, f"no node offers {', '.join(cap.missing(task.request))} (task {task.name})")
        _, have = got
        if have >= task.gang:
            return Fit(True)
        eligible = int(cap.eligible(task).sum())
        if not eligible:
            return Fit(False, f"no node matches task {task.name}'s node selector, affinity or tolerations")
        return Fit(False, short_of(cap, task, have, eligible))

    def placement(self, member: MemberView) -> Placement | None:
        """Where the gang goes in ``member``: inside the topology plugin's block if it chose one, else anywhere."""
        topo = self.topology.get(member.name)
        fit = topo if topo is not None and topo.ok else self.gang(member)
        if not fit.ok:
            return None
        if fit.placement is None:
            cap = member.capacity
            subset = None
            if fit.hypernode and cap.tree is not None and fit.hypernode in cap.tree.infos:
                subset = cap.tree.infos[fit.hypernode].nodes
            room, pods = member.free()
            packed = fit_gang(cap, self.job, room, pods, subset)
            if not packed.ok or packed.placement is None:
                return None
            fit.placement = packed.placement
            fit.placement.hypernode, fit.placement.tier = fit.hypernode, fit.tier
        return fit.placement
