"""Node metrics: how real CPU and memory usage of the nodes reaches the scheduler (Volcano's metrics source).

Volcano's scheduler cache asks a metrics client every ``metrics.interval`` (30 s) for each node's average
CPU and memory usage and the time it was measured, and keeps it on the node (``NodeInfo.ResourceUsage``);
the ``usage`` plugin trusts it while it is fresh (5 minutes). pumice does the same with a
:class:`MetricsSource`:

- on a real cluster, :class:`KubernetesMetricsSource` reads the Kubernetes metrics API
  (``metrics.k8s.io/v1beta1`` NodeMetrics, what ``kubectl top nodes`` shows; served by metrics-server). When
  the cluster does not serve it, that is said once and the nodes have no fresh metrics (the ``usage``
  plugin then neither filters nor scores, as Volcano's does without metrics);
- in the embedded cluster and the simulator, the simulated kubelet's :class:`pumice.nodes.meter.UsageMeter`
  measures what its pods use (their ``pumice.io/usage`` profiles, :mod:`pumice.nodes.usage`).

:class:`MetricsPoller` asks a source at most once per interval and keeps the answer; the scheduler loop
hands it to each session as :class:`NodeUsage` (``ClusterState.node_usage``), aligned to the node table.

The scheduler configuration's ``metrics`` section (Volcano's keys) says which source: ``type`` (pumice:
``kubernetes`` or ``simulated``; Volcano's ``prometheus``, ``prometheus_adaptor`` and ``elasticsearch`` are
refused with a clear error), ``address`` (for Volcano's types), ``interval`` (a Go duration, default 30s).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pumice.api.quantity import QuantityError, int_value, milli_value

__all__ = [
    "DEFAULT_INTERVAL",
    "FRESHNESS",
    "KUBERNETES",
    "METRICS_API",
    "SIMULATED",
    "KubernetesMetricsSource",
    "MetricsConf",
    "MetricsConfError",
    "MetricsPoller",
    "MetricsSource",
    "NodeMetrics",
    "NodeUsage",
    "parse_metrics_conf",
]

log = logging.getLogger(__name__)

#: Volcano's ``defaultMetricsInternal``: how often the scheduler cache asks the source.
DEFAULT_INTERVAL = 30.0
#: Volcano's ``MetricsActiveTime``: older metrics are not trusted (the node counts as without metrics).
FRESHNESS = 300.0
KUBERNETES = "kubernetes"
SIMULATED = "simulated"
#: Volcano's metric client types, which pumice does not query.
VOLCANO_TYPES = ("prometheus", "prometheus_adaptor", "elasticsearch")
METRICS_API = "/apis/metrics.k8s.io/v1beta1/nodes"
#: Keys Volcano's clients read (the ones pumice does not use are accepted only with Volcano's types, refused).
_KEYS = ("type", "address", "interval", "tls.insecureSkipVerify", "elasticsearch.index",
         "elasticsearch.username", "elasticsearch.password", "elasticsearch.hostnameFieldName")


class MetricsConfError(ValueError):
    """The ``metrics`` section of a scheduler configuration is wrong (one line, naming the key)."""


@dataclass(frozen=True, slots=True)
class NodeMetrics:
    """One node's measured usage: averages over ``window`` seconds ending at ``timestamp`` (epoch seconds)."""

    cpu: float  #: milli-cores
    memory: float  #: bytes
    timestamp: float
    window: float = 0.0


@runtime_checkable
class MetricsSource(Protocol):
    """Where node metrics come from. ``node_metrics(now)``: the latest measurement of each node it knows
    (a node it has nothing for is absent); it may be slow (a network call): it is asked once per interval."""

    def node_metrics(self, now: float) -> Mapping[str, NodeMetrics]: ...


@dataclass(frozen=True, slots=True)
class MetricsConf:
    """The scheduler configuration's ``metrics`` section, checked."""

    type: str = ""
    address: str = ""
    interval: float = DEFAULT_INTERVAL


def _go_duration(text: str) -> float | None:
    from pumice.nodes.duration import parse_duration

    try:
        return parse_duration(text)
    except ValueError:
        return None


def parse_metrics_conf(raw: Any, source: str = "scheduler configuration") -> MetricsConf | None:
    """``metrics:`` of a scheduler configuration (None when absent); :class:`MetricsConfError` names the key."""
    if raw is None:
        return None
    where = f"{source}: metrics"
    if not isinstance(raw, Mapping):
        raise MetricsConfError(f"{where}: expected a mapping (type, address, interval)")
    unknown = [k for k in raw if k not in _KEYS]
    if unknown:
        raise MetricsConfError(f"{where}: unknown key {str(unknown[0])!r} (known: {', '.join(_KEYS)})")
    kind = str(raw.get("type") or "")
    if kind in VOLCANO_TYPES:
        raise MetricsConfError(f"{where}.type: {kind!r} (Volcano's {kind} client) is not supported by pumice: use "
                               f"{KUBERNETES!r} (the metrics.k8s.io API of the cluster, e.g. metrics-server) or "
                               f"{SIMULATED!r} (the simulated kubelet)")
    if kind not in ("", KUBERNETES, SIMULATED):
        raise MetricsConfError(f"{where}.type: unknown metrics type {kind!r} (known: {KUBERNETES}, {SIMULATED})")
    extra = [k for k in raw if k not in ("type", "address", "interval")]
    if extra:
        raise MetricsConfError(f"{where}: {extra[0]!r} is a setting of Volcano's clients; type {kind or '(none)'} "
                               "has no use for it")
    interval = DEFAULT_INTERVAL
    if raw.get("interval") is not None:
        parsed = _go_duration(str(raw["interval"]))
        if parsed is None or parsed <= 0:
            raise MetricsConfError(f"{where}.interval: {raw['interval']!r} is not a positive duration (like 30s)")
        interval = parsed
    return MetricsConf(kind, str(raw.get("address") or ""), interval)


def _timestamp(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class KubernetesMetricsSource:
    """The Kubernetes metrics API (``GET /apis/metrics.k8s.io/v1beta1/nodes``) through ``get_json(path)``.

    A 404 (the API is not served: no metrics-server) is reported once as a warning, and again only after it
    came back; any other failure likewise. Either way the answer is empty: no node has fresh metrics.
    """

    def __init__(self, get_json: Callable[[str], Any]) -> None:
        self._get_json = get_json
        self.problem: str | None = None  #: what went wrong at the last call (None: it worked)

    def node_metrics(self, now: float) -> Mapping[str, NodeMetrics]:
        try:
            doc = self._get_json(METRICS_API)
        except Exception as err:  # the client's errors: not served, unreachable, refused
            code = getattr(err, "code", None) or getattr(err, "status", None)
            problem = ("the cluster does not serve the metrics API (metrics.k8s.io/v1beta1 NodeMetrics; install "
                       "metrics-server): nodes have no fresh usage metrics, the usage plugin and the descheduler "
                       "see none" if code == 404 else f"node metrics unavailable: {err}")
            if problem != self.problem:
                log.warning("%s", problem)
            self.problem = problem
            return {}
        if self.problem is not None:
            log.info("node metrics available again from %s", METRICS_API)
        self.problem = None
        out: dict[str, NodeMetrics] = {}
        for item in (doc or {}).get("items") or []:
            name = (item.get("metadata") or {}).get("name")
            usage = item.get("usage") or {}
            when = _timestamp(item.get("timestamp"))
            if not name or when is None:
                continue
            try:
                cpu = float(milli_value(usage.get("cpu", 0)))
                memory = float(int_value(usage.get("memory", 0)))
            except QuantityError:
                continue
            window = _go_duration(str(item.get("window") or "0")) or 0.0
            out[str(name)] = NodeMetrics(cpu, memory, when, window)
        return out


class MetricsPoller:
    """Asks ``source`` at most once per ``interval`` (clock seconds) and keeps the latest answer per node."""

    def __init__(self, source: MetricsSource, interval: float = DEFAULT_INTERVAL) -> None:
        self.source = source
        self.interval = interval
        self._last = -float("inf")
        self.latest: dict[str, NodeMetrics] = {}
        self.version = 0

    def due(self, now: float) -> bool:
        return now - self._last >= self.interval

    def poll(self, now: float) -> dict[str, NodeMetrics]:
        """The latest metrics, asking the source first when an interval has passed since the last time."""
        if self.due(now):
            self._last = now
            self.latest.update(self.source.node_metrics(now))
            self.version += 1
        return self.latest

    def next_due(self) -> float:
        return self._last + self.interval


@dataclass
class NodeUsage:
    """Node metrics as a session reads them: ``by_node`` (name -> :class:`NodeMetrics`), and
    :meth:`columns` aligned to a node table (computed once per node table and metrics version)."""

    by_node: Mapping[str, NodeMetrics] = field(default_factory=dict)
    #: The metrics section's interval (the usage plugin's window for pods not yet seen by the metrics).
    interval: float = DEFAULT_INTERVAL
    version: int = 0
    _aligned: tuple[object, int, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = field(default=None, repr=False)

    def columns(self, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cpu milli, memory bytes, timestamp) per node of ``names``; a node without metrics has
        timestamp -inf (never fresh) and usage 0."""
        known = self._aligned
        if known is not None and known[0] is names and known[1] == self.version:
            return known[2]
        n = len(names)
        cpu, mem, ts = np.zeros(n), np.zeros(n), np.full(n, -np.inf)
        by_node = self.by_node
        if by_node:
            for i, name in enumerate(names):
                m = by_node.get(name)
                if m is not None:
                    cpu[i], mem[i], ts[i] = m.cpu, m.memory, m.timestamp
        cols = (cpu, mem, ts)
        self._aligned = (names, self.version, cols)
        return cols
