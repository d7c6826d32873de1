"""tdm: time-division multiplexing of revocable nodes (Volcano's tdm plugin).

Nodes labelled ``volcano.sh/revocable-zone: <zone>`` are lent to preemptable work while their
zone's time window is open: ``tdm.revocable-zone.<zone>: "HH:MM-HH:MM"`` (local time; an end at or
before the start ends the next day, a window measured from today's start as Volcano does).

* predicate: a revocable node takes only pods annotated ``volcano.sh/revocable-zone: "*"``, and only
  while its zone is open; score: 100 on such a node for such a pod;
* preemptable: a non-preemptable pod without a revocable zone may evict preemptable Running pods on
  ordinary nodes, within each job's disruption budget (``volcano.sh/jdb-min-available`` /
  ``volcano.sh/jdb-max-unavailable`` on the PodGroup; one pod per job without one);
* victim tasks (for ``shuffle``): when a zone is closed, its preemptable Running pods, within the
  budgets, at most once per ``tdm.evict.period`` (default 1m);
* job order: non-preemptable jobs first; pipelined: as the gang counts it; starving: a
  non-preemptable job with Pending pods.

The clock is the session's (``Session.now``: virtual in the simulator, given in tests); when victims
were last chosen is kept on the cluster state across sessions.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import (
    JOB_ORDER,
    JOB_PIPELINED,
    JOB_STARVING,
    NODE_ORDER,
    PERMIT,
    PREDICATE,
    PREEMPTABLE,
    REJECT,
    VICTIM_TASKS,
)
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import JobInfo, TaskInfo, TaskStatus
from pumice.scheduler.plugins.sla import parse_duration

ZONE_LABEL = "volcano.sh/revocable-zone"
ZONE_PREFIX = "tdm.revocable-zone."
EVICT_PERIOD = "tdm.evict.period"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
MAX_NODE_SCORE = 100.0
DEFAULT_EVICT_PERIOD = 60.0
_CLOCK = re.compile(r"^([0-9]{1,2}):([0-9]{2})$")


def _clock(text: str) -> tuple[int, int]:
    """Go's ``time.Parse("15:04", text)``: hour of one or two digits, minute of two."""
    m = _CLOCK.match(text)
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise ValueError(f"parsing time {text!r} as \"15:04\"")
    return int(m.group(1)), int(m.group(2))


def window(raw: str, now: float) -> tuple[float, float]:
    """(start, end) of a zone's window as Volcano computes it at ``now``: today's start, and the
    end today, or tomorrow when it is not after the start (local time)."""
    parts = raw.strip().split("-")
    if len(parts) != 2:
        raise ValueError(f"revocable zone {raw} format error")
    (h1, m1), (h2, m2) = _clock(parts[0]), _clock(parts[1])
    today = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today.replace(hour=h1, minute=m1)
    end = today.replace(hour=h2, minute=m2)
    if (h1, m1) >= (h2, m2):
        end = (today + timedelta(days=1)).replace(hour=h2, minute=m2)
    return start.timestamp(), end.timestamp()


def task_zone(task: TaskInfo) -> str:
    """A pod's revocable zone: ``*`` when annotated so (any other value counts as none)."""
    value = ((task.pod.get("metadata") or {}).get("annotations") or {}).get(ZONE_LABEL)
    return "*" if value == "*" else ""


def _int_or_percent(value: str, total: int) -> int:
    """``intstr.Parse`` then ``GetValueFromIntOrPercent(roundUp=true)``; 0 when unreadable."""
    try:
        return int(value)
    except ValueError:
        pass
    if value.endswith("%"):
        try:
            return math.ceil(int(value[:-1]) * total / 100)
        except ValueError:
            return 0
    return 0


def max_evictions(job: JobInfo) -> int:
    """How many more of ``job``'s pods may go (Volcano ``getMaxPodEvictNum``)."""
    running = job.count(TaskStatus.RUNNING)
    total = len(job.tasks)
    ann = (job.pod_group.get("metadata") or {}).get("annotations") or {}
    if JDB_MIN_AVAILABLE in ann:
        min_available = _int_or_percent(str(ann[JDB_MIN_AVAILABLE]), total)
        return running - min_available if running >= min_available else 1
    if JDB_MAX_UNAVAILABLE in ann:
        max_unavailable = _int_or_percent(str(ann[JDB_MAX_UNAVAILABLE]), total)
        finished = job.count(TaskStatus.SUCCEEDED | TaskStatus.FAILED)
        unavailable = total - finished - running
        return 0 if unavailable >= max_unavailable else max_unavailable - unavailable
    return 1


class TdmPlugin(Plugin):
    name = "tdm"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        #: zone -> its window text
        self.zones: dict[str, str] = {}
        for key in arguments:
            if ZONE_PREFIX in key:
                value = arguments.get_string(key, "")
                self.zones[key.replace(ZONE_PREFIX, "", 1)] = value
        period = arguments.get_string(EVICT_PERIOD, "")
        parsed = parse_duration(period) if period else None
        if period and parsed is None:
            arguments.warn(EVICT_PERIOD, f"{period!r} is not a duration; using 1m")
        self.evict_period = DEFAULT_EVICT_PERIOD if parsed is None else parsed

    def zone_error(self, zone: str, now: float) -> str | None:
        """Why ``zone`` is closed at ``now``, or None when it is open."""
        raw = self.zones.get(zone)
        if raw is None:
            return f"revocable zone {zone} not support"
        try:
            start, end = window(raw, now)
        except ValueError as exc:
            return str(exc)
        if int(now) < int(start) or int(now) > int(end):
            return f"current time beyond revocable zone {zone}:{raw}"
        return None

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        nodes = ssn.nodes
        self.node_zone = np.array([lb.get(ZONE_LABEL, "") for lb in nodes.labels], dtype=object)
        self.revocable = self.node_zone != ""
        zones = sorted(set(self.node_zone[self.revocable].tolist()) | set(self.zones))
        #: zone -> why it is closed now ("" when open)
        self.closed = {z: self.zone_error(z, ssn.now) or "" for z in zones}
        open_zones = [z for z, why in self.closed.items() if not why]
        self.open_revocable = self.revocable & np.isin(self.node_zone, open_zones)
        ssn.add(PREDICATE, self.name, self)
        ssn.add(NODE_ORDER, self.name, self)
        ssn.add(PREEMPTABLE, self.name, self.preemptable)
        ssn.add(VICTIM_TASKS, self.name, self.victim_tasks)
        ssn.add(JOB_ORDER, self.name, self.job_order)
        ssn.add(JOB_PIPELINED, self.name, self.job_pipelined)
        ssn.add(JOB_STARVING, self.name, self.job_starving)

    def placement_inputs(self) -> object:
        """Which zones are open (the static masks and scores depend on it)."""
        return tuple(sorted(self.closed.items()))

    # --- predicate and score ------------------------------------------------------------------
    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        if not self.revocable.any():
            return []
        checks = []
        for zone, why in self.closed.items():
            if why:
                checks.append((why, self.node_zone != zone))
        if not task_zone(task):
            checks.append(("not allow to dispatch to revocable node", ~self.open_revocable))
        return checks

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        return []

    def replica_safe(self, task: TaskInfo) -> bool:
        return True

    def static_score(self, task: TaskInfo) -> np.ndarray | None:
        if not task_zone(task) or not self.open_revocable.any():
            return None
        return np.where(self.open_revocable, MAX_NODE_SCORE, 0.0)

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        return None

    # --- victims --------------------------------------------------------------------------------
    def _by_budget(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Per job, the first tasks its disruption budget lets go."""
        per_job: dict[str, list[TaskInfo]] = {}
        for t in tasks:
            if t.job is not None:
                per_job.setdefault(t.job.uid, []).append(t)
        victims: list[TaskInfo] = []
        for uid, group in per_job.items():
            job = self.ssn.jobs.get(uid)
            if job is not None:
                victims.extend(group[: max(0, min(max_evictions(job), len(group)))])
        return victims

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Preemptable, revocable-zone pods never preempt; others take preemptable Running pods
        off ordinary nodes, within budgets."""
        if preemptor.preemptable or task_zone(preemptor):
            return [], REJECT
        candidates = [t for t in preemptees
                      if t.preemptable and t.status == TaskStatus.RUNNING and t.node >= 0
                      and not self.revocable[t.node]]
        return self._by_budget(candidates), PERMIT

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Preemptable Running pods on the nodes of closed zones, at most once per evict period."""
        state = self.ssn.state
        last = state.evicted_at.get(self.name)
        now = self.ssn.now
        if last is not None and last + self.evict_period > now:
            return []
        victims: list[TaskInfo] = []
        for zone in self.zones:
            if not self.closed.get(zone):
                continue
            candidates = [t for j in np.flatnonzero(self.node_zone == zone).tolist()
                          for t in self.ssn.nodes.tasks[j].values()
                          if t.preemptable and t.status == TaskStatus.RUNNING]
            victims.extend(self._by_budget(candidates))
        state.evicted_at[self.name] = now
        return victims

    # --- jobs -------------------------------------------------------------------------------------
    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        if left.preemptable == right.preemptable:
            return 0
        return 1 if left.preemptable else -1

    def job_pipelined(self, job: JobInfo) -> int:
        return PERMIT if job.is_pipelined() else REJECT

    def job_starving(self, job: JobInfo) -> bool:
        return not job.preemptable and job.count(TaskStatus.PENDING) > 0
