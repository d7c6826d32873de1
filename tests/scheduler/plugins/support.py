"""A session with chosen plugins on a small cluster, for the plugin tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from pumice.scheduler import build_cluster_state, load_conf, open_session
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo


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
