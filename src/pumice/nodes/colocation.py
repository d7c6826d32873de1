"""Co-location of online and offline pods on a node: Volcano's agent (``vc-agent``) oversubscription and eviction.

Online pods (``volcano.sh/qos-level`` LC, HLS, LS, or none) keep the CPU and memory they request. Offline pods
(``BE``) request the node's *oversubscription* instead, two extended resources the agent publishes in the node's
``status.allocatable`` and ``status.capacity``:

- ``kubernetes.io/batch-cpu`` (milli-cores, as a plain integer) and ``kubernetes.io/batch-memory`` (bytes),
- = (allocatable - measured usage of the online pods) x ratio / 100 (``--oversubscription-ratio``, 60), per
  resource, sampled every 10 s; what is published is the weighted mean of the last 10 samples (each weighs twice
  the one before it), written when it moved by more than 10 % (or on every 6th report).

The scheduler places offline pods by the ordinary fit on those resources. When the node's measured usage (all
its pods) stays at or above a high watermark (CPU 80 %, memory 60 % of allocatable; node annotations
``volcano.sh/evicting-{cpu,memory}-{high,low}-watermark`` override) for 6 samples in a row (a minute), the agent
taints the node ``volcano.sh/offline-job-evicting:NoSchedule`` and evicts one offline pod per sample, the largest
request of the resource under pressure first, until the pressure is gone; the taint is removed once every
resource is at or below its low watermark (30 %). Online pods are never evicted. A node takes part while it
carries the label ``volcano.sh/oversubscription=true`` and the agent configuration (the ConfigMap
``volcano-system/volcano-agent-configuration``, :mod:`pumice.nodes.agent_config`) enables it; when either goes,
the batch resources are removed and the offline pods that held them are evicted (Volcano's cleanup).

What a pod uses comes from :mod:`pumice.nodes.usage` (the ``pumice.io/usage`` profile relative to requests); an
offline pod's requests are its ``batch-cpu`` / ``batch-memory`` (see :func:`pod_use`).

Pure parts (the arithmetic, over arrays of nodes): :func:`qos_level`, :func:`oversubscription`,
:func:`smoothed`, :func:`should_publish`, :func:`eviction_order`. The driver, :class:`ColocationAgent`, runs
inside the simulated kubelet (``pumice.nodes.kubelet``) on its clock.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pumice.api.quantity import QuantityError, int_value, milli_value
from pumice.events import EventRecorder
from pumice.store import StoreError

from .agent_config import DEFAULT, AgentConfigReader, NodeColocation
from .usage import BATCH_CPU, BATCH_MEMORY, declared_requests, next_change, pod_usage

if TYPE_CHECKING:
    from .kubelet import SimulatedKubelet

__all__ = [
    "BATCH_CPU",
    "BATCH_MEMORY",
    "EVICTING_TAINT",
    "OVERSUBSCRIPTION_LABEL",
    "QOS_LEVEL_ANNOTATION",
    "ColocationAgent",
    "Watermarks",
    "eviction_order",
    "is_offline",
    "oversubscription",
    "pod_use",
    "qos_level",
    "should_publish",
    "smoothed",
]

log = logging.getLogger(__name__)

QOS_LEVEL_ANNOTATION = "volcano.sh/qos-level"
#: Volcano's qos levels as numbers (``pkg/agent/apis/extension``): below 0 is offline (evictable).
QOS_LEVELS = {"LC": 2, "HLS": 2, "LS": 1, "BE": -1}
OVERSUBSCRIPTION_LABEL = "volcano.sh/oversubscription"
#: Node annotation narrowing the oversubscribed resources ("cpu,memory").
OVERSUBSCRIPTION_TYPES = "volcano.sh/oversubscription-types"
EVICTING_TAINT = "volcano.sh/offline-job-evicting"

#: The agent's cadence (its probes run every 10 s).
PERIOD = 10.0
#: Samples kept for the weighted mean.
HISTORY = 10
#: Published again when a resource moved by more than this fraction of what is published.
CHANGE_STEP = 0.1
#: ... and on every n-th report regardless.
RESYNC_REPORTS = 6
#: Samples in a row at or above the high watermark before the node is under pressure.
HIGH_USAGE_COUNT = 6
#: ``--oversubscription-ratio``: the percentage of the idle resources offered.
DEFAULT_RATIO = 60
#: ``priority`` at and above which a pod is critical (``system-cluster-critical``): never evicted.
CRITICAL_PRIORITY = 2_000_000_000
_TRUE = ("1", "t", "T", "true", "TRUE", "True")  # Go's strconv.ParseBool
_FALSE = ("0", "f", "F", "false", "FALSE", "False")
_RESOURCES = ("cpu", "memory")


# --- pods ---------------------------------------------------------------------------------------------------------

def _name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def qos_level(pod: Mapping[str, Any]) -> int:
    """The pod's ``volcano.sh/qos-level`` as Volcano numbers it: LC and HLS 2, LS 1, BE -1, none 0.

    A value Volcano does not know counts as none (0, online), as in Volcano, with a warning in the log."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(QOS_LEVEL_ANNOTATION)
    if text is None:
        return 0
    level = QOS_LEVELS.get(str(text))
    if level is None:
        log.warning("pod %s: annotation %s: unknown qos level %r (LC, HLS, LS or BE): treated as online",
                    _name(pod), QOS_LEVEL_ANNOTATION, text)
        return 0
    return level


def is_offline(pod: Mapping[str, Any]) -> bool:
    """An offline pod (qos level below 0: ``BE``): the only kind the agent evicts."""
    return qos_level(pod) < 0


def pod_use(pod: Mapping[str, Any], now: float) -> tuple[float, float]:
    """(cpu milli, memory bytes) the running ``pod`` uses at ``now``: its ``pumice.io/usage`` profile
    (:func:`pumice.nodes.usage.pod_usage`, an offline pod's batch requests standing for CPU and memory)."""
    used = pod_usage(pod, now)
    return used.cpu, used.memory


def _holds_batch(pod: Mapping[str, Any]) -> bool:
    """The pod asks for ``batch-cpu`` or ``batch-memory`` (what an oversubscribed node offers)."""
    req = declared_requests(pod)
    return req.get(BATCH_CPU, 0) > 0 or req.get(BATCH_MEMORY, 0) > 0


def eviction_order(pods: Iterable[Mapping[str, Any]], resource: str) -> list[Mapping[str, Any]]:
    """The offline pods of a node in the order the agent evicts them under ``resource`` pressure.

    Volcano sorts its preemptable pods by their request of the resource, largest first (``cpu`` or ``memory``,
    so the batch resources an offline pod asks for count as nothing there); pumice breaks the ties (there Go's
    sort leaves them in any order) newest first (latest ``status.startTime``), then by name. Online pods and
    critical pods (priority >= 2000000000) are never in it."""
    rows = []
    for pod in pods:
        if not is_offline(pod) or int((pod.get("spec") or {}).get("priority") or 0) >= CRITICAL_PRIORITY:
            continue
        req = declared_requests(pod).get(resource, 0)
        started = str((pod.get("status") or {}).get("startTime") or "")
        rows.append((-req, started, _name(pod), pod))
    rows.sort(key=lambda r: (r[0], _desc(r[1]), r[2]))
    return [r[3] for r in rows]


def _desc(text: str) -> tuple[int, ...]:
    """A sort key putting later RFC 3339 times first (same-format strings order as their times)."""
    return tuple(-ord(ch) for ch in text)


# --- the arithmetic, over arrays of nodes -------------------------------------------------------------------------

def oversubscription(allocatable: np.ndarray, online_usage: np.ndarray, ratio: int = DEFAULT_RATIO) -> np.ndarray:
    """What each node can oversubscribe: (allocatable - online usage) x ratio / 100, 0 where usage exceeds
    allocatable; integers (milli-cores, bytes) truncated as Volcano's int64 arithmetic. Shapes (nodes, 2)."""
    alloc = np.asarray(allocatable, dtype=np.int64)
    used = np.asarray(online_usage, dtype=np.int64)
    idle = np.maximum(alloc - used, 0)
    return idle * int(ratio) // 100


def smoothed(history: np.ndarray) -> np.ndarray:
    """The weighted mean of samples (oldest first, shape (samples, ...)): weights 1, 2, 4, ...; integer division."""
    hist = np.asarray(history, dtype=np.int64)
    weights = np.left_shift(np.int64(1), np.arange(len(hist), dtype=np.int64))
    total = np.tensordot(weights, hist, axes=1)
    return np.asarray(total // int(weights.sum()), dtype=np.int64)


def should_publish(current: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Per node, whether ``new`` moved from ``current`` by more than 10 % in any resource (from 0: any move)."""
    cur = np.asarray(current, dtype=np.float64)
    delta = np.abs(np.asarray(new, dtype=np.float64) - cur)
    with np.errstate(divide="ignore", invalid="ignore"):
        moved = np.where(cur > 0, delta / np.where(cur > 0, cur, 1.0) > CHANGE_STEP, delta > 0)
    return np.asarray(moved.any(axis=-1))


# --- the node side ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Watermarks:
    """Eviction thresholds in percent of allocatable (Volcano's defaults, the agent configuration's: CPU 80/30,
    memory 60/30)."""

    cpu_high: int = DEFAULT.cpu_high
    memory_high: int = DEFAULT.memory_high
    cpu_low: int = DEFAULT.cpu_low
    memory_low: int = DEFAULT.memory_low

    @property
    def high(self) -> tuple[int, int]:
        return self.cpu_high, self.memory_high

    @property
    def low(self) -> tuple[int, int]:
        return self.cpu_low, self.memory_low


_WATERMARK_KEYS = {"cpu_high": "cpu-high", "memory_high": "memory-high", "cpu_low": "cpu-low",
                   "memory_low": "memory-low"}


def node_watermarks(node: Mapping[str, Any], default: Watermarks) -> Watermarks:
    """The node's ``volcano.sh/evicting-*-watermark`` annotations (or the old ``oversubscription-evicting-*``),
    over ``default``; a malformed or inconsistent set is logged and ``default`` kept, as Volcano does."""
    ann = (node.get("metadata") or {}).get("annotations") or {}
    values: dict[str, int] = {}
    for attr, part in _WATERMARK_KEYS.items():
        key = f"volcano.sh/evicting-{part}-watermark"
        text = ann.get(key, ann.get(f"volcano.sh/oversubscription-evicting-{part}-watermark"))
        if text is None:
            continue
        try:
            value = int(str(text))
        except ValueError:
            value = -1
        if value < 0:
            log.warning("node %s: annotation %s: %r is not a non-negative integer; default watermarks kept",
                        (node.get("metadata") or {}).get("name"), key, text)
            return default
        values[attr] = value
    if not values:
        return default
    marks = Watermarks(**{a: values.get(a, getattr(Watermarks(), a)) for a in _WATERMARK_KEYS})
    if marks.cpu_high <= marks.cpu_low or marks.memory_high <= marks.memory_low:
        log.warning("node %s: a low eviction watermark is not below its high one; default watermarks kept",
                    (node.get("metadata") or {}).get("name"))
        return default
    return marks


def oversubscribed(node: Mapping[str, Any]) -> bool:
    """The node carries ``volcano.sh/oversubscription`` = true (Go's ParseBool)."""
    return ((node.get("metadata") or {}).get("labels") or {}).get(OVERSUBSCRIPTION_LABEL) in _TRUE


def _types(node: Mapping[str, Any], config: NodeColocation) -> tuple[bool, bool]:
    """Which of (cpu, memory) the node oversubscribes: annotation ``volcano.sh/oversubscription-types``, else the
    agent configuration's ``overSubscriptionTypes``."""
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(OVERSUBSCRIPTION_TYPES)
    if not text:
        return config.cpu, config.memory
    named = {t.strip() for t in str(text).split(",") if t.strip()}
    unknown = named - set(_RESOURCES)
    if unknown:
        log.warning("node %s: annotation %s: %s not oversubscribed (cpu, memory only)",
                    (node.get("metadata") or {}).get("name"), OVERSUBSCRIPTION_TYPES, ", ".join(sorted(unknown)))
    return "cpu" in named, "memory" in named


def _allocatable(node: Mapping[str, Any]) -> tuple[int, int]:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    try:
        return milli_value(alloc.get("cpu", 0)), int_value(alloc.get("memory", 0))
    except QuantityError:
        return 0, 0


def _published(node: Mapping[str, Any]) -> tuple[int, int] | None:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    if BATCH_CPU not in alloc and BATCH_MEMORY not in alloc:
        return None
    try:
        return int_value(alloc.get(BATCH_CPU, 0)), int_value(alloc.get(BATCH_MEMORY, 0))
    except QuantityError:
        return None


def _tainted(node: Mapping[str, Any]) -> bool:
    return any(t.get("key") == EVICTING_TAINT for t in (node.get("spec") or {}).get("taints") or [])


@dataclass(slots=True)
class _NodeState:
    history: deque[tuple[int, int]] = field(default_factory=lambda: deque(maxlen=HISTORY))
    reports: int = 0
    high: list[int] = field(default_factory=lambda: [0, 0])  # samples in a row at/above the high watermark
    last: tuple[Any, ...] = ()  # the previous sample, to tell a quiet tick


class ColocationAgent:
    """Volcano's agent on every simulated node with ``volcano.sh/oversubscription=true`` (see the module doc).

    Driven by its kubelet: :meth:`node` on every node change, :meth:`touch` when a pod starts or stops there,
    :meth:`sync` (does what is due; True if it wrote) and :meth:`next_wakeup`. It costs nothing while no node is
    oversubscribed, and stops waking up once ten samples in a row changed nothing until a pod or a usage
    profile moves again (so a simulation still ends when nothing is left to happen)."""

    def __init__(self, kubelet: SimulatedKubelet, *, ratio: int = DEFAULT_RATIO,
                 watermarks: Watermarks | None = None, period: float = PERIOD) -> None:
        if ratio <= 0:
            raise ValueError(f"oversubscription ratio {ratio}: must be > 0 (percent)")
        self.kubelet = kubelet
        self.ratio = ratio
        self._explicit = watermarks is not None  # given here: over the agent configuration's
        self.watermarks = watermarks or Watermarks()
        self.period = period
        self.recorder = EventRecorder(kubelet.store, "volcano-agent", clock=kubelet.clock)
        #: ``volcano-system/volcano-agent-configuration`` (``pumice.nodes.agent_config``), read at each sample
        self.config = AgentConfigReader(kubelet.store)
        self._nodes: dict[str, _NodeState] = {}  # oversubscribed nodes
        self._cleanup: set[str] = set()  # nodes that left oversubscription: batch resources to take back
        self._next: float | None = None  # the next sample
        self._quiet = 0  # samples in a row that changed nothing
        self._looked = False  # asleep, and the next profile step looked for

    # --- driven by the kubelet ---------------------------------------------------------------------------------

    def node(self, name: str, node: Mapping[str, Any] | None) -> None:
        """The kubelet saw ``node`` change (None: deleted)."""
        on = node is not None and oversubscribed(node)
        if on and name not in self._nodes:
            self._nodes[name] = _NodeState()
            self._cleanup.discard(name)
            self._wake()
        elif not on and name in self._nodes:
            del self._nodes[name]
            if node is not None:
                self._cleanup.add(name)
                self._wake()

    def touch(self, node: str) -> None:
        """A pod started or stopped on ``node``."""
        if node in self._nodes:
            self._wake()

    def next_wakeup(self) -> float | None:
        if self._next is None and self._nodes and not self._looked:
            self._next = self._usage_change()  # asleep: until a usage profile steps
            self._looked = True
        return self._next

    def sync(self) -> bool:
        due = self._next
        if due is None:
            return False
        now = self.kubelet.clock.now()
        if due > now:
            return False
        wrote = self._take_back(self._cleanup)
        self._cleanup.clear()
        config = self.config.read() if self._nodes else None
        changed = False
        for name in sorted(self._nodes):
            node = self.kubelet.node(name)
            if node is None or config is None:
                continue
            settings = config.for_node(node)
            if not settings.oversubscription:  # turned off by the configuration: as if the label went
                if _published(node) is not None or any(is_offline(p) for p in self.kubelet.running_pods(name)):
                    wrote |= self._take_back({name})
                continue
            w, c = self._sample(name, node, self._nodes[name], settings, now)
            wrote |= w
            changed |= c or w
        self._quiet = 0 if changed else self._quiet + 1
        self._next = now + self.period if self._nodes and self._quiet < HISTORY else None
        self._looked = False
        return wrote

    # --- internals ---------------------------------------------------------------------------------------------

    def _wake(self) -> None:
        self._quiet = 0
        self._looked = False
        if self._next is None:
            self._next = self.kubelet.clock.now()

    def _usage_change(self) -> float | None:
        """When a usage profile of a pod on an oversubscribed node next changes level (the next sample after)."""
        now = self.kubelet.clock.now()
        first: float | None = None
        for name in self._nodes:
            for pod in self.kubelet.running_pods(name):
                try:
                    t = next_change(pod, now)
                except ValueError:
                    continue
                if t is not None and (first is None or t < first):
                    first = t
        return first

    def _sample(self, name: str, node: Mapping[str, Any], state: _NodeState, settings: NodeColocation,
                now: float) -> tuple[bool, bool]:
        """One probe of one node: publish, watch the watermarks, evict. (wrote, sample differs)."""
        pods = self.kubelet.running_pods(name)
        online = np.zeros(2)
        total = np.zeros(2)
        for pod in pods:
            try:
                use = pod_use(pod, now)
            except ValueError as err:
                log.warning("%s; counted as using nothing", err)
                continue
            total += use
            if not is_offline(pod):
                online += use
        alloc = np.array(_allocatable(node), dtype=np.int64)
        sample = oversubscription(alloc[None, :], online[None, :], self.ratio)[0]
        cpu_on, mem_on = _types(node, settings)
        sample = sample * np.array([cpu_on, mem_on], dtype=np.int64)
        state.history.append((int(sample[0]), int(sample[1])))
        state.reports += 1
        offer = smoothed(np.array(state.history))
        wrote = self._publish(name, node, state, offer)
        percent = (total.astype(np.int64) * 100 // np.maximum(alloc, 1)) if (alloc > 0).all() else np.zeros(2)
        marks = node_watermarks(node, self.watermarks if self._explicit else Watermarks(
            settings.cpu_high, settings.memory_high, settings.cpu_low, settings.memory_low))
        for i in range(2):
            state.high[i] = min(state.high[i] + 1, HIGH_USAGE_COUNT) if percent[i] >= marks.high[i] else 0
        for i, resource in enumerate(_RESOURCES):
            if state.high[i] >= HIGH_USAGE_COUNT:
                wrote |= self._evict_one(name, node, pods, resource)
        if _tainted(node) and all(percent[i] <= marks.low[i] for i in range(2)):
            wrote |= self._untaint(name)
        key = (tuple(total), tuple(offer), tuple(state.high), len(pods))
        changed = key != state.last
        state.last = key
        return wrote, changed

    def _publish(self, name: str, node: Mapping[str, Any], state: _NodeState, offer: np.ndarray) -> bool:
        current = _published(node)
        new = (int(offer[0]), int(offer[1]))
        if current == new:
            return False
        if current is not None and state.reports % RESYNC_REPORTS != 0 and \
                not should_publish(np.array(current), np.array(new)):
            return False
        res = {BATCH_CPU: str(new[0]), BATCH_MEMORY: str(new[1])}
        patch = {"status": {"allocatable": dict(res), "capacity": dict(res)}}
        try:
            self.kubelet.store.patch("nodes", None, name, patch, subresource="status")
        except StoreError as err:
            log.warning("node %s: oversubscription not published: %s", name, err)
            return False
        return True

    def _evict_one(self, name: str, node: Mapping[str, Any], pods: list[dict[str, Any]], resource: str) -> bool:
        """Volcano's pressure handler: taint the node, evict the first offline pod in :func:`eviction_order`."""
        order = eviction_order(pods, resource)
        if not order:
            return False
        wrote = self._taint(name, node)
        for pod in order:
            if self._evict(pod, f"Evict offline pod due to {resource} resource pressure"):
                return True
        return wrote

    def _evict(self, pod: Mapping[str, Any], message: str) -> bool:
        meta = pod.get("metadata") or {}
        try:
            self.kubelet.store.delete("pods", meta.get("namespace") or "default", str(meta.get("name")))
        except StoreError as err:
            log.warning("pod %s not evicted: %s", _name(pod), err)
            return False
        self.recorder.event({"kind": "Pod", "apiVersion": "v1", "metadata": meta}, "Warning", "Evicted", message)
        return True

    def _taint(self, name: str, node: Mapping[str, Any]) -> bool:
        if _tainted(node):
            return False
        taints = [*((node.get("spec") or {}).get("taints") or []), {"key": EVICTING_TAINT, "effect": "NoSchedule"}]
        with contextlib.suppress(StoreError):
            self.kubelet.store.patch("nodes", None, name, {"spec": {"taints": taints}})
            return True
        return False

    def _untaint(self, name: str) -> bool:
        node = self.kubelet.node(name)
        if node is None:
            return False
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != EVICTING_TAINT]
        with contextlib.suppress(StoreError):
            self.kubelet.store.patch("nodes", None, name, {"spec": {"taints": taints or None}})
            return True
        return False

    def _take_back(self, names: Iterable[str]) -> bool:
        """Nodes that left oversubscription: remove their batch resources, evict the offline pods holding them."""
        wrote = False
        for name in sorted(names):
            node = self.kubelet.node(name)
            if node is None:
                continue
            if _published(node) is not None:
                gone = {BATCH_CPU: None, BATCH_MEMORY: None}
                with contextlib.suppress(StoreError):
                    self.kubelet.store.patch("nodes", None, name,
                                             {"status": {"allocatable": dict(gone), "capacity": dict(gone)}},
                                             subresource="status")
                    wrote = True
            for pod in eviction_order(self.kubelet.running_pods(name), "cpu"):
                try:
                    holds = _holds_batch(pod)
                except ValueError:
                    holds = False
                if holds:
                    wrote |= self._evict(pod, "Evict offline pod due to node overSubscription is turned off")
        return wrote
