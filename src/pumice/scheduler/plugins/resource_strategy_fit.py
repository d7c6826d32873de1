"""resource-strategy-fit: per-resource MostAllocated / LeastAllocated scoring with weights, scarce
resource avoidance (``sra``) and proportional reservation of CPU and memory per scarce unit
(``proportional``), as Volcano's plugin of that name.

Arguments (nested YAML, as Volcano decodes them)::

    resourceStrategyFitWeight: 10          # the score's factor (default 10; negative: 10)
    resources:                             # default: cpu and memory LeastAllocated, weight 1
      nvidia.com/gpu: {type: MostAllocated, weight: 2}
      cloudml.gpu/*: {type: LeastAllocated, weight: 1}   # one trailing '*': a prefix
    sra: {enable: true, resources: "nvidia.com/gpu", weight: 10, resourceWeight: {nvidia.com/gpu: 1}}
    proportional: {enable: true, resources: "nvidia.com/gpu",
                   resourceProportion: {nvidia.com/gpu.cpu: 4, nvidia.com/gpu.memory: 8}}

A pod may choose its own strategy with the annotations ``volcano.sh/resource-strategy-scoring-type``
and ``volcano.sh/resource-strategy-weight`` (JSON: resource -> weight).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import NODE_ORDER, PREDICATE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import Shape, TaskInfo
from pumice.scheduler.resources import CPU, EPS, MEMORY

MAX_NODE_SCORE = 100.0
DEFAULT_WEIGHT = 10
MOST, LEAST = "MostAllocated", "LeastAllocated"
TYPE_ANNOTATION = "volcano.sh/resource-strategy-scoring-type"
WEIGHT_ANNOTATION = "volcano.sh/resource-strategy-weight"


@dataclass(frozen=True)
class Strategy:
    kind: str
    weight: int


def _mapping(arguments: Arguments, key: str) -> Mapping[str, object] | None:
    value = arguments.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        arguments.warn(key, f"expected a mapping, got {value!r}; ignored")
        return None
    return value


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strategies(arguments: Arguments) -> dict[str, Strategy]:
    raw = _mapping(arguments, "resources")
    if not raw:
        return {CPU: Strategy(LEAST, 1), MEMORY: Strategy(LEAST, 1)}
    out: dict[str, Strategy] = {}
    for name, conf in raw.items():
        name = str(name)
        if "*" in name and (name == "*" or not name.endswith("*") or name.count("*") != 1):
            arguments.warn("resources", f"{name!r}: only one trailing '*' is supported (e.g. 'cloudml.gpu/*'); ignored")
            continue
        conf = conf if isinstance(conf, Mapping) else {}
        weight = _int(conf.get("weight")) or 0
        kind = conf.get("type")
        if kind not in (MOST, LEAST):
            if kind is not None:
                arguments.warn("resources", f"{name}: type {kind!r} is neither {MOST} nor {LEAST}; using {LEAST}")
            kind = LEAST
        out[name] = Strategy(str(kind), weight if weight > 0 else 1)
    return out


def strategy_for(name: str, strategies: Mapping[str, Strategy]) -> Strategy | None:
    """The exact entry, else the wildcard entry with the longest matching prefix."""
    found = strategies.get(name)
    if found is not None:
        return found
    best, best_len = None, -1
    for key, strategy in strategies.items():
        if key.endswith("*") and name.startswith(key[:-1]) and len(key) - 1 > best_len:
            best, best_len = strategy, len(key) - 1
    return best


def _names(value: object) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()] if isinstance(value, str) else []


@dataclass(frozen=True)
class _ShapeScore:
    """Per task shape: the dimensions scored, their weights and kinds (True: most allocated)."""

    dims: list[int]
    weights: np.ndarray
    #: per dimension: 1 MostAllocated, 0 LeastAllocated, -1 neither (a pod's unknown type: scores 0)
    kind: np.ndarray
    weight_sum: float
    #: The pod's own annotations are unusable: it scores 0 everywhere (Volcano logs and returns 0).
    zero: bool = False


class ResourceStrategyFitPlugin(Plugin):
    name = "resource-strategy-fit"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        weight = arguments.get_int("resourceStrategyFitWeight", DEFAULT_WEIGHT)
        if weight < 0:
            arguments.warn("resourceStrategyFitWeight", f"{weight} is negative; using {DEFAULT_WEIGHT}")
            weight = DEFAULT_WEIGHT
        self.weight = weight
        self.strategies = _strategies(arguments)
        sra = _mapping(arguments, "sra") or {}
        #: scarce resource -> its weight; the sra score's factor (Volcano: 0 unless ``sra.weight`` is set).
        self.sra: dict[str, int] = {}
        self.sra_weight = 0
        if sra.get("enable") is True:
            self.sra_weight = _int(sra.get("weight")) or 0
            weights = sra.get("resourceWeight")
            weights = weights if isinstance(weights, Mapping) else {}
            for name in _names(sra.get("resources")):
                w = _int(weights.get(name))
                self.sra[name] = 1 if w is None or w < 0 else w
        prop = _mapping(arguments, "proportional") or {}
        #: scarce resource -> (cpu cores, memory GB) kept free per unit of it for tasks not asking for it.
        self.proportional: dict[str, tuple[float, float]] = {}
        if prop.get("enable") is True:
            rates = prop.get("resourceProportion")
            rates = rates if isinstance(rates, Mapping) else {}

            def rate(key: str) -> float:
                v = rates.get(key)
                return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else 1.0

            for name in _names(prop.get("resources")):
                self.proportional[name] = (rate(f"{name}.cpu"), rate(f"{name}.memory"))

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        index = ssn.space.index
        self.shapes: dict[Shape, _ShapeScore] = {}
        #: sra: per node, Σ weights of the scarce resources it has, as 1 - share (then x 100 x weight).
        self.sra_sum = float(sum(self.sra.values()))
        have = np.zeros(len(ssn.nodes))
        for name, w in self.sra.items():
            if name in index:
                have += w * (ssn.nodes.allocatable[index[name]] > 0)
        base = 1.0 - have / self.sra_sum if self.sra_sum > 0 else have
        self.sra_base: np.ndarray = base * MAX_NODE_SCORE * self.sra_weight
        #: proportional: (row of the scarce resource, cpu per milli-unit, bytes per milli-unit)
        self.reserve = [(index[n], c, m * 1e6) for n, (c, m) in self.proportional.items() if n in index]
        self.prop_dims = [index[n] for n in self.proportional if n in index]
        if self.proportional:
            ssn.add(PREDICATE, self.name, self)
        if self.weight > 0 or self.sra_weight > 0:
            ssn.add(NODE_ORDER, self.name, self)

    # --- NodeFilter: proportional ---------------------------------------------------------------
    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        return []

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        if any(task.resreq[d] > 0 for d in self.prop_dims):
            return []
        out = []
        names = self.ssn.space.names
        for row, cpu_rate, mem_rate in self.reserve:
            has = view.allocatable[row] > 0
            scarce = view.idle[row]
            ok = ~has | ((view.idle[0] - task.resreq[0] >= scarce * cpu_rate)
                         & (view.idle[1] - task.resreq[1] >= scarce * mem_rate))
            out.append((f"proportional of resource {names[row]} check failed", ok))
        return out

    def replica_safe(self, task: TaskInfo) -> bool:
        return True

    # --- NodeScorer ------------------------------------------------------------------------------
    def _shape(self, task: TaskInfo) -> _ShapeScore:
        got = self.shapes.get(task.shape)
        if got is not None:
            return got
        names = self.ssn.space.names
        ann = (task.pod.get("metadata") or {}).get("annotations") or {}
        kind = ann.get(TYPE_ANNOTATION, "")
        pod_weights: dict[str, object] = {}
        zero = False
        if kind:
            try:
                parsed = json.loads(ann.get(WEIGHT_ANNOTATION) or "")
                if not isinstance(parsed, dict):
                    raise ValueError
                pod_weights = parsed
            except ValueError:
                zero = True
        dims, weights, most = [], [], []
        for d in np.flatnonzero(task.resreq >= EPS).tolist():
            if kind:
                w = pod_weights.get(names[d])
                if w is None:
                    continue
                if not isinstance(w, int) or isinstance(w, bool):
                    zero = True
                    break
                dims.append(d)
                weights.append(w)
                most.append(1.0 if kind == MOST else 0.0 if kind == LEAST else -1.0)
            else:
                strategy = strategy_for(names[d], self.strategies)
                if strategy is None:
                    continue
                dims.append(d)
                weights.append(strategy.weight)
                most.append(1.0 if strategy.kind == MOST else 0.0)
        got = _ShapeScore(dims, np.array(weights, dtype=float)[:, None], np.array(most, dtype=float)[:, None],
                          float(sum(weights)), zero)
        self.shapes[task.shape] = got
        return got

    def static_score(self, task: TaskInfo) -> np.ndarray | None:
        if self.sra_weight <= 0:
            return None
        asked = np.flatnonzero(task.resreq >= EPS)
        if not len(asked):
            return self.sra_base
        has_all = (self.ssn.nodes.allocatable[asked] != 0).all(axis=0)
        return np.where(has_all, self.sra_base, 0.0)

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        if self.weight <= 0:
            return None
        shape = self._shape(task)
        k = len(view.idx)
        if shape.zero or not shape.dims:
            return np.zeros(k)
        dims, weights = shape.dims, shape.weights
        alloc = view.allocatable[dims]
        final = view.used[dims] + task.resreq[dims, None]
        usable = (alloc != 0) & (weights != 0)
        safe = np.where(alloc == 0, 1.0, alloc)
        kind = shape.kind
        part = np.where(kind == 1.0, final, np.where(kind == 0.0, alloc - final, 0.0)) * weights / safe
        part = np.where(usable, part, 0.0)
        score: np.ndarray = part.sum(axis=0)
        if shape.weight_sum > 0:
            score = score / shape.weight_sum
        score = score * (MAX_NODE_SCORE * self.weight)
        score[(usable & (final > alloc)).any(axis=0)] = 0.0
        return score
