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


def _plain_sum(final: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The weighted fractions' sum and the overfilled nodes where every node has some of each weighted
    resource: ``(final * weights / alloc).sum(axis=0)`` (which adds the rows in order) and
    ``(final > alloc).any(axis=0)``, row by row and in place (a ladder and a refresh of changed rows call it
    twice per gang)."""
    part = final * weights
    part /= alloc
    over = final[0] > alloc[0]
    score: np.ndarray = part[0].copy()
    for d in range(1, len(part)):
        np.logical_or(over, final[d] > alloc[d], out=over)
        score += part[d]
    return score, over


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
        self.held_by_all = ssn.nodes.held_by_all
        #: Per shape: (requested resources with a weight, their weights as a column, the request
        #: as a column, the weights' sum, whether no node or weight is zero for them: the usual case).
        self.shapes: dict[Shape, tuple[list[int] | slice, np.ndarray, np.ndarray, float, bool]] = {}
        ssn.add(NODE_ORDER, self.name, self)

    def static_score(self, task: TaskInfo) -> np.ndarray | None:
        return None

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        got = self.shapes.get(task.shape)
        if got is None:
            asked = [d for d in self.weights if task.resreq[d] > 0]
            weights = np.array([self.weights[d] for d in asked], dtype=float)[:, None]
            plain = all(self.held_by_all[d] and self.weights[d] != 0 for d in asked)
            rows: list[int] | slice = slice(0, 2) if asked == [0, 1] else asked  # a slice reads without a copy
            got = self.shapes[task.shape] = (rows, weights, task.resreq[asked, None], float(weights.sum()), plain)
        dims, weights, req, weight_sum, plain = got
        if not len(req):
            return np.zeros(len(view.idx))
        alloc = view.allocatable[dims]
        final = view.used[dims] + req
        score: np.ndarray
        if plain:
            score, over = _plain_sum(final, alloc, weights)
        else:
            usable = (alloc != 0) & (weights != 0)
            part = np.where(usable, final * weights / np.where(alloc == 0, 1, alloc), 0.0)
            over = (usable & (final > alloc)).any(axis=0)
            score = part.sum(axis=0)
        if weight_sum > 0:
            score /= weight_sum
        score *= MAX_NODE_SCORE * self.weight
        score[over] = 0.0  # the task does not fit: 0 for the node
        return score
