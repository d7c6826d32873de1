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


_DAY = 86_400
_DATES: dict[int, str] = {}  # days since the epoch -> "YYYY-MM-DDT", as strftime writes it


def rfc3339(seconds: float) -> str:
    """``to_datetime(seconds)`` as RFC 3339 text in UTC with second precision.

    Whole seconds (every time of a simulation on whole-second events) skip the datetime: the date part is kept
    per day, the time of day is arithmetic. Any other time goes through ``datetime``, which rounds microseconds.
    """
    if type(seconds) is int or (type(seconds) is float and seconds.is_integer()):
        days, rest = divmod(int(seconds), _DAY)
        date = _DATES.get(days)
        if date is None:
            date = _DATES[days] = to_datetime(days * _DAY).strftime("%Y-%m-%dT")
        hours, rest = divmod(rest, 3600)
        minutes, secs = divmod(rest, 60)
        return f"{date}{hours:02d}:{minutes:02d}:{secs:02d}Z"
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
