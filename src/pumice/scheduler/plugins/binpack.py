"""binpack: prefer nodes that the task would fill the most (Volcano's binpack score)."""

from __future__ import annotations

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import NODE_ORDER
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import Shape, TaskInfo
from pumice.scheduler.resources import CPU, MEMORY

MAX_NODE_SCORE = 100.0
RESOURCES = "binpack.resources"


def _weight(arguments: Arguments, key: str) -> int:
    """A resource weight: 1 unless set; a negative one counts as 1 (as in Volcano)."""
    weight = arguments.get_int(key, 1)
    if weight < 0:
        arguments.warn(key, f"{weight} is negative; using 1")
        weight = 1
    return weight


class BinpackPlugin(Plugin):
    name = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        #: ``binpack.weight``: the score's factor (0: the plugin scores nothing).
        self.weight = arguments.get_int("binpack.weight", 1)
        #: Per resource name, its weight in the score (cpu and memory first: scores add in this order).
        self.resource_weights = {CPU: _weight(arguments, "binpack.cpu"), MEMORY: _weight(arguments, "binpack.memory")}
        for name in (n.strip() for n in arguments.get_string(RESOURCES, "").split(",")):
            if name and name not in (CPU, MEMORY):  # binpack.cpu / binpack.memory win, as in Volcano
                self.resource_weights[name] = _weight(arguments, f"{RESOURCES}.{name}")

    def on_session_open(self, ssn: Session) -> None:
        if self.weight == 0:
            return
        #: resource row -> weight, for the resources the cluster has.
        self.weights = {ssn.space.index[n]: w for n, w in self.resource_weights.items() if n in ssn.space.index}
        #: Per shape: (requested resources with a weight, their weights as a column, the request
        #: as a column, the weights' sum).
        self.shapes: dict[Shape, tuple[list[int], np.ndarray, np.ndarray, float]] = {}
        ssn.add(NODE_ORDER, self.name, self)

    def static_score(self, task: TaskInfo) -> np.ndarray | None:
        return None

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        got = self.shapes.get(task.shape)
        if got is None:
            dims = [d for d in self.weights if task.resreq[d] > 0]
            weights = np.array([self.weights[d] for d in dims], dtype=float)[:, None]
            got = self.shapes[task.shape] = (dims, weights, task.resreq[dims, None], float(weights.sum()))
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
        score: np.ndarray = part.sum(axis=0)
        if weight_sum > 0:
            score /= weight_sum
        score *= MAX_NODE_SCORE * self.weight
        score[(usable & (final > alloc)).any(axis=0)] = 0.0  # the task does not fit: 0 for the node
        return score
