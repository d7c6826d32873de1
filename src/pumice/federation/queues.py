"""Global queues: the host's Queues applied to the federation's capacity as a whole.

The host's Queue objects keep Volcano's meaning, with the sum of every ready member's allocatable as the
cluster. What a queue holds (``allocated``) is the request of its jobs dispatched and not finished, wherever
they run; what it asks (``request``) adds its jobs waiting on the host. Two policies, as Volcano's plugins:

* ``proportion`` (Volcano's default configuration): a queue's deserved share is water-filled by weight
  between the queues that have jobs, capped by their capability and request and raised to their guarantee
  (``proportion.go``). A job goes out only while its queue is Open and not overused (``deserved <=
  allocated``), and ``allocated + the job <= deserved`` on the resources it requests (``AllocatableFn``).
* ``capacity`` (hierarchical queues): ``deserved`` comes from the queue's spec; only leaf queues take jobs;
  the queue and every ancestor must keep ``allocated + the job <= realCapability`` (``capacity.go``); an
  ancestor's allocation is its children's.

Queues are served in ``QueueOrderFn`` order: higher ``spec.priority`` first, then the lower share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pumice.scheduler.resources import EPS, ResourceSpace

__all__ = ["GlobalQueues", "QueueAccount", "amounts", "federation_space"]

Obj = dict[str, Any]


def federation_space(names: Iterable[str]) -> ResourceSpace:
    return ResourceSpace(names)


def amounts(space: ResourceSpace, values: Mapping[str, float]) -> np.ndarray:
    """Amounts already in Volcano's units (a ``JobDemand``'s) as a vector of ``space``."""
    vec = space.zeros()
    for name, value in values.items():
        i = space.index.get(name)
        if i is not None:
            vec[i] = value
    return vec


def _capability(space: ResourceSpace, capability: Mapping[str, Any] | None) -> np.ndarray:
    """A queue capability: missing dimensions (and cpu/memory <= 0) are unlimited (``proportion.go``)."""
    if capability is None:
        return np.full(space.size, np.inf)
    vec = space.vector(capability, missing=np.inf)
    for d in (0, 1):
        if vec[d] <= 0:
            vec[d] = np.inf
    return vec


def _fits(amount: np.ndarray, limit: np.ndarray, req: np.ndarray) -> bool:
    """``amount <= limit`` on the dimensions ``req`` asks for (``LessEqualWithDimension``)."""
    dims = req > 0
    return bool((amount[dims] - limit[dims] < EPS).all())


def _share(allocated: np.ndarray, deserved: np.ndarray) -> float:
    dims = deserved >= EPS
    if not dims.any():
        return 0.0
    return float((allocated[dims] / deserved[dims]).max())


@dataclass
class QueueAccount:
    name: str
    weight: int
    parent: str
    state: str
    priority: int
    capability: np.ndarray
    guarantee: np.ndarray
    spec_deserved: np.ndarray | None
    allocated: np.ndarray
    request: np.ndarray
    deserved: np.ndarray = field(default_factory=lambda: np.zeros(0))
    real_capability: np.ndarray = field(default_factory=lambda: np.zeros(0))
    children: list[str] = field(default_factory=list)

    def share(self) -> float:
        if self.spec_deserved is not None and not (self.deserved >= EPS).any():
            return 1.0  # capacity: a queue that deserves nothing is best effort
        return _share(self.allocated, self.deserved)


class GlobalQueues:
    """One cycle's queue accounting over the federation (see the module docstring)."""

    def __init__(self, mode: str, space: ResourceSpace, total: np.ndarray, queues: Mapping[str, Obj],
                 allocated: Mapping[str, np.ndarray], pending: Mapping[str, np.ndarray]) -> None:
        self.mode = mode
        self.space = space
        self.total = total
        self.accounts: dict[str, QueueAccount] = {}
        for name, q in queues.items():
            spec = q.get("spec") or {}
            status = q.get("status") or {}
            guarantee = space.vector(((spec.get("guarantee") or {}).get("resource")) or {})
            alloc = allocated.get(name, space.zeros()).copy()
            self.accounts[name] = QueueAccount(
                name=name,
                weight=int(spec.get("weight") or 1),
                parent=str(spec.get("parent") or ("" if name == "root" else "root")),
                state=str(status.get("state") or "Open"),
                priority=int(spec.get("priority") or 0),
                capability=_capability(space, spec.get("capability")),
                guarantee=guarantee,
                spec_deserved=space.vector(spec["deserved"]) if spec.get("deserved") else None,
                allocated=alloc,
                request=alloc + pending.get(name, space.zeros()),
            )
        for name, acc in self.accounts.items():
            if acc.parent in self.accounts and acc.parent != name:
                self.accounts[acc.parent].children.append(name)
        if mode == "capacity":
            self._capacity()
        else:
            self._proportion()

    # --- deserved shares ---------------------------------------------------------------------------------
    def _proportion(self) -> None:
        """Volcano's water-filling among the queues that have jobs (allocated or waiting)."""
        active = {n: a for n, a in self.accounts.items() if a.request.any()}
        total_guarantee = sum((a.guarantee for a in self.accounts.values()), self.space.zeros())
        for acc in self.accounts.values():
            real = np.maximum(self.total - total_guarantee, 0) + acc.guarantee
            acc.real_capability = np.minimum(real, acc.capability)
            acc.deserved = self.space.zeros()
        remaining = self.total.copy()
        meet: set[str] = set()
        while True:
            weight_sum = sum(a.weight for n, a in active.items() if n not in meet)
            if weight_sum == 0:
                break
            old = remaining.copy()
            increased = self.space.zeros()
            decreased = self.space.zeros()
            for name, acc in active.items():
                if name in meet:
                    continue
                prev = acc.deserved
                new = np.maximum(np.minimum(np.minimum(prev + remaining * acc.weight / weight_sum,
                                                       acc.real_capability), acc.request), acc.guarantee)
                acc.deserved = new
                if bool((acc.request - new < EPS).all()) or np.array_equal(new, prev):
                    meet.add(name)
                diff = new - prev
                increased += np.maximum(diff, 0.0)
                decreased += np.maximum(-diff, 0.0)
            remaining = np.maximum(remaining + decreased - increased, 0.0)
            if bool((remaining < EPS).all()) or np.array_equal(remaining, old):
                break

    def _capacity(self) -> None:
        """Deserved from the spec; capabilities nested under the parents'; parents hold their children's."""
        total_guarantee = sum((a.guarantee for a in self.accounts.values()), self.space.zeros())
        for acc in self.accounts.values():
            real = np.maximum(self.total - total_guarantee, 0) + acc.guarantee
            acc.real_capability = np.minimum(real, acc.capability)
            deserved = acc.spec_deserved if acc.spec_deserved is not None else self.space.zeros()
            acc.deserved = np.maximum(np.minimum(deserved, acc.real_capability), acc.guarantee)
        for acc in self.accounts.values():
            for ancestor in self.ancestors(acc.name):
                acc.real_capability = np.minimum(acc.real_capability, self.accounts[ancestor].real_capability)
        for name in list(self.accounts):
            if self.accounts[name].children:
                continue
            for ancestor in self.ancestors(name):
                self.accounts[ancestor].allocated += self.accounts[name].allocated

    def ancestors(self, name: str) -> list[str]:
        out: list[str] = []
        seen = {name}
        cur = self.accounts[name].parent if name in self.accounts else ""
        while cur and cur in self.accounts and cur not in seen:
            out.append(cur)
            seen.add(cur)
            cur = self.accounts[cur].parent
        return out

    # --- admission ---------------------------------------------------------------------------------------
    def overused(self, name: str) -> bool:
        acc = self.accounts.get(name)
        if acc is None or self.mode == "capacity":
            return False
        return bool((acc.deserved - acc.allocated < EPS).all())

    def admit(self, name: str, request: np.ndarray) -> str | None:
        """Why the queue cannot take a job asking ``request`` now (None: it can)."""
        acc = self.accounts.get(name)
        if acc is None:
            return f"queue {name} does not exist on the host"
        if acc.state != "Open":
            return f"queue {name} is {acc.state}, not Open"
        describe = self.space.describe
        if self.mode == "capacity":
            if acc.children:
                return f"queue {name} is not a leaf queue"
            for q in [name, *self.ancestors(name)]:
                a = self.accounts[q]
                if not _fits(a.allocated + request, a.real_capability, request):
                    return (f"queue {q} capability: allocated {describe(a.allocated)} + {describe(request)} "
                            f"exceeds {describe(a.real_capability)} across the federation")
            return None
        if self.overused(name):
            return (f"queue {name} is overused: allocated {describe(acc.allocated)} >= deserved "
                    f"{describe(acc.deserved)} of the federation")
        if not _fits(acc.allocated + request, acc.deserved, request):
            return (f"queue {name} quota: allocated {describe(acc.allocated)} + {describe(request)} exceeds "
                    f"deserved {describe(acc.deserved)} of the federation")
        return None

    def allocate(self, name: str, request: np.ndarray) -> None:
        acc = self.accounts.get(name)
        if acc is None:
            return
        acc.allocated += request
        if self.mode == "capacity":
            for ancestor in self.ancestors(name):
                self.accounts[ancestor].allocated += request

    def order_key(self, name: str) -> tuple[int, float, str]:
        acc = self.accounts.get(name)
        if acc is None:
            return (0, 0.0, name)
        return (-acc.priority, acc.share(), name)

    def status_allocated(self, name: str) -> dict[str, str]:
        """``status.allocated`` of a queue as the federation sees it (quantities)."""
        from pumice.api.quantity import format_quantity

        acc = self.accounts.get(name)
        if acc is None:
            return {}
        out = {}
        for res, value in zip(self.space.names, acc.allocated.tolist(), strict=True):
            if value > 0:
                thousandths = round(value * 1000) if res == "memory" else round(value)
                out[res] = format_quantity(int(thousandths), milli=True)
        return out
