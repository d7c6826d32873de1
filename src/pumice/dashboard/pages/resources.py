"""Resources as the dashboard reports them: numbers per dimension (``cpu`` in cores, ``memory`` in bytes,
``gpu`` for every extended resource named ``*/gpu`` such as ``nvidia.com/gpu``, ``pods`` as counts)."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

from pumice.api.quantity import QuantityError, milli_value

from .objects import Obj, meta_of, spec_of

__all__ = ["DIMENSIONS", "add", "clean", "full", "parse_resources", "pod_requests"]

#: The resource dimensions the dashboard reports, in display order.
DIMENSIONS = ("cpu", "memory", "gpu", "pods")


def _dimension(name: str) -> str | None:
    if name in ("cpu", "memory", "pods"):
        return name
    if name == "gpu" or name.endswith("/gpu"):
        return "gpu"
    return None


def parse_resources(resources: Mapping[str, Any] | None) -> dict[str, float]:
    """A ``ResourceList`` as numbers per dashboard dimension (unparseable quantities are skipped)."""
    out: dict[str, float] = {}
    for name, value in (resources or {}).items():
        dim = _dimension(str(name))
        if dim is None:
            continue
        try:
            number = milli_value(value) / 1000
        except (QuantityError, TypeError, ValueError, OverflowError):  # overflow: beyond what a float holds
            continue
        out[dim] = out.get(dim, 0.0) + number
    return out


def add(into: dict[str, float], more: Mapping[str, float]) -> None:
    """``into += more``, per dimension."""
    for k, v in more.items():
        into[k] = into.get(k, 0.0) + v


def full(res: Mapping[str, float]) -> dict[str, float]:
    """Every dimension, rounded for display (0 when absent)."""
    return {d: clean(res.get(d, 0.0)) for d in DIMENSIONS}


def clean(x: float) -> float:
    """Rounded to three decimals, and an int when whole."""
    if not math.isfinite(x):  # sums of quantities near a float's limit: the largest float, not an error
        return math.copysign(sys.float_info.max, x) if not math.isnan(x) else 0.0
    r = round(x, 3)
    return int(r) if r == int(r) else r


_REQUESTS: dict[tuple[str, str], dict[str, float]] = {}
_REQUESTS_MAX = 200_000


def pod_requests(pod: Obj) -> dict[str, float]:
    """Effective requests of a pod: max(sum of containers, each init container) + overhead, plus 1 pod.

    Memoised by (uid, resourceVersion): stored objects change only with a new resourceVersion. Read-only.
    """
    m = meta_of(pod)
    uid, rv = m.get("uid"), m.get("resourceVersion")
    if uid and rv:
        key = (str(uid), str(rv))
        hit = _REQUESTS.get(key)
        if hit is None:
            if len(_REQUESTS) >= _REQUESTS_MAX:
                _REQUESTS.clear()
            hit = _REQUESTS[key] = _pod_requests(pod)
        return hit
    return _pod_requests(pod)


def _pod_requests(pod: Obj) -> dict[str, float]:
    s = spec_of(pod)
    total: dict[str, float] = {}
    for c in s.get("containers") or []:
        add(total, parse_resources((c.get("resources") or {}).get("requests")))
    for c in s.get("initContainers") or []:
        for k, v in parse_resources((c.get("resources") or {}).get("requests")).items():
            total[k] = max(total.get(k, 0.0), v)
    add(total, parse_resources(s.get("overhead")))
    total["pods"] = 1.0
    return total
