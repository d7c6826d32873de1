"""Clocks: the wall clock (optionally sped up) for the live control plane, a virtual one for simulation.

Everything that needs the time (controllers' TTLs and timeouts, simulated pods' durations, the
scheduling period, creation timestamps) reads it from a :class:`Clock`, so the same code runs in
real time and in virtual time.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (virtual or real)."""
        ...


def to_datetime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def rfc3339(seconds: float) -> str:
    return to_datetime(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


class WallClock:
    """Real time; ``scale`` > 1 runs faster than the wall clock (``--time-scale 60``: a minute a second)."""

    def __init__(self, scale: float = 1.0) -> None:
        if scale <= 0:
            raise ValueError("time scale must be positive")
        self.scale = scale
        self._origin_wall = time.time()
        self._origin_mono = time.monotonic()

    def now(self) -> float:
        return self._origin_wall + (time.monotonic() - self._origin_mono) * self.scale

    def sleep_until(self, t: float) -> None:
        delay = (t - self.now()) / self.scale
        if delay > 0:
            time.sleep(delay)


class VirtualClock:
    """Simulated time: it moves only when the simulator advances it."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = start

    def now(self) -> float:
        return self._now

    def advance_to(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"virtual time cannot go back ({t} < {self._now})")
        self._now = t
