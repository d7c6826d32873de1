"""A session with chosen plugins on a small cluster, for the plugin tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import yaml
from hypothesis import strategies as st

from pumice.scheduler import build_cluster_state, load_conf, open_session
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo
from tests.builders import node, pod, podgroup
from tests.builders import queue as make_queue


def busy_and_idle() -> list[dict[str, Any]]:
    """Two nodes of 4 CPUs and 4Gi: ``busy`` runs a pod of half of each (``g-0``), ``idle`` nothing; the
    pod ``g-1`` (1 CPU, 1Gi) waits."""
    return [node("busy", cpu="4", memory="4Gi"), node("idle", cpu="4", memory="4Gi"), make_queue("default"),
            podgroup("g", queue="default", phase="Running"),
            pod("g-0", group="g", cpu="2", memory="2Gi", node="busy", phase="Running"),
            pod("g-1", group="g", cpu="1", memory="1Gi")]


def conf_text(*plugins: str | dict[str, Any], actions: str = "enqueue, allocate") -> str:
    """One tier of ``plugins`` (a name, or a mapping with ``name``, flags and ``arguments``)."""
    tier = [{"name": p} if isinstance(p, str) else p for p in plugins]
    return yaml.safe_dump({"actions": actions, "tiers": [{"plugins": tier}]}, sort_keys=False)


def session(objects: Iterable[dict[str, Any]], *plugins: str | dict[str, Any], actions: str = "enqueue, allocate",
            now: float | None = None) -> Session:
    """An opened session with ``plugins`` on ``objects``."""
    return open_session(build_cluster_state(list(objects)), load_conf(conf_text(*plugins, actions=actions)), now)


def job(ssn: Session, name: str, namespace: str = "default") -> JobInfo:
    return ssn.jobs[f"{namespace}/{name}"]


def task(ssn: Session, name: str, namespace: str = "default") -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.key == f"{namespace}/{name}")


def queue(ssn: Session, name: str) -> QueueInfo:
    return ssn.queues[name]


def random_view(data: st.DataObject, rows: int, k: int, top: int, fractional: bool) -> NodeView:
    """``k`` hypothetical node columns of ``rows`` resources: allocatable whole numbers in 1..top, used
    (and cpu/memory non-zero used) up to twice that, whole or not — every node holding every resource, as
    the usual cluster's score paths assume, over-committed nodes included."""
    values = st.floats(0, 2 * top, allow_nan=False) if fractional else st.integers(0, 2 * top).map(float)

    def matrix(n: int, cells: st.SearchStrategy[float]) -> np.ndarray:
        return np.array(data.draw(st.lists(st.lists(cells, min_size=k, max_size=k), min_size=n, max_size=n)))

    alloc = matrix(rows, st.integers(1, top).map(float))
    used = matrix(rows, values)
    return NodeView(np.arange(k), alloc, alloc - used, used, alloc - used, matrix(2, values), np.zeros(k),
                    np.full(k, 110.0))
