"""The host's Jobs as the federation tracks them: the object, its demand, its placement, its phase."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .demand import JobDemand, demand_of
from .placement import Placement, read_placement
from .status import TERMINAL, phase_of

__all__ = ["JobRecord"]

Obj = dict[str, Any]


@dataclass
class JobRecord:
    key: tuple[str, str]
    obj: Obj
    placement: Placement = field(default_factory=Placement)
    #: why the placement annotation cannot be read ("" when it can): such a job is left alone
    problem: str = ""
    #: (generation, annotations) the demand was read from
    _demand_key: tuple[Any, ...] | None = None
    _demand: JobDemand | None = None
    #: members holding a reservation for this job, and since when
    reserved: dict[str, float] = field(default_factory=dict)
    #: the waiting reason last written to the host (reason, message) and when
    written: tuple[str, str] = ("", "")
    written_at: float = -1.0
    #: the verdict signature of the last decision written
    decision_key: str = ""
    #: member capacity signature when the job last fitted nowhere (skips re-evaluating it while unchanged)
    nofit: tuple[Any, ...] | None = None
    nofit_reason: str = ""
    _phase: str = ""
    #: the object and the priorities the cached demand was last checked against (identity: a cheap test)
    _checked: tuple[Any, Any] = (None, None)

    def __post_init__(self) -> None:
        self.update(self.obj)

    def update(self, obj: Obj) -> None:
        self.obj = obj
        self.placement, self.problem = read_placement((obj.get("metadata") or {}).get("annotations"))
        self._phase = phase_of(obj)

    @property
    def uid(self) -> str:
        return str((self.obj.get("metadata") or {}).get("uid") or "")

    @property
    def phase(self) -> str:
        return self._phase

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL

    @property
    def deleting(self) -> bool:
        return bool((self.obj.get("metadata") or {}).get("deletionTimestamp"))

    @property
    def waiting(self) -> bool:
        """Not placed, not finished, not being deleted: the dispatcher's to place."""
        return not self.placement.placed and not self.terminal and not self.deleting and not self.problem

    def demand(self, priorities: Mapping[str, int]) -> JobDemand:
        if self._demand is not None and self._checked[0] is self.obj and self._checked[1] is priorities:
            return self._demand
        self._checked = (self.obj, priorities)
        meta = self.obj.get("metadata") or {}
        spec = self.obj.get("spec") or {}
        key = (meta.get("generation"), tuple(sorted((meta.get("annotations") or {}).items())),
               priorities.get(str(spec.get("priorityClassName") or ""), 0))
        if self._demand is None or key != self._demand_key:
            self._demand = demand_of(self.obj, priorities)
            self._demand_key = key
            self.nofit = None
        return self._demand
