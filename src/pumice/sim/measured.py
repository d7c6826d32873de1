"""What the pods of a run really used (their ``pumice.io/usage`` profiles), as opposed to what they requested.

Allocation (``cpu_util_mean``) counts requests; with co-location an offline pod requests
``kubernetes.io/batch-cpu`` instead of CPU, so only measured usage shows what a node really did. A pod uses its
profile (:mod:`pumice.nodes.usage`) over :func:`pumice.nodes.usage.usage_requests` from its start to its
end (or the end of the run); a pod without a profile uses its requests.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pumice.nodes.usage import UsageProfile, profile_of, usage_requests

if TYPE_CHECKING:
    from .recorder import PodRecord

__all__ = ["pod_usage_shape", "used_seconds"]

log = logging.getLogger(__name__)


def pod_usage_shape(pod: dict[str, Any]) -> tuple[UsageProfile, int, int] | None:
    """(profile, cpu milli, memory bytes) of a pod, or None when it cannot be read (logged)."""
    try:
        cpu, memory = usage_requests(pod)
        return profile_of(pod), cpu, memory
    except ValueError as err:
        log.warning("%s; its usage is not measured", err)
        return None


def _integral(profile: UsageProfile, length: float) -> tuple[float, float]:
    """∫ of the (cpu, memory) fractions over the first ``length`` seconds of run time."""
    cpu = memory = 0.0
    t = 0.0
    while t < length:
        nxt = profile.next_step(t)
        stop = length if nxt is None or nxt > length else nxt
        f_cpu, f_mem = profile.fractions(t)
        cpu += f_cpu * (stop - t)
        memory += f_mem * (stop - t)
        t = stop
    return cpu, memory


def used_seconds(pods: Iterable[PodRecord], end: float) -> tuple[float, float]:
    """(cpu milli-seconds, memory byte-seconds) the pods used from their start to their end (or ``end``)."""
    cpu = memory = 0.0
    for rec in pods:
        if rec.start is None or rec.usage is None or not rec.node:
            continue
        stop = end if rec.end is None else min(rec.end, end)
        if stop <= rec.start:
            continue
        profile, c, m = rec.usage
        f_cpu, f_mem = _integral(profile, stop - rec.start)
        cpu += c * f_cpu
        memory += m * f_mem
    return cpu, memory
