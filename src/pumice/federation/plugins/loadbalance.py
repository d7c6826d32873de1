"""loadbalance: the member left least loaded by the job scores highest (least dominant share).

The share is the largest, over the resources the job requests, of (allocated + reserved + the job's gang) /
allocatable on the member's ready nodes: 100 x (1 - share).
"""

from __future__ import annotations

import numpy as np

from ..view import Evaluation, MemberView
from .base import ClusterPlugin, register


@register
class LoadBalancePlugin(ClusterPlugin):
    name = "loadbalance"
    has_score = True

    def score(self, ev: Evaluation, members: list[MemberView]) -> list[float]:
        out = []
        for m in members:
            vec = m.capacity.vector(ev.job.gang_total)
            alloc, held = m.totals()
            if vec is None or not alloc.any():
                out.append(0.0)
                continue
            dims = (vec > 0) & (alloc > 0) if vec.any() else alloc > 0
            share = float(((held[dims] + vec[dims]) / alloc[dims]).max()) if dims.any() else 0.0
            out.append(100.0 * max(0.0, 1.0 - float(np.clip(share, 0.0, 1.0))))
        return out
