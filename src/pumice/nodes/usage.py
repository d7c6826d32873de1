"""What a simulated pod really uses, declared on the pod and read by the simulated kubelet and the simulator.

A pod declares its usage relative to its requests with the ``pumice.io/usage`` annotation (the same
namespace as ``pumice.io/duration``). The value is a profile over the pod's run time (counted from its
``status.startTime``), piecewise constant:

- ``"0.5"``: half of its requests, all the time;
- ``"0.3,60s:0.9"``: 0.3 from the start, 0.9 from 60 s after the start (times are seconds or Go durations,
  increasing; a level may exceed 1: a pod bursts above its requests up to whatever its limits allow);
- ``"cpu=0.3,10m:0.9;memory=0.7"``: a profile per resource (``cpu``, ``memory``), separated by ``;``.

A resource the annotation does not name, and a pod without the annotation, uses exactly its requests
(level 1). Requests are the sum of the containers' plus the pod overhead (init containers have finished
once the pod runs); an offline pod's ``kubernetes.io/batch-cpu`` / ``batch-memory`` count as CPU and memory.
Usage is in Volcano's units: CPU in milli-cores, memory in bytes.

Public API: :data:`USAGE_ANNOTATION`, :class:`Usage`, :class:`UsageProfile`, :func:`parse_usage`,
:func:`profile_of`, :func:`pod_usage`, :func:`node_usage`, :func:`next_change`, :func:`usage_requests`,
:func:`declared_requests`. A malformed annotation raises ``ValueError`` naming the pod and the annotation
(:func:`node_usage` skips nothing silently either).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pumice.api.quantity import QuantityError, int_value, milli_value

from .duration import parse_duration

__all__ = [
    "BATCH_CPU",
    "BATCH_MEMORY",
    "USAGE_ANNOTATION",
    "Usage",
    "UsageProfile",
    "declared_requests",
    "next_change",
    "node_usage",
    "parse_usage",
    "pod_usage",
    "profile_of",
    "usage_requests",
]

USAGE_ANNOTATION = "pumice.io/usage"

_RESOURCES = ("cpu", "memory")
#: What an offline pod asks for instead of CPU and memory (Volcano's co-location, ``pumice.nodes.colocation``).
BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"
_DECLARED = (*_RESOURCES, BATCH_CPU, BATCH_MEMORY)
#: Phases in which a pod holds its node's resources (a pod the kubelet has not started yet uses nothing).
_USING = ("Running",)


@dataclass(frozen=True, slots=True)
class Usage:
    """Real usage of a pod or a node: CPU in milli-cores, memory in bytes."""

    cpu: float = 0.0
    memory: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.cpu + other.cpu, self.memory + other.memory)


@dataclass(frozen=True, slots=True)
class _Steps:
    """A piecewise-constant level: ``levels[i]`` holds from ``times[i]`` (``times[0] == 0``) on."""

    times: tuple[float, ...]
    levels: tuple[float, ...]

    def at(self, t: float) -> float:
        return self.levels[bisect.bisect_right(self.times, t) - 1]

    def after(self, t: float) -> float | None:
        i = bisect.bisect_right(self.times, t)
        return self.times[i] if i < len(self.times) else None


_FLAT = _Steps((0.0,), (1.0,))


@dataclass(frozen=True, slots=True)
class UsageProfile:
    """A parsed ``pumice.io/usage`` value: the fraction of requests used, per resource, over run time."""

    cpu: _Steps = _FLAT
    memory: _Steps = _FLAT

    def fractions(self, elapsed: float) -> tuple[float, float]:
        """(cpu, memory) fractions of requests ``elapsed`` seconds after the pod started."""
        return self.cpu.at(elapsed), self.memory.at(elapsed)

    def next_step(self, elapsed: float) -> float | None:
        """Run time (seconds after start) of the next change of level after ``elapsed``, or None."""
        nexts = [t for t in (self.cpu.after(elapsed), self.memory.after(elapsed)) if t is not None]
        return min(nexts) if nexts else None


def _level(text: str, whole: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{whole!r}: level {text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{whole!r}: level {text!r} must be a finite number >= 0")
    return value


def _steps(text: str, whole: str) -> _Steps:
    times: list[float] = [0.0]
    levels: list[float] = []
    for i, part in enumerate(p.strip() for p in text.split(",")):
        if not part:
            raise ValueError(f"{whole!r}: empty step")
        if ":" in part:
            when, _, level = part.partition(":")
            try:
                t = parse_duration(when.strip())
            except ValueError as err:
                raise ValueError(f"{whole!r}: {err}") from None
            if i == 0:
                if t != 0:
                    levels.append(1.0)  # before the first step the pod uses its requests
                    times.append(t)
            elif t <= times[-1]:
                raise ValueError(f"{whole!r}: step times must increase ({when.strip()} after {times[-1]:g}s)")
            else:
                times.append(t)
            levels.append(_level(level.strip(), whole))
        elif i == 0:
            levels.append(_level(part, whole))
        else:
            raise ValueError(f"{whole!r}: step {part!r} needs a time (e.g. 60s:{part})")
    return _Steps(tuple(times), tuple(levels))


@functools.lru_cache(maxsize=4096)
def parse_usage(text: str) -> UsageProfile:
    """Parse a ``pumice.io/usage`` value (see the module doc); ``ValueError`` says what is wrong."""
    text = text.strip()
    if not text:
        raise ValueError("empty usage profile")
    if "=" not in text:
        one = _steps(text, text)
        return UsageProfile(one, one)
    per: dict[str, _Steps] = {}
    for part in (p.strip() for p in text.split(";")):
        name, eq, profile = part.partition("=")
        name = name.strip()
        if not eq or name not in _RESOURCES:
            raise ValueError(f"{text!r}: {part!r} is not <resource>=<profile> with resource cpu or memory")
        if name in per:
            raise ValueError(f"{text!r}: {name} given twice")
        per[name] = _steps(profile, text)
    return UsageProfile(per.get("cpu", _FLAT), per.get("memory", _FLAT))


def _name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def profile_of(pod: Mapping[str, Any]) -> UsageProfile:
    """The pod's usage profile (flat 1 without the annotation); ``ValueError`` names pod and annotation."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    text = ann.get(USAGE_ANNOTATION)
    if text is None:
        return UsageProfile()
    try:
        return parse_usage(str(text))
    except ValueError as err:
        raise ValueError(f"pod {_name(pod)}: annotation {USAGE_ANNOTATION}: {err}") from None


def declared_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Per resource of ``cpu``, ``memory``, ``kubernetes.io/batch-cpu`` and ``batch-memory`` a pod names: the
    running containers' requests (limits where a container gives only those) plus the pod overhead; CPU in
    milli-cores, the others as plain integers (``batch-cpu`` is milli-cores already, ``batch-memory`` bytes)."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    lists = [((c.get("resources") or {}).get("requests") or {}, (c.get("resources") or {}).get("limits") or {})
             for c in spec.get("containers") or []]
    lists.append((spec.get("overhead") or {}, {}))
    for req, lim in lists:
        for name in _DECLARED:
            value = req.get(name, lim.get(name))
            if value is None:
                continue
            try:
                total[name] = total.get(name, 0) + (milli_value(value) if name == "cpu" else int_value(value))
            except QuantityError as err:
                raise ValueError(f"pod {_name(pod)}: {name}: {err}") from None
    return total


def usage_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(cpu milli, memory bytes) a pod's usage profile is relative to (:func:`declared_requests`): an offline
    pod's ``batch-cpu`` and ``batch-memory`` count as CPU and memory (Volcano's co-location: it asks for those
    and uses real CPU and memory)."""
    req = declared_requests(pod)
    return req.get("cpu", 0) + req.get(BATCH_CPU, 0), req.get("memory", 0) + req.get(BATCH_MEMORY, 0)


def _started(pod: Mapping[str, Any], now: float) -> float:
    text = str((pod.get("status") or {}).get("startTime") or "")
    if not text:
        return now
    return _timestamp(text, now)


@functools.lru_cache(maxsize=8192)
def _parse_time(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _timestamp(text: str, now: float) -> float:
    t = _parse_time(text)
    return now if t is None else t


def pod_usage(pod: Mapping[str, Any], now: float) -> Usage:
    """What ``pod`` uses at time ``now`` (seconds since the epoch, the clock's time): its requests times
    its profile's levels at ``now - status.startTime`` (a pod without ``startTime`` has just started)."""
    profile = profile_of(pod)
    cpu, mem = usage_requests(pod)
    f_cpu, f_mem = profile.fractions(max(0.0, now - _started(pod, now)))
    return Usage(cpu * f_cpu, mem * f_mem)


def _using(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in _USING and not (pod.get("metadata") or {}).get(
        "deletionTimestamp")


def node_usage(pods: Iterable[Mapping[str, Any]], now: float) -> Usage:
    """The sum of :func:`pod_usage` over the pods that run (phase Running, not being deleted)."""
    total = Usage()
    for pod in pods:
        if _using(pod):
            total = total + pod_usage(pod, now)
    return total


def next_change(pod: Mapping[str, Any], now: float) -> float | None:
    """When (clock time) the pod's usage next changes level after ``now``, or None if it never does."""
    start = _started(pod, now)
    step = profile_of(pod).next_step(max(0.0, now - start))
    return None if step is None else start + step
