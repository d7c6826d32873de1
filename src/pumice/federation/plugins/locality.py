"""locality: region and zone preferences, and spreading a group of jobs over regions (or zones, or members).

``federation.pumice.io/region-affinity: eu-west,us-east`` (most preferred first; ``zone-affinity`` alike)
scores a member by the position of its ``topology.kubernetes.io/region`` label in the list: the first 100,
the last 100/n, unlisted 0. Jobs sharing ``federation.pumice.io/spread-group`` score higher where fewer of the
group's unfinished jobs already run, per ``spreadBy`` (``region``, ``zone`` or ``cluster``). The score is the
mean of the parts that apply to the job. No filter: a required region is a ``cluster-selector``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from .. import names
from ..view import Evaluation, MemberView
from .base import ClusterPlugin, register, spread_linear

_SPREAD_KEYS = {"region": names.REGION_LABEL, "zone": names.ZONE_LABEL, "cluster": ""}


def _ranked(preferred: tuple[str, ...], value: str) -> float:
    if value not in preferred:
        return 0.0
    return 100.0 * (len(preferred) - preferred.index(value)) / len(preferred)


@register
class LocalityPlugin(ClusterPlugin):
    name = "locality"
    ARGUMENTS: ClassVar[Mapping[str, Any]] = {"spreadBy": "region"}
    has_score = True

    def __init__(self, arguments: dict[str, object] | None = None, *, source: str = "") -> None:
        super().__init__(arguments, source=source)
        if self.args["spreadBy"] not in _SPREAD_KEYS:
            raise self.bad_argument("spreadBy", f"{self.args['spreadBy']!r} is not region, zone or cluster")

    def _domain(self, member: MemberView) -> str:
        key = _SPREAD_KEYS[str(self.args["spreadBy"])]
        return member.labels.get(key, "") if key else member.name

    def score(self, ev: Evaluation, members: list[MemberView]) -> list[float]:
        job = ev.job
        parts: list[list[float]] = []
        if job.region_affinity:
            parts.append([_ranked(job.region_affinity, m.labels.get(names.REGION_LABEL, "")) for m in members])
        if job.zone_affinity:
            parts.append([_ranked(job.zone_affinity, m.labels.get(names.ZONE_LABEL, "")) for m in members])
        if job.spread_group:
            per_domain: Counter[str] = Counter()
            for m in members:
                per_domain[self._domain(m)] += m.groups.get(job.spread_group, 0)
            parts.append(spread_linear([float(per_domain[self._domain(m)]) for m in members], lower_is_better=True))
        if not parts:
            return [0.0] * len(members)
        return [sum(p[i] for p in parts) / len(parts) for i in range(len(members))]
