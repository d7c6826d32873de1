"""binpack: prefer nodes that the task would fill the most (Volcano's binpack score)."""

from __future__ import annotations

import numpy as np

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import TaskInfo

MAX_NODE_SCORE = 100.0


def _int_arg(args: dict, key: str, default: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    return int(value)


class BinpackScorer:
    def __init__(self, weight: int, resource_weights: dict[int, int]) -> None:
        self.weight = weight
        self.resource_weights = resource_weights  # resource column -> weight

    def static(self, task: TaskInfo) -> np.ndarray | None:
        return None

    def dynamic(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        k = len(view.idx)
        score = np.zeros(k)
        weight_sum = 0
        failed = np.zeros(k, dtype=bool)
        for d, w in self.resource_weights.items():
            req = task.resreq[d]
            if req <= 0:
                continue
            alloc = view.allocatable[d]
            final = view.used[d] + req
            usable = (alloc != 0) & (w != 0)
            failed |= usable & (final > alloc)
            with np.errstate(divide="ignore", invalid="ignore"):
                part = np.where(usable, final * w / np.where(alloc == 0, 1, alloc), 0.0)
            score += part
            weight_sum += w
        if weight_sum > 0:
            score /= weight_sum
        score *= MAX_NODE_SCORE * self.weight
        score[failed] = 0.0
        return score


@register_plugin
class BinpackPlugin(Plugin):
    name = "binpack"

    def on_session_open(self, ssn: Session) -> None:
        args = self.arguments
        weight = _int_arg(args, "binpack.weight", 1)
        if weight == 0:
            return
        names = {"cpu": _int_arg(args, "binpack.cpu", 1), "memory": _int_arg(args, "binpack.memory", 1)}
        extra = args.get("binpack.resources") or ""
        for name in (n.strip() for n in str(extra).split(",")):
            if name:
                names[name] = _int_arg(args, f"binpack.resources.{name}", 1)
        weights = {ssn.space.index[n]: max(w, 0) for n, w in names.items() if n in ssn.space.index}
        ssn.add("node_order", self.name, BinpackScorer(weight, weights))
