"""RFC 3339 text of a clock's time: the whole-second fast path writes what the datetime would."""

from __future__ import annotations

import random

from pumice.clock import VirtualClock, rfc3339, to_datetime
from pumice.runtime.cluster import _Moments
from pumice.store import format_timestamp


def _slow(seconds: float) -> str:
    return to_datetime(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_rfc3339_writes_what_the_datetime_writes() -> None:
    rng = random.Random(11)
    times: list[float] = [0, 0.0, -1.0, -86_400.0, -86_401.0, 86_399.0, 1_767_225_600.0, 951_782_400.0,
                          253_402_300_799.0, 1_767_225_600.5, 1_767_225_600.9999996, -0.25]
    times += [float(rng.randrange(-10**10, 10**11)) for _ in range(20_000)]
    times += [rng.uniform(-1e9, 1e10) for _ in range(2_000)]
    for seconds in times:
        assert rfc3339(seconds) == _slow(seconds), seconds


def test_the_cluster_clock_gives_the_store_its_timestamps_as_text() -> None:
    clock = VirtualClock(0.0)
    moments = _Moments(clock)
    rng = random.Random(3)
    t = 0.0
    for _ in range(5_000):
        t += rng.choice([0.0, 1.0, 0.5, 26_280.0, 1e-7, 0.9999999])
        clock.advance_to(t)
        assert moments.rfc3339() == format_timestamp(moments())
