"""``UsageMeter``: what the pods of simulated nodes really use, summed per node, as a node's metrics report it.

The simulated kubelet tells the meter when a pod starts and stops; each pod's usage follows its
``pumice.io/usage`` profile (:mod:`pumice.nodes.usage`), piecewise constant, so a node's usage changes only
at those moments and at the profiles' steps. The meter keeps, per node, the current level and its integral
over time, and answers :meth:`node_metrics` with each node's average over the last ``window`` seconds (as
metrics-server reports a rate over its window): a node costs nothing between two changes, a query costs the
steps that fell due since the last one plus one pass over the nodes.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice.node_metrics import NodeMetrics

from .usage import UsageProfile, profile_of, usage_requests

__all__ = ["DEFAULT_WINDOW", "UsageMeter"]

log = logging.getLogger(__name__)

#: metrics-server's usual window: usage is an average over the last 30 s.
DEFAULT_WINDOW = 30.0


@dataclass(slots=True)
class _Pod:
    node: str
    cpu: float  # requests
    memory: float
    profile: UsageProfile
    start: float
    level: tuple[float, float] = (0.0, 0.0)  # what it uses now (absolute)
    next_at: float | None = None  # when its level changes next


@dataclass(slots=True)
class _Node:
    """Level now, and checkpoints (time, integral cpu, integral memory, level cpu, level memory) from the
    oldest still needed on; the integral at any later time follows from the last checkpoint before it."""

    cpu: float = 0.0
    memory: float = 0.0
    times: list[float] = field(default_factory=list)
    marks: list[tuple[float, float, float, float]] = field(default_factory=list)

    def integral(self, t: float) -> tuple[float, float]:
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            return 0.0, 0.0
        t0 = self.times[i]
        ic, im, lc, lm = self.marks[i]
        return ic + lc * (t - t0), im + lm * (t - t0)

    def change(self, t: float, d_cpu: float, d_mem: float) -> None:
        ic, im = self.integral(t)
        self.cpu = max(0.0, self.cpu + d_cpu)
        self.memory = max(0.0, self.memory + d_mem)
        if self.times and self.times[-1] == t:
            self.marks[-1] = (ic, im, self.cpu, self.memory)
        else:
            self.times.append(t)
            self.marks.append((ic, im, self.cpu, self.memory))

    def prune(self, before: float) -> None:
        """Forget checkpoints older than the last one at or before ``before``."""
        i = bisect.bisect_right(self.times, before) - 1
        if i > 0:
            del self.times[:i]
            del self.marks[:i]


class UsageMeter:
    """Per-node real usage of the pods a simulated kubelet runs (see the module doc)."""

    def __init__(self, window: float = DEFAULT_WINDOW) -> None:
        self.window = window
        self._pods: dict[str, _Pod] = {}
        self._nodes: dict[str, _Node] = {}
        self._steps: list[tuple[float, int, str, float]] = []  # (time, seq, pod key, its start)
        self._seq = itertools.count()

    def __len__(self) -> int:
        """How many pods are measured (running)."""
        return len(self._pods)

    def start(self, key: str, node: str, pod: Mapping[str, Any], started: float, now: float) -> None:
        """Pod ``key`` runs on ``node`` since ``started`` (clock seconds); counted from ``now``."""
        self.stop(key, now)
        try:
            profile = profile_of(pod)
            cpu, memory = usage_requests(pod)
        except ValueError as err:
            log.warning("%s; it is measured as using its requests", err)
            profile = UsageProfile()
            try:
                cpu, memory = usage_requests(pod)
            except ValueError:
                cpu = memory = 0
        self._advance(now)
        entry = self._pods[key] = _Pod(node, cpu, memory, profile, started)
        self._set(key, entry, now)

    def stop(self, key: str, now: float) -> None:
        """Pod ``key`` no longer runs (ended, deleted, its node gone)."""
        if key not in self._pods:
            return
        self._advance(now)  # its steps up to now first
        entry = self._pods.pop(key)
        lc, lm = entry.level
        node = self._node(entry.node)
        node.change(now, -lc, -lm)
        if len(node.times) > 16:  # nobody may have asked for metrics: keep only what a window can need
            node.prune(now - self.window)

    def usage(self, node: str, now: float) -> tuple[float, float]:
        """(cpu milli, memory bytes) used on ``node`` at ``now`` (no averaging)."""
        self._advance(now)
        found = self._nodes.get(node)
        return (found.cpu, found.memory) if found is not None else (0.0, 0.0)

    def next_step(self, now: float) -> float | None:
        """When a running pod's usage next changes level after ``now`` (its profile's next step), or None."""
        self._advance(now)
        steps = self._steps
        while steps:
            t, _, key, started = steps[0]
            entry = self._pods.get(key)
            if entry is not None and entry.start == started and entry.next_at == t:
                return t
            heapq.heappop(steps)  # stale
        return None

    def node_metrics(self, now: float, nodes: Iterable[str] = ()) -> dict[str, NodeMetrics]:
        """Each node's average usage over the last ``window`` seconds, measured ``now``: the nodes that ran
        pods, and ``nodes`` (those without any report 0)."""
        self._advance(now)
        w = self.window
        out: dict[str, NodeMetrics] = {}
        for name, node in self._nodes.items():
            if w > 0:
                c1, m1 = node.integral(now)
                c0, m0 = node.integral(now - w)
                out[name] = NodeMetrics((c1 - c0) / w, (m1 - m0) / w, now, w)
                node.prune(now - w)
            else:
                out[name] = NodeMetrics(node.cpu, node.memory, now, 0.0)
        for name in nodes:
            if name not in out:
                out[name] = NodeMetrics(0.0, 0.0, now, w)
        return out

    # --- internals ------------------------------------------------------------------------------------------

    def _node(self, name: str) -> _Node:
        node = self._nodes.get(name)
        if node is None:
            node = self._nodes[name] = _Node()
        return node

    def _set(self, key: str, entry: _Pod, t: float) -> None:
        """Put the pod at its profile's level for time ``t``, and note its next step."""
        elapsed = max(0.0, t - entry.start)
        f_cpu, f_mem = entry.profile.fractions(elapsed)
        level = (entry.cpu * f_cpu, entry.memory * f_mem)
        old = entry.level
        entry.level = level
        if level != old:
            self._node(entry.node).change(t, level[0] - old[0], level[1] - old[1])
        nxt = entry.profile.next_step(elapsed)
        entry.next_at = None if nxt is None else entry.start + nxt
        if entry.next_at is not None:
            heapq.heappush(self._steps, (entry.next_at, next(self._seq), key, entry.start))

    def _advance(self, now: float) -> None:
        """Apply every profile step due by ``now``, each at its own time."""
        steps = self._steps
        while steps and steps[0][0] <= now:
            t, _, key, started = heapq.heappop(steps)
            entry = self._pods.get(key)
            if entry is None or entry.start != started or entry.next_at != t:
                continue  # stopped, restarted or already moved on since
            self._set(key, entry, t)
