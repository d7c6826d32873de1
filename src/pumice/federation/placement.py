"""Where a host Job runs: the ``federation.pumice.io/placement`` annotation, the federation's durable record.

Written on the host before anything is created in a member, so that a restarted federation knows every
job's member(s) and finishes what it started: ``dispatch`` counts the job's placements (the members' copies
carry it, and a copy from an older dispatch is stale and removed); ``parts`` name each member's Job and its
tasks (one part, all tasks, unless the job was split); ``at`` when it was placed; ``history`` the members it
was taken back from, ``lost`` how many times because a member went away (``maxRedispatches`` bounds these) and
``returned`` the members that did not start it in time (it avoids them next); ``moving`` why it is being taken
back, while its copies are deleted, and ``kind`` whether for a loss (``lost``) or for not starting
(``unstarted``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import names

__all__ = ["Part", "Placement", "read_placement"]


@dataclass
class Part:
    cluster: str
    name: str
    #: the tasks of this part; None: every task of the job
    tasks: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster": self.cluster, "name": self.name}
        if self.tasks is not None:
            out["tasks"] = list(self.tasks)
        return out


@dataclass
class Placement:
    dispatch: int = 0
    parts: list[Part] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    moving: str = ""
    at: float = 0.0
    lost: int = 0
    returned: list[str] = field(default_factory=list)
    kind: str = ""

    @property
    def placed(self) -> bool:
        return bool(self.parts)

    @property
    def clusters(self) -> list[str]:
        return [p.cluster for p in self.parts]

    def label(self) -> str:
        """The ``federation.pumice.io/cluster`` label value: the member, or ``a_b`` for parts in a and b."""
        return "_".join(sorted(set(self.clusters)))

    def to_annotation(self) -> str:
        out: dict[str, Any] = {"dispatch": self.dispatch, "parts": [p.to_json() for p in self.parts]}
        if self.at:
            out["at"] = round(self.at, 3)
        if self.history:
            out["history"] = list(self.history)
        if self.lost:
            out["lost"] = self.lost
        if self.returned:
            out["returned"] = list(self.returned)
        if self.moving:
            out["moving"] = self.moving
            out["kind"] = self.kind
        return json.dumps(out, separators=(",", ":"))


def read_placement(annotations: dict[str, str] | None) -> tuple[Placement, str]:
    """The placement a host Job carries (empty if none) and a problem with it ("" if readable)."""
    text = (annotations or {}).get(names.PLACEMENT)
    if not text:
        return Placement(), ""
    try:
        data = json.loads(text)
        parts = [Part(str(p["cluster"]), str(p["name"]), None if p.get("tasks") is None else
                      [str(t) for t in p["tasks"]]) for p in data.get("parts") or []]
        return Placement(int(data.get("dispatch") or 0), parts, [str(h) for h in data.get("history") or []],
                         str(data.get("moving") or ""), float(data.get("at") or 0.0), int(data.get("lost") or 0),
                         [str(r) for r in data.get("returned") or []], str(data.get("kind") or "")), ""
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        return Placement(), f"annotation {names.PLACEMENT} is not the federation's ({err})"
