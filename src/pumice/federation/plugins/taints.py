"""tainttoleration: a member's taints against the job's ``cluster-tolerations``.

An untolerated ``NoSchedule`` or ``NoExecute`` taint keeps the job out (and ``NoExecute`` also drives the job's
re-dispatch if it is added while the job runs there, see ``redispatch``); untolerated ``PreferNoSchedule``
taints lower the score, as kube-scheduler's TaintToleration scores nodes.
"""

from __future__ import annotations

from pumice.scheduler.plugins.matching import untolerated

from ..view import Evaluation, MemberView
from .base import ClusterPlugin, register, spread_linear


def _taint(t: dict[str, object]) -> str:
    value = f"={t.get('value')}" if t.get("value") else ""
    return f"{t.get('key')}{value}:{t.get('effect')}"


@register
class TaintTolerationPlugin(ClusterPlugin):
    name = "tainttoleration"
    has_filter = True
    has_score = True

    def filter(self, ev: Evaluation, member: MemberView) -> str | None:
        if not member.taints:
            return None
        bad = untolerated(member.taints, list(ev.job.tolerations), ("NoSchedule", "NoExecute"))
        if bad:
            return f"taint {_taint(bad[0])} is not tolerated (annotation federation.pumice.io/cluster-tolerations)"
        return None

    def score(self, ev: Evaluation, members: list[MemberView]) -> list[float]:
        if not any(m.taints for m in members):
            return [0.0] * len(members)
        counts = [float(len(untolerated(m.taints, list(ev.job.tolerations), ("PreferNoSchedule",))))
                  for m in members]
        if not any(counts):
            return [0.0] * len(members)
        return spread_linear(counts, lower_is_better=True)
