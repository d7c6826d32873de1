"""Cluster choice: the configured plugins, tier by tier, over every member, for one job.

A member must pass every enabled filter (all tiers; the first that rejects it is the reason given). The kept
members are then ranked by the first tier's summed weighted scores, ties broken by the next tier's, then by
name: a later tier only decides among members an earlier tier could not tell apart. (Volcano's node order
sums every plugin's score; this is the federation's own, deliberately lexicographic, so that a policy such as
"tightest topology, then cheapest, then least loaded" needs no weight tuning.) ``Choice`` keeps every verdict
for ``pumice federation explain``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .config import FederationConfig
from .demand import JobDemand
from .fit import Placement
from .plugins import PLUGINS, ClusterPlugin
from .view import Evaluation, MemberView

__all__ = ["Choice", "ClusterChooser", "Verdict"]


@dataclass
class Verdict:
    member: str
    kept: bool
    plugin: str = ""
    reason: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    tiers: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster": self.member, "kept": self.kept}
        if not self.kept:
            out["plugin"] = self.plugin
            out["reason"] = self.reason
        else:
            out["scores"] = {k: round(v, 2) for k, v in self.scores.items()}
            out["tiers"] = [round(v, 2) for v in self.tiers]
        return out


@dataclass
class Choice:
    job: JobDemand
    evaluation: Evaluation
    #: kept members best first, then the rejected ones by name
    verdicts: list[Verdict]
    ranked: list[MemberView]

    @property
    def best(self) -> MemberView | None:
        return self.ranked[0] if self.ranked else None

    def placement(self, member: MemberView) -> Placement | None:
        return self.evaluation.placement(member)

    def why_not(self) -> str:
        """One line: why no member was kept."""
        rejected = [v for v in self.verdicts if not v.kept]
        if not rejected:
            return "no member clusters"
        return "no cluster fits: " + "; ".join(f"{v.member}: {v.reason}" for v in rejected)


class ClusterChooser:
    """The plugins of a configuration, ready to rank members for jobs."""

    def __init__(self, config: FederationConfig) -> None:
        self.tiers: list[list[tuple[ClusterPlugin, bool, bool]]] = []
        for tier in config.tiers:
            built = []
            for pc in tier:
                plugin = PLUGINS[pc.name](pc.arguments, source=config.source)
                built.append((plugin, pc.filter and plugin.has_filter, pc.score and plugin.has_score))
            self.tiers.append(built)
        self._filters = [p for tier in self.tiers for p, f, _ in tier if f]

    def choose(self, job: JobDemand, members: Iterable[MemberView]) -> Choice:
        ev = Evaluation(job)
        kept: list[MemberView] = []
        rejected: list[Verdict] = []
        for member in members:
            if not member.ready:
                rejected.append(Verdict(member.name, False, "", member.not_ready))
                continue
            for plugin in self._filters:
                reason = plugin.filter(ev, member)
                if reason is not None:
                    rejected.append(Verdict(member.name, False, plugin.name, reason))
                    break
            else:
                kept.append(member)
        verdicts = {m.name: Verdict(m.name, True) for m in kept}
        if kept:
            for tier in self.tiers:
                sums = [0.0] * len(kept)
                for plugin, _, scored in tier:
                    if not scored or plugin.weight == 0:
                        continue
                    raw = plugin.score(ev, kept)
                    for i, m in enumerate(kept):
                        value = raw[i] * plugin.weight
                        verdicts[m.name].scores[plugin.name] = value
                        sums[i] += value
                for i, m in enumerate(kept):
                    verdicts[m.name].tiers.append(sums[i])
            kept.sort(key=lambda m: (tuple(-t for t in verdicts[m.name].tiers), m.name))
        rejected.sort(key=lambda v: v.member)
        return Choice(job, ev, [verdicts[m.name] for m in kept] + rejected, kept)
