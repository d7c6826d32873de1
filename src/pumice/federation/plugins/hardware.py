"""hardware: the member has the hardware every task asks for, whatever is free right now.

For each task of the gang: some ready node matches its node selector, required node affinity (GPU model
labels such as ``nvidia.com/gpu.product`` included) and tolerations, offers every resource it requests, and
is big enough for one of its pods. A member that fails this never fits the job, however long it waits.
"""

from __future__ import annotations

import numpy as np

from pumice.scheduler.resources import EPS

from ..demand import TaskDemand
from ..view import Evaluation, MemberView
from .base import ClusterPlugin, register


@register
class HardwarePlugin(ClusterPlugin):
    name = "hardware"
    has_filter = True

    def filter(self, ev: Evaluation, member: MemberView) -> str | None:
        for task in ev.job.tasks:
            if task.gang <= 0:
                continue
            key = (task.shape, tuple(sorted(task.request.items())))
            reason = member.hardware(key, lambda t=task: self._check(member, t))  # type: ignore[misc]
            if reason is not None:
                return reason
        return None

    @staticmethod
    def _check(member: MemberView, task: TaskDemand) -> str | None:
        cap = member.capacity
        vec = cap.vector(task.request)
        if vec is None:
            return f"no node offers {', '.join(cap.missing(task.request))} (task {task.name})"
        mask = cap.eligible(task)
        if not mask.any():
            wanted = ", ".join(f"{k}={v}" for k, v in sorted(task.node_selector.items()))
            what = f"node selector {wanted}" if wanted else "node affinity or tolerations"
            return f"no ready node matches task {task.name}'s {what}"
        big = (cap.alloc[mask] - vec > -EPS).all(axis=1) if len(vec) else np.ones(int(mask.sum()), bool)
        if not big.any():
            return f"no node is big enough for one pod of task {task.name} ({cap.space.describe(vec)})"
        return None
