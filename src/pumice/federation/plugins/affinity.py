"""clusteraffinity: the job's ``cluster-selector`` / ``cluster-affinity`` (required) and preferred terms (score).

Required: ``clusterNames`` (if given, only these), ``exclude``, and every label selector (the
``cluster-selector`` annotation and ``labelSelector``) must match the member's Cluster labels. Preferred: each
``{weight, clusterNames, labelSelector}`` term a member matches adds its weight; the score is the matched
share of all the weights (0 when the job prefers nothing).
"""

from __future__ import annotations

from ..view import Evaluation, MemberView
from .base import ClusterPlugin, register


@register
class ClusterAffinityPlugin(ClusterPlugin):
    name = "clusteraffinity"
    has_filter = True
    has_score = True

    def filter(self, ev: Evaluation, member: MemberView) -> str | None:
        return ev.job.affinity.rejects(member.name, member.labels)

    def score(self, ev: Evaluation, members: list[MemberView]) -> list[float]:
        terms = ev.job.affinity.preferred
        total = sum(t.weight for t in terms)
        if not total:
            return [0.0] * len(members)
        return [100.0 * sum(t.weight for t in terms if t.matches(m.name, m.labels)) / total for m in members]
