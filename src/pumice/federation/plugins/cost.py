"""cost: the cheapest member that fits scores 100, the dearest 0.

A job's price in a member is what its whole request (every replica) costs there for one hour at the member's
``spec.cost`` (per core, per GiB, per unit of any other resource, per hour); a member without a price for a
resource charges nothing for it.
"""

from __future__ import annotations

from ..view import Evaluation, MemberView
from .base import ClusterPlugin, register, spread_linear


@register
class CostPlugin(ClusterPlugin):
    name = "cost"
    has_score = True

    def score(self, ev: Evaluation, members: list[MemberView]) -> list[float]:
        return spread_linear([m.cost_per_hour(ev.job) for m in members], lower_is_better=True)
