"""Resource vectors: one float64 column per resource name, Volcano's units and epsilon.

cpu is in milli-cores, memory in bytes, every other (scalar) resource in milli-units, as
Volcano's ``api.Resource`` keeps them. ``pods`` is not a vector dimension: it is a node's task limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from pumice.api.quantity import int_value, milli_value

#: Volcano's ``minResource``: l <= r iff l < r or |l - r| < 0.1.
EPS = 0.1
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
#: kube-scheduler's requests for containers that set none (used by scoring only).
DEFAULT_MILLI_CPU = 100.0
DEFAULT_MEMORY = 200.0 * 1024 * 1024


def quantity_in_units(name: str, value: str | int | float) -> float:
    """A quantity in the unit Volcano keeps for this resource name."""
    if name in (MEMORY, PODS):
        return float(int_value(value))
    return float(milli_value(value))


class ResourceSpace:
    """The resource names of one snapshot, in a fixed order: cpu, memory, then sorted scalars."""

    def __init__(self, scalar_names: Iterable[str] = ()) -> None:
        scalars = sorted({n for n in scalar_names if n not in (CPU, MEMORY, PODS)})
        self.names: list[str] = [CPU, MEMORY, *scalars]
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}

    @property
    def size(self) -> int:
        return len(self.names)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.size)

    def vector(self, resources: Mapping[str, str | int | float] | None, *, missing: float = 0.0) -> np.ndarray:
        """A resource list as a vector; dimensions it does not name get ``missing``."""
        vec = np.full(self.size, missing)
        for name, value in (resources or {}).items():
            i = self.index.get(name)
            if i is not None:
                vec[i] = quantity_in_units(name, value)
        return vec

    def describe(self, vec: np.ndarray) -> str:
        """A short human form: ``cpu 2, memory 4Gi, nvidia.com/gpu 8``."""
        parts = []
        for name, v in zip(self.names, vec, strict=True):
            if v == 0:
                continue
            parts.append(f"{name} {format_amount(name, float(v))}")
        return ", ".join(parts) or "nothing"


def format_amount(name: str, value: float) -> str:
    """A quantity in Kubernetes notation: ``1500m``, ``2``, ``4Gi``, ``1G``."""
    if value == np.inf:
        return "unlimited"
    if name == MEMORY:
        v = int(value)
        for unit, size in (("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024),
                           ("T", 1000**4), ("G", 1000**3), ("M", 1000**2), ("k", 1000)):
            if v >= size and v % size == 0:
                return f"{v // size}{unit}"
        for unit, size in (("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
            if v >= size:  # not a whole number of any unit: an approximation reads better than bytes
                return f"{v / size:.1f}{unit}"
        return str(v)
    if value % 1000 == 0:
        return str(int(value // 1000))
    return f"{int(value)}m"


def less_equal(left: np.ndarray, right: np.ndarray) -> bool:
    """Every dimension of ``left`` <= ``right`` (Volcano ``LessEqual``)."""
    return bool((left - right < EPS).all())


def fits_requested(amount: np.ndarray, limit: np.ndarray, req: np.ndarray) -> bool:
    """``amount.LessEqualWithDimension(limit, req)``: ``amount <= limit`` on the dimensions ``req``
    asks for (> 0), with Volcano's epsilon."""
    return all(a - lim < EPS for r, a, lim in zip(req.tolist(), amount.tolist(), limit.tolist(), strict=True)
               if r > 0)


def share(allocated: np.ndarray, total: np.ndarray) -> float:
    """Dominant share: max of allocated/total over the dimensions the total has (Volcano
    iterates ``total.ResourceNames()``, which skips dimensions below epsilon)."""
    dims = total >= EPS
    if not dims.any():
        return 0.0
    return float((allocated[dims] / total[dims]).max())


class SharesOf:
    """:func:`share` against one fixed total (a session's), its dimensions picked once: the same value for
    half the work, for plugins that compare shares job by job."""

    __slots__ = ("dims", "total")

    def __init__(self, total: np.ndarray) -> None:
        self.dims = (total >= EPS).nonzero()[0]
        self.total = total[self.dims]

    def __call__(self, allocated: np.ndarray) -> float:
        if not len(self.dims):
            return 0.0
        return float(np.maximum.reduce(allocated[self.dims] / self.total))
