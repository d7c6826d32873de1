"""Node rows as predicates and scorers see them: real ones, or hypothetical ones."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pumice.scheduler.model import NodeTable


@dataclass(slots=True)
class NodeView:
    """Columns (resources x k) for node indices ``idx`` (a node may appear several times).

    Gathered with ``take``, so that every array is C-ordered like the node table's: ``table[:, idx]``
    gives a Fortran-ordered copy, and the scorers' ufuncs then mix layouts (a third slower)."""

    idx: np.ndarray
    allocatable: np.ndarray
    idle: np.ndarray
    used: np.ndarray
    future_idle: np.ndarray
    nonzero_used: np.ndarray
    task_count: np.ndarray
    max_tasks: np.ndarray

    @classmethod
    def of(cls, nodes: NodeTable, idx: np.ndarray | None = None) -> NodeView:
        if idx is None:
            return cls(
                np.arange(len(nodes)), nodes.allocatable, nodes.idle, nodes.used, nodes.future_idle(),
                nodes.nonzero_used, nodes.task_count, nodes.max_tasks,
            )
        alloc = nodes.allocatable.take(idx, axis=1)
        rows = nodes.placed_rows(idx)  # used, non-zero used and task count in one gather
        r = len(alloc)
        used = rows[:r]
        idle = alloc - used
        future = (idle + nodes.releasing.take(idx, axis=1) - nodes.pipelined.take(idx, axis=1)
                  if nodes.pipelined_tasks or nodes.releasing_tasks else idle)
        return cls(idx, alloc, idle, used, future, rows[r : r + 2], rows[r + 2], nodes.max_tasks[idx])

    @classmethod
    def ladder(cls, nodes: NodeTable, idx: np.ndarray, row: np.ndarray, depth: int, start: int = 0) -> NodeView:
        """Rows of nodes ``idx`` after start..start+depth-1 more replicas each (a replica adding ``row``
        to the node's placed rows: ``TaskInfo.row``): level-major, shape depth*len(idx)."""
        if depth < 1:
            return cls.of(nodes, idx[:0])
        levels = np.repeat(np.arange(start, start + depth, dtype=float), len(idx))
        # the nodes' columns gathered once, then repeated level after level
        tiled = np.concatenate((idx,) * depth)
        alloc = np.concatenate((nodes.allocatable.take(idx, axis=1),) * depth, axis=1)
        rows = np.concatenate((nodes.placed_rows(idx),) * depth, axis=1)  # used, non-zero used, task count
        rows += row[:, None] * levels
        r = len(alloc)
        used = rows[:r]
        idle = alloc - used
        future = (idle + nodes.releasing.take(tiled, axis=1) - nodes.pipelined.take(tiled, axis=1)
                  if nodes.pipelined_tasks or nodes.releasing_tasks else idle)
        return cls(tiled, alloc, idle, used, future, rows[r : r + 2], rows[r + 2],
                   np.concatenate((nodes.max_tasks[idx],) * depth))
