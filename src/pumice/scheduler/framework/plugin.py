"""What a plugin and an action are, and the registries that name them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session
    from pumice.scheduler.framework.view import NodeView
    from pumice.scheduler.model import TaskInfo


class Plugin:
    """A scheduling policy: on session open it registers callbacks at extension points."""

    name: ClassVar[str] = ""

    def __init__(self, arguments: dict[str, Any]) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None


class Action:
    """One step of a scheduling cycle (enqueue, allocate, ...), run in configured order."""

    name: ClassVar[str] = ""

    def execute(self, ssn: Session) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class NodeFilter(Protocol):
    """A predicate, columnar: it answers for many nodes at once.

    ``static`` depends only on the task's shape and the nodes' fixed attributes (labels, taints),
    so the framework caches it per shape for the session. ``dynamic`` depends on node usage; it
    is evaluated on a :class:`NodeView`, possibly a hypothetical one (rows after *m* more replicas).
    """

    def static(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        """(reason, passing mask over all nodes) checks, in evaluation order."""
        ...

    def dynamic(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        """(reason, passing mask over the view) checks, in evaluation order."""
        ...

    def replica_safe(self, task: TaskInfo) -> bool:
        """True if the dynamic answer for a node depends only on that node's usage rows
        (not, e.g., on where other pods are: inter-pod affinity)."""
        ...


class NodeScorer(Protocol):
    """A node-order function (NodeOrderFn), columnar, split like :class:`NodeFilter`."""

    def static(self, task: TaskInfo) -> np.ndarray | None: ...

    def dynamic(self, task: TaskInfo, view: NodeView) -> np.ndarray | None: ...


#: BatchNodeOrderFn: scores normalized over the candidate nodes ``idx``; None when the plugin has
#: nothing to say for this task (a constant would not change the choice).
BatchScorer = Callable[["TaskInfo", np.ndarray], "np.ndarray | None"]

PLUGINS: dict[str, type[Plugin]] = {}
ACTIONS: dict[str, type[Action]] = {}


def register_plugin(cls: type[Plugin]) -> type[Plugin]:
    PLUGINS[cls.name] = cls
    return cls


def register_action(cls: type[Action]) -> type[Action]:
    ACTIONS[cls.name] = cls
    return cls
