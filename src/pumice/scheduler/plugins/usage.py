"""usage: load-aware scheduling — keep pods off nodes whose real usage is high, prefer the least loaded.

Volcano's ``usage`` plugin, over the nodes' measured usage (``pumice.node_metrics``: the metrics API on a
cluster, the simulated kubelet's meter in the embedded cluster and the simulator), as a percentage of the
node's capacity. A node's metrics count only while fresh (measured less than 5 minutes before the session);
a node without fresh metrics passes the predicate and scores 0, as in Volcano.

- Predicate: a node whose CPU usage is above ``thresholds.cpu`` (80) or memory above ``thresholds.mem`` (80)
  is refused ("the CPU load of the node exceeds the upper limit.", UnschedulableAndUnresolvable).
- Node order: ``((1 - cpu) * cpu.weight + (1 - mem) * memory.weight) / (cpu.weight + memory.weight) * 100 *
  usage.weight``, where ``cpu`` and ``mem`` are the composite utilizations: measured usage plus a *shadow
  estimate* of the pods the metrics cannot have seen yet (placed, binding or bound, or running for less than
  the metrics interval), over capacity, at most 1. A pod's estimate is ``(request * request_ratio + (limit -
  request) * burst_ratio) * risk`` (at most its limit, or its request without one); a BestEffort pod's is
  ``be_cpu`` / ``be_mem`` times ``risk``; ``risk`` is ``risk_factor`` on a node whose weighted composite load
  is at or over ``risk_threshold``, else 1.

Arguments (Volcano's)::

    - name: usage
      arguments:
        usage.weight: 5
        cpu.weight: 1
        memory.weight: 1
        thresholds: {cpu: 80, mem: 80}
        estimator: {request_ratio: 0.7, burst_ratio: 0, risk_threshold: 0.6, risk_factor: 1.2,
                    be_cpu: 250m, be_mem: 200Mi}

Columnar: per-node arrays made once per session; a task's predicate and score are a few NumPy operations
over the view's nodes. Pods placed during the session add to the shadow through the view's requested
usage (``used`` now less ``used`` at open, times ``request_ratio`` and the node's risk), so hypothetical
views (replica ladders) see them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pumice.api.arguments import Arguments
from pumice.api.numa import qos_class
from pumice.api.quantity import QuantityError, int_value, milli_value
from pumice.node_metrics import FRESHNESS, NodeUsage
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import NODE_ORDER, PREDICATE
from pumice.scheduler.framework.predicate_status import UNRESOLVABLE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import MemoSlot, NodeTable, TaskInfo, TaskStatus
from pumice.scheduler.resources import CPU, MEMORY
from pumice.scheduler.snapshot import parse_time

MAX_NODE_SCORE = 100.0
CPU_OVER = "the CPU load of the node exceeds the upper limit."
MEMORY_OVER = "the memory load of the node exceeds the upper limit."
_PLACED = TaskStatus.ALLOCATED | TaskStatus.BINDING | TaskStatus.BOUND

#: Per node table: (cpu milli, memory bytes) capacity per node (``status.capacity``, else allocatable).
CAPACITY: MemoSlot[np.ndarray] = MemoSlot("usage: node capacity")


def _capacity(nodes: NodeTable) -> np.ndarray:
    rows = [nodes.space.index[CPU], nodes.space.index[MEMORY]]
    cap = nodes.allocatable[rows].copy()
    for j, node in enumerate(nodes.objects):
        given = (node.get("status") or {}).get("capacity") or {}
        try:
            if CPU in given:
                cap[0, j] = float(milli_value(given[CPU]))
            if MEMORY in given:
                cap[1, j] = float(int_value(given[MEMORY]))
        except QuantityError:
            continue
    return cap


def _pod_amounts(pod: Mapping[str, Any]) -> tuple[float, float, float, float]:
    """(cpu request, cpu limit, memory request, memory limit) of a pod's containers (0 when unset)."""
    out = [0.0, 0.0, 0.0, 0.0]
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        for i, (kind, name) in enumerate((("requests", CPU), ("limits", CPU), ("requests", MEMORY),
                                          ("limits", MEMORY))):
            value = (res.get(kind) or {}).get(name)
            if value is None:
                continue
            try:
                out[i] += float(milli_value(value) if name == CPU else int_value(value))
            except QuantityError:
                continue
    return out[0], out[1], out[2], out[3]


def _estimate(request: float, limit: float, request_ratio: float, burst_ratio: float, risk: float) -> float:
    """Volcano's ``EstimatePodResource`` for one resource."""
    request = max(request, 0.0)
    effective = request if limit <= 0 or limit < request else limit
    value = (request * request_ratio + (effective - request) * burst_ratio) * risk
    return min(max(value, 0.0), effective)


class UsagePlugin(Plugin):
    name = "usage"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.usage_weight = self._weight("usage.weight", 5)
        self.cpu_weight = self._weight("cpu.weight", 1)
        self.memory_weight = self._weight("memory.weight", 1)
        thresholds = self._section("thresholds")
        self.cpu_threshold = self._percent(thresholds, "cpu", 80.0)
        self.memory_threshold = self._percent(thresholds, "mem", 80.0)
        est = self._section("estimator")
        self.request_ratio = self._ranged(est, "request_ratio", 0.7, 0.0, 1.0)
        self.burst_ratio = self._ranged(est, "burst_ratio", 0.0, 0.0, 1.0)
        self.risk_threshold = self._ranged(est, "risk_threshold", 0.6, 0.0, 1.0)
        self.risk_factor = self._ranged(est, "risk_factor", 1.2, 1.0, np.inf)
        self.be_cpu = self._amount(est, "be_cpu", 250.0, cpu=True)
        self.be_memory = self._amount(est, "be_mem", 200.0 * 1024 * 1024, cpu=False)

    # --- arguments (Volcano's ranges: a value outside keeps the default) ----------------------------------------

    def _weight(self, key: str, default: int) -> int:
        value = self.arguments.get_int(key, default)
        if value < 0:
            self.arguments.warn(key, f"{value} is negative; using {default}")
            return default
        return value

    def _section(self, key: str) -> Arguments:
        raw = self.arguments.get(key)
        if raw is not None and not isinstance(raw, Mapping):
            self.arguments.warn(key, f"expected a mapping, got {raw!r}; using the defaults")
            raw = None
        return Arguments(f"{self.arguments.owner} {key}", raw)

    @staticmethod
    def _percent(section: Arguments, key: str, default: float) -> float:
        value = section.get_int(key, int(default))
        if not 0 <= value <= 100:
            section.warn(key, f"{value} is not a percentage in 0..100; using {default:g}")
            return default
        return float(value)

    @staticmethod
    def _ranged(section: Arguments, key: str, default: float, low: float, high: float) -> float:
        value = section.get_float(key, default)
        if not low <= value <= high:
            section.warn(key, f"{value} is outside {low:g}..{high:g}; using {default:g}")
            return default
        return value

    @staticmethod
    def _amount(section: Arguments, key: str, default: float, *, cpu: bool) -> float:
        raw = section.get(key)
        if raw is None:
            return default
        if isinstance(raw, int) and not isinstance(raw, bool):  # Volcano: an integer is milli-cores, or MiB
            value = float(raw) if cpu else float(raw) * 1024 * 1024
        elif isinstance(raw, str):
            try:
                value = float(milli_value(raw) if cpu else int_value(raw))
            except QuantityError:
                value = -1.0
        else:
            value = -1.0
        if value < 0:
            section.warn(key, f"{raw!r} is not a non-negative quantity; using the default")
            return default
        return value

    # --- session -------------------------------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        usage: NodeUsage | None = ssn.state.node_usage
        nodes = ssn.nodes
        n = len(nodes)
        self.rows = [ssn.space.index[CPU], ssn.space.index[MEMORY]]
        self.capacity = nodes.memo.get(CAPACITY, lambda: _capacity(nodes))
        if usage is None or n == 0:
            self.fresh = np.zeros(n, dtype=bool)
            self.real = np.zeros((2, n))
        else:
            cpu, mem, ts = usage.columns(nodes.names)
            self.fresh = ssn.now - ts <= FRESHNESS
            self.real = np.vstack([cpu, mem])  # absolute
        with np.errstate(divide="ignore", invalid="ignore"):
            percent = np.where(self.capacity > 0, self.real * 100.0 / self.capacity, 0.0)
        #: refused nodes: fresh metrics over a threshold (cpu first, as Volcano checks)
        self.cpu_hot = self.fresh & (percent[0] > self.cpu_threshold)
        self.memory_hot = self.fresh & ~self.cpu_hot & (percent[1] > self.memory_threshold)
        self.used_open = nodes.used[self.rows].copy()
        self.shadow = np.zeros((2, n))
        if self.fresh.any():
            self._warm_up(ssn, usage.interval if usage is not None else 0.0)
        self.risk = self._risk(self.shadow, np.arange(n))
        # for the score (per view: a few array operations): usage known at open, and what a placed request adds
        with np.errstate(divide="ignore"):
            self.inv_capacity = np.where(self.capacity > 0, 1.0 / np.where(self.capacity > 0, self.capacity, 1.0), 0.0)
        self.known = self.real + self.shadow
        self.per_request = self.request_ratio * self.risk
        self.all_fresh = bool(self.fresh.all())
        ssn.add(PREDICATE, self.name, self)
        ssn.add(NODE_ORDER, self.name, self)

    def _composite(self, shadow: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Composite utilization (2 x k, in 0..1) of nodes ``idx`` with ``shadow`` (2 x k) on top."""
        cap = self.capacity[:, idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            comp = np.where(cap > 0, (self.real[:, idx] + shadow) / cap, 0.0)
        return np.clip(comp, 0.0, 1.0)

    def _risk(self, shadow: np.ndarray, idx: np.ndarray) -> np.ndarray:
        total = self.cpu_weight + self.memory_weight
        if total == 0:
            return np.ones(len(idx))
        comp = self._composite(shadow, idx)
        load = (comp[0] * self.cpu_weight + comp[1] * self.memory_weight) / total
        return np.where(load >= self.risk_threshold, self.risk_factor, 1.0)

    def _warm_up(self, ssn: Session, window: float) -> None:
        """The shadow of the pods the metrics cannot have seen: placed, binding, bound, or just started."""
        fresh = self.fresh
        risk = self._risk(np.zeros_like(self.shadow), np.arange(len(fresh)))
        for j, tasks in enumerate(ssn.nodes.tasks):
            if not fresh[j] or not tasks:
                continue
            for t in tasks.values():
                if t.status & _PLACED:
                    pass
                elif t.status == TaskStatus.RUNNING:
                    started = (t.pod.get("status") or {}).get("startTime")
                    if started and ssn.now - parse_time(started) >= window:
                        continue
                else:
                    continue
                self.shadow[:, j] += self._task_estimate(t.pod, float(risk[j]))

    def _task_estimate(self, pod: Mapping[str, Any], risk: float) -> np.ndarray:
        if qos_class(pod) == "BestEffort":
            return np.array([self.be_cpu * risk, self.be_memory * risk])
        cpu_req, cpu_lim, mem_req, mem_lim = _pod_amounts(pod)
        return np.array([_estimate(cpu_req, cpu_lim, self.request_ratio, self.burst_ratio, risk),
                         _estimate(mem_req, mem_lim, self.request_ratio, self.burst_ratio, risk)])

    # --- NodeFilter ----------------------------------------------------------------------------------------------

    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        """Per node, not per task: kept with the placement caches while :meth:`placement_inputs` holds."""
        if not self.fresh.any():
            return []
        return [(CPU_OVER, ~self.cpu_hot), (MEMORY_OVER, ~self.memory_hot)]

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        return []

    def status_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        """Volcano's code for both: UnschedulableAndUnresolvable."""
        return [(UNRESOLVABLE, mask[view.idx]) for _, mask in self.static_checks(task)]

    def placement_inputs(self) -> object:
        """The measurements the masks and scores read: caches kept from another reading are dropped."""
        return self.fresh.tobytes(), self.real.tobytes(), self.shadow.tobytes()

    def replica_safe(self, task: TaskInfo) -> bool:
        return True  # measured usage does not move with the replicas placed in a session

    # --- NodeScorer ----------------------------------------------------------------------------------------------

    def static_score(self, task: TaskInfo) -> np.ndarray | None:
        return None

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        total = self.cpu_weight + self.memory_weight
        if self.usage_weight == 0 or total == 0 or not self.fresh.any():
            return None
        idx = view.idx
        placed = view.used[:2] - self.used_open[:, idx]  # cpu and memory lead every resource space
        np.maximum(placed, 0.0, out=placed)  # requests placed this session: their shadow
        placed *= self.per_request[idx]
        placed += self.known[:, idx]
        placed *= self.inv_capacity[:, idx]
        np.clip(placed, 0.0, 1.0, out=placed)  # composite utilization
        score: np.ndarray = placed[0] * (-self.cpu_weight * MAX_NODE_SCORE * self.usage_weight / total)
        score -= placed[1] * (self.memory_weight * MAX_NODE_SCORE * self.usage_weight / total)
        score += MAX_NODE_SCORE * self.usage_weight
        if not self.all_fresh:
            score[~self.fresh[idx]] = 0.0
        return score
