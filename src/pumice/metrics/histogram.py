"""A histogram cheap enough to observe on the scheduler's hot path.

``prometheus_client.Histogram.observe`` takes a lock and walks the buckets in Python (about 2 us); a
scheduling cycle observes some thirty values, and a simulation runs thousands of cycles. ``Buckets`` counts
with one ``bisect`` and is read only when scraped, as a ``HistogramMetricFamily``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from prometheus_client.utils import floatToGoString

__all__ = ["Buckets", "exponential_buckets"]


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ``ExponentialBuckets``: ``start, start*factor, ...`` (``count`` upper bounds)."""
    return tuple(start * factor**i for i in range(count))


class Buckets:
    """Observations counted per bucket (``le`` semantics), with their sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound (+Inf)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> tuple[list[tuple[str, float]], float]:
        """``([(le, count <= le), ..., ("+Inf", count)], sum)`` for a ``HistogramMetricFamily``."""
        counts = list(self.counts)  # one consistent copy, even while the owner observes
        total = self.total
        out: list[tuple[str, float]] = []
        running = 0
        for bound, n in zip(self.bounds, counts, strict=False):
            running += n
            out.append((floatToGoString(bound), float(running)))
        out.append(("+Inf", float(running + counts[-1])))
        return out, total
