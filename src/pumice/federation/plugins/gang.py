"""gang: the job's minimum gang fits on the member's nodes now (all pods of it at once, node by node).

The fit packs each task's pods onto the nodes they may use, with what is free after the member's running pods
and the federation's own reservations (``fit.fit_gang``). No score: how full a member is, is loadbalance's.
"""

from __future__ import annotations

from ..view import Evaluation, MemberView
from .base import ClusterPlugin, register


@register
class GangPlugin(ClusterPlugin):
    name = "gang"
    has_filter = True

    def filter(self, ev: Evaluation, member: MemberView) -> str | None:
        fit = ev.gang(member)
        return None if fit.ok else fit.reason
