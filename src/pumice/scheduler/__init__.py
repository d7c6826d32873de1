"""Volcano's scheduling framework: one session = snapshot, actions in order, close.

``run_session`` is the whole cycle for callers that hold wire-format objects: the one-shot
``pumice schedule``, the embedded control plane's loop and the simulator all go through it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from typing import Any

from pumice.gctune import few_collections
from pumice.scheduler.conf import ConfError, SchedulerConf, default_conf, parse_conf
from pumice.scheduler.framework import predicate_status
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import TaskStatus
from pumice.scheduler.outcome import SessionOutcome, SessionStats, session_stats, summarize
from pumice.scheduler.registry import ACTIONS, PLUGINS
from pumice.scheduler.snapshot import ClusterState, build_cluster_state

__all__ = [
    "ACTIONS",
    "PLUGINS",
    "ClusterState",
    "ConfError",
    "SchedulerConf",
    "Session",
    "SessionOutcome",
    "SessionStats",
    "build_cluster_state",
    "default_conf",
    "load_conf",
    "node_scores",
    "open_session",
    "predicate_codes",
    "run_session",
]


def load_conf(text: str, source: str = "scheduler configuration") -> SchedulerConf:
    """A configuration for the built-in actions and plugins (unknown plugins are warned about)."""
    return parse_conf(text, source=source, known_actions=ACTIONS, known_plugins=PLUGINS)


def open_session(state: ClusterState, conf: SchedulerConf, now: float | None = None) -> Session:
    """A session on ``state`` with the built-in plugins opened."""
    ssn = Session(state, conf, now)
    ssn.open(PLUGINS)
    return ssn


def run_session(
    objects: Iterable[dict[str, Any]] | ClusterState,
    conf: SchedulerConf | None = None,
    *,
    revert: bool = False,
    now: float | None = None,
    on_bind: Callable[[str, str, dict[str, str] | None], None] | None = None,
) -> SessionOutcome:
    """Run exactly one scheduling session and say what it decided.

    With ``revert`` the state is left as the store will see it once the decisions are written:
    committed binds and evictions stay, anything uncommitted is undone (for long-lived caches).
    ``on_bind(pod key, node, annotations to write first or None)`` is called as each bind is committed,
    during the session (a committed bind is
    final), so that a caller can send it at once, as Volcano dispatches binds on commit.
    """
    conf = conf or default_conf()
    if not isinstance(objects, ClusterState):
        with few_collections():
            objects = build_cluster_state(objects)
    state = objects
    # A session allocates many small, long-lived objects and frees few: the cyclic collector's
    # passes over them would be pure overhead (about a fifth of a large session).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        ssn = open_session(state, conf, now)
        ssn.on_bind = on_bind
        opened = time.perf_counter()
        actions: list[tuple[str, float]] = []
        for name in conf.actions:
            began = time.perf_counter()
            ACTIONS[name]().execute(ssn)
            actions.append((name, time.perf_counter() - began))
        ssn.close()
        outcome = summarize(ssn)
        outcome.stats = session_stats(ssn, opened - start, actions)
        outcome.stats.seconds = time.perf_counter() - start
        if revert:
            ssn.revert()
        ssn.dispose()
        return outcome
    finally:
        if gc_was_enabled:
            gc.enable()


def predicate_codes(objects: Iterable[dict[str, Any]], conf: SchedulerConf | None = None) -> dict[str, dict[str, str]]:
    """Open a session and run every enabled predicate for every pending task on every node; no action
    runs. Per task and node: ``Success`` or Volcano's status code (``framework/predicate_status.py``)."""
    conf = conf or default_conf()
    ssn = open_session(build_cluster_state(objects), conf)
    out: dict[str, dict[str, str]] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: j.uid):
        for task in sorted(job.tasks.values(), key=lambda t: t.key):
            if task.status == TaskStatus.PENDING:
                out[task.key] = dict(zip(ssn.nodes.names, predicate_status.predicate_codes(ssn, task), strict=True))
    ssn.close()
    return out


def node_scores(objects: Iterable[dict[str, Any]], conf: SchedulerConf | None = None) -> dict[str, dict[str, float]]:
    """Open a session and score every task of its jobs on every node, bound ones included (as Volcano's
    node-order functions score any task: the node a bound task runs on counts it in its usage); no
    action runs."""
    conf = conf or default_conf()
    ssn = open_session(build_cluster_state(objects), conf)
    out: dict[str, dict[str, float]] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: j.uid):
        for task in sorted(job.tasks.values(), key=lambda t: t.key):
            scores = ssn.placer.node_scores(task)
            out[task.key] = {name: float(s) for name, s in zip(ssn.nodes.names, scores, strict=True)}
    ssn.close()
    return out
