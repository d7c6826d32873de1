"""rescheduling: name the running tasks the ``shuffle`` action evicts, by Volcano's strategies.

Volcano's one strategy is ``lowNodeUtilization``: nodes under every ``thresholds`` percentage are
*low*, nodes over some ``targetThresholds`` percentage are *high*; pods leave the high nodes (fullest
first; on a node lowest priority first, then BestEffort before Burstable before Guaranteed) while the
node is still at or over a target and the low nodes still have room up to their targets. It runs once
every ``interval`` (``5m``).

The choice itself is :func:`low_node_utilization`, columnar over nodes and independent of where the
utilization comes from: this plugin passes what the pods request (Volcano reads measured usage from
its metrics source); a load-aware descheduler passes measured usage.

Arguments (Volcano's)::

    - name: rescheduling
      arguments:
        interval: 5m
        strategies:
          - name: lowNodeUtilization
            params:
              thresholds: {cpu: 20, memory: 20}
              targetThresholds: {cpu: 60, memory: 60}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pumice.api.arguments import Arguments
from pumice.api.numa import qos_class
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import VICTIM_TASKS
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import TaskInfo
from pumice.scheduler.plugins.sla import parse_duration
from pumice.scheduler.resources import CPU, MEMORY

DEFAULT_INTERVAL = 300.0
LOW_NODE_UTILIZATION = "lowNodeUtilization"
#: The resources Volcano's strategy measures (its utilization has only these two).
MEASURED = (CPU, MEMORY)
_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


@dataclass(frozen=True)
class Thresholds:
    """Percentages per measured resource (cpu, memory); NaN where not set (not compared)."""

    low: np.ndarray = field(default_factory=lambda: np.array([100.0, 100.0]))
    target: np.ndarray = field(default_factory=lambda: np.array([100.0, 100.0]))


def eviction_order(tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
    """Volcano's ``sortPods``: pods without a priority first, then lower priority, then by QoS class."""

    def key(t: TaskInfo) -> tuple[int, int, int]:
        prio = (t.pod.get("spec") or {}).get("priority")
        return (0 if prio is None else 1, 0 if prio is None else int(prio), _QOS_RANK[qos_class(t.pod)])

    return sorted(tasks, key=key)


def low_node_utilization(utilization: np.ndarray, capacity: np.ndarray, schedulable: np.ndarray,
                         candidates: Sequence[Sequence[TaskInfo]], requests: Mapping[str, np.ndarray],
                         thresholds: Thresholds) -> list[TaskInfo]:
    """Which pods to evict so that load moves from high nodes to low ones (Volcano's lowNodeUtilization).

    ``utilization``: percent per measured resource x node (2 x N, cpu then memory; requested or
    measured); ``capacity``: the same resources' amounts (2 x N); ``schedulable``: nodes that may take
    pods (an unschedulable node is never low); ``candidates``: per node, the pods that may go, in the
    order they should (:func:`eviction_order`); ``requests``: per pod uid, what leaving frees (2,).
    """
    low_t, target_t = thresholds.low[:, None], thresholds.target[:, None]
    with np.errstate(invalid="ignore"):
        below = np.where(np.isnan(low_t), True, utilization < low_t).all(axis=0)
        low = schedulable & below
        high = ~low & np.where(np.isnan(target_t), False, utilization > target_t).any(axis=0)
    n = utilization.shape[1]
    if not low.any() or low.all() or n == 0 or not high.any():
        return []
    target_amount = np.nan_to_num(thresholds.target, nan=0.0)[:, None]
    room = ((target_amount - utilization[:, low]) * capacity[:, low] / 100.0).sum(axis=1)
    util = utilization.copy()
    order = np.flatnonzero(high)
    order = order[np.argsort(-util[:, order].sum(axis=0), kind="stable")]
    victims: list[TaskInfo] = []
    for j in order.tolist():
        cap = capacity[:, j]
        for t in candidates[j]:
            with np.errstate(invalid="ignore"):
                over = bool(np.where(np.isnan(thresholds.target), False, util[:, j] >= thresholds.target).any())
            if not over or bool((room <= 0).any()):
                break
            freed = requests[t.uid]
            room = room - freed
            with np.errstate(divide="ignore", invalid="ignore"):
                util[:, j] -= np.where(cap > 0, freed * 100.0 / cap, 0.0)
            victims.append(t)
    return victims


def requested_utilization(ssn: Session) -> tuple[np.ndarray, np.ndarray]:
    """(percent requested, allocatable) of cpu and memory per node: the plugin's utilization."""
    nodes = ssn.nodes
    rows = [nodes.space.index[name] for name in MEASURED]
    alloc = nodes.allocatable[rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(alloc > 0, nodes.used[rows] * 100.0 / alloc, 0.0)
    return util, alloc


def _percentages(arguments: Arguments, where: str, value: object, default: np.ndarray) -> np.ndarray:
    out = default.copy()
    if value is None:
        return out
    if not isinstance(value, Mapping):
        arguments.warn(where, f"expected a map of resource to percentage, got {value!r}; using the default")
        return out
    for name, pct in value.items():
        if name in MEASURED and isinstance(pct, (int, float)) and not isinstance(pct, bool):
            out[MEASURED.index(name)] = float(pct)
        elif name in MEASURED:
            arguments.warn(where, f"{name}: expected a number, got {pct!r}; using the default")
        else:
            arguments.warn(where, f"{name!r} is not measured by lowNodeUtilization (cpu, memory); it is ignored")
    return out


class ReschedulingPlugin(Plugin):
    name = "rescheduling"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        text = arguments.get_string("interval", "5m")
        interval = parse_duration(text)
        if interval is None:
            arguments.warn("interval", f"{text!r} is not a duration (like 5m); using 5m")
            interval = DEFAULT_INTERVAL
        self.interval = interval
        self.strategies: dict[str, Thresholds] = {LOW_NODE_UTILIZATION: Thresholds()}
        given = arguments.get("strategies")
        if given is not None:
            self._parse_strategies(given)

    def _parse_strategies(self, given: object) -> None:
        arguments = self.arguments
        if not isinstance(given, list):
            arguments.warn("strategies", f"expected a list, got {given!r}; using lowNodeUtilization's defaults")
            return
        if given:
            self.strategies = {}
        for item in given:
            name = item.get("name") if isinstance(item, Mapping) else None
            if name != LOW_NODE_UTILIZATION:
                arguments.warn("strategies", f"unknown strategy {name!r} (known: {LOW_NODE_UTILIZATION}); ignored")
                continue
            params = item.get("params") or {}
            if not isinstance(params, Mapping):
                params = {}
            base = Thresholds()
            self.strategies[name] = Thresholds(
                _percentages(arguments, "strategies.thresholds", params.get("thresholds"), base.low),
                _percentages(arguments, "strategies.targetThresholds", params.get("targetThresholds"), base.target))

    def on_session_open(self, ssn: Session) -> None:
        last = ssn.state.evicted_at.get(self.name)
        if last is not None and ssn.now - last <= self.interval:
            return  # not yet time: no victims this session (Volcano's timeToRun)
        ssn.state.evicted_at[self.name] = ssn.now
        if LOW_NODE_UTILIZATION in self.strategies:
            self.thresholds = self.strategies[LOW_NODE_UTILIZATION]
            self.session = ssn
            ssn.add(VICTIM_TASKS, self.name, self.victims)

    def victims(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        ssn = self.session
        util, alloc = requested_utilization(ssn)
        per_node: list[list[TaskInfo]] = [[] for _ in range(len(ssn.nodes))]
        for t in tasks:
            if t.node >= 0:
                per_node[t.node].append(t)
        candidates = [eviction_order(ts) if ts else ts for ts in per_node]
        rows = [ssn.space.index[name] for name in MEASURED]
        requests = {t.uid: t.resreq[rows] for t in tasks}
        return low_node_utilization(util, alloc, ~ssn.nodes.unschedulable, candidates, requests, self.thresholds)
