"""Simulated nodes (like KWOK): bound pods start, run for their declared duration, then end.

``SimulatedKubelet`` plays the kubelet of every simulated node over a store, in virtual or real time.
"""

from .duration import (
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FAIL_ANNOTATION,
    exit_code,
    parse_duration,
    pod_duration,
)
from .kubelet import SimulatedKubelet

__all__ = [
    "DURATION_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "FAIL_ANNOTATION",
    "SimulatedKubelet",
    "exit_code",
    "parse_duration",
    "pod_duration",
]
