"""What the scheduler records per cycle, as Volcano's ``pkg/scheduler/metrics`` does.

``record_cycle`` runs on the scheduler's thread once per cycle and does little: a few histogram
observations and counters, and a reference to the cycle's outcome. Everything derived from the outcome
(unschedulable jobs and tasks, per-queue figures) is computed when the metrics are scraped.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from .histogram import Buckets, exponential_buckets

__all__ = ["LATENCY_BUCKETS", "SchedulerMetrics"]

#: Volcano's buckets for the e2e, action, plugin and task latencies (milliseconds): 5, 10, ..., 81920.
LATENCY_BUCKETS = exponential_buckets(5, 2, 15)


@functools.lru_cache(maxsize=4096)
def _epoch(timestamp: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp (pods created in one second share the parse)."""
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class SchedulerMetrics:
    """The scheduler's counters and latency histograms, and the last cycle's outcome."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.e2e = Buckets(LATENCY_BUCKETS)
        self.open_session = Buckets(LATENCY_BUCKETS)
        self.task_latency = Buckets(LATENCY_BUCKETS)
        self.actions: dict[str, Buckets] = {}
        self.plugins: dict[tuple[str, str], Buckets] = {}
        #: schedule attempts by result: scheduled, unschedulable, error
        self.attempts: dict[str, int] = {"scheduled": 0, "unschedulable": 0, "error": 0}
        self.preemption_attempts = 0
        self.preemption_victims = 0
        self.cycles = 0
        #: The last cycle's outcome (a ``SessionOutcome``; read-only once recorded).
        self.last: Any = None

    def record_cycle(self, outcome: Any, seconds: float, *, bind_errors: int = 0,
                     bound_created: Iterable[str] = (), now: float | None = None) -> None:
        """One scheduling cycle: ``seconds`` of wall time from its start to its last write; ``bound_created``:
        the creation timestamps of the pods it bound (their scheduling latency is ``now`` minus those)."""
        stats = outcome.stats
        with self.lock:
            self.cycles += 1
            self.e2e.observe(seconds * 1000.0)
            if stats is not None:
                self.open_session.observe(stats.open_seconds * 1000.0)
                actions = self.actions
                for name, spent in stats.actions:
                    hist = actions.get(name)
                    if hist is None:
                        hist = actions[name] = Buckets(LATENCY_BUCKETS)
                    hist.observe(spent * 1000.0)
                plugins = self.plugins
                for name, point, spent in stats.plugins:
                    hist = plugins.get((name, point))
                    if hist is None:
                        hist = plugins[(name, point)] = Buckets(LATENCY_BUCKETS)
                    hist.observe(spent * 1000.0)
                self.preemption_attempts += stats.preemption_attempts
                if stats.preemption_victims is not None:
                    self.preemption_victims = stats.preemption_victims
            attempts = self.attempts
            attempts["scheduled"] += len(outcome.binds) - bind_errors
            attempts["error"] += bind_errors
            attempts["unschedulable"] += len(outcome.pending_pods)
            if now is not None:
                for created in bound_created:
                    at = _epoch(created)
                    if at is not None:
                        self.task_latency.observe(max(0.0, now - at) * 1000.0)
            self.last = outcome
