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
        self._shapes: dict[tuple, tuple[list[int], np.ndarray, np.ndarray, float]] = {}

    def static(self, task: TaskInfo) -> np.ndarray | None:
        return None

    def dynamic(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        got = self._shapes.get(task.shape)
        if got is None:
            dims = [d for d in self.resource_weights if task.resreq[d] > 0]
            weights = np.array([self.resource_weights[d] for d in dims], dtype=float)[:, None]
            got = self._shapes[task.shape] = (dims, weights, task.resreq[dims, None], float(weights.sum()))
        dims, weights, req, weight_sum = got
        if not dims:
            return np.zeros(len(view.idx))
        alloc = view.allocatable[dims]
        final = view.used[dims] + req
        usable = (alloc != 0) & (weights != 0)
        if usable.all():  # the usual case: no zero allocatable or weight to leave out
            part = final * weights / alloc
        else:
            part = np.where(usable, final * weights / np.where(alloc == 0, 1, alloc), 0.0)
        score = part.sum(axis=0)
        if weight_sum > 0:
            score /= weight_sum
        score *= MAX_NODE_SCORE * self.weight
        score[(usable & (final > alloc)).any(axis=0)] = 0.0  # the task does not fit: 0 for the node
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
