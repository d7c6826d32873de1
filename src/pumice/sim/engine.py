"""Run a scenario: a ``Cluster`` on a virtual clock, the timeline fed in at its times, a recorder.

The loop jumps from one event to the next — a timeline entry, a pod completion, a controller
timeout, a due scheduling cycle — so simulated hours of nothing cost nothing.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pumice.clock import VirtualClock
from pumice.gctune import few_collections
from pumice.runtime import Cluster
from pumice.runtime.schedconf import live_default_conf
from pumice.scheduler import ConfError, SchedulerConf, load_conf
from pumice.store import StoreError

from .errors import ScenarioError
from .recorder import Recorder
from .scenario import Action, Scenario

__all__ = ["SimResult", "fragmentation", "run_scenario"]

#: How many evenly spaced fragmentation samples a run takes (between this and twice as many).
SAMPLES = 400
#: The store's event log in a run. Nothing in a simulation resumes a watch from an old resourceVersion (every
#: watch starts from a list, at the current one), so the log serves nobody; a long one only keeps every old
#: version of every object alive until it falls out, by then long out of the CPU's caches (about a twentieth of
#: a run's time went to freeing them).
SIM_HISTORY = 32


@dataclass
class SimResult:
    scenario: Scenario
    recorder: Recorder
    cluster: Cluster
    end: float
    wall_seconds: float
    cycles: int
    #: (t, fraction of the primary resource left unallocated in fragments)
    fragmentation: list[tuple[float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def scheduler_conf(scenario: Scenario) -> SchedulerConf:
    if scenario.conf_text is None:
        return live_default_conf()  # as pumice up / pumice run: hard topology honoured (README)
    try:
        return load_conf(scenario.conf_text, source=scenario.conf_source)
    except ConfError as err:
        raise ScenarioError(scenario.conf_source, "scheduler", str(err)) from None


def fragmentation(rec: Recorder, top: int = 64) -> float:
    """Share of the primary resource (GPU if any, else CPU) that is free but unusable.

    After FGD (Weng et al., ATC'23): over the workload's task shapes seen so far, weighted by how often
    they occur, the free capacity of every node on which that shape does not fit counts as a fragment.
    Per-node aggregates, not per device: a sharing pod's leftover on one GPU is not modelled.
    """
    cap = rec.capacity
    if cap.size == 0 or not rec.shapes:
        return 0.0
    dim = 2 if cap[:, 2].sum() > 0 else 0
    total = cap[:, dim].sum()
    if total <= 0:
        return 0.0
    common = rec.shapes.most_common(top)
    shapes = np.frombuffer(b"".join(k for k, _ in common), dtype=float).reshape(len(common), -1)
    weights = np.array([n for _, n in common], dtype=float)
    weights /= weights.sum()
    free = np.maximum(cap - rec.used, 0.0)
    room = free + 1e-6
    fits = room[:, 0, None] >= shapes[None, :, 0]  # nodes x shapes, one dimension at a time (no 3-d temporary)
    for d in range(1, shapes.shape[1]):
        fits &= room[:, d, None] >= shapes[None, :, d]
    unusable = (~fits) @ weights  # per node: the probability a task cannot use it
    return float((free[:, dim] * unusable).sum() / total)


def _act(cluster: Cluster, action: Action, errors: list[str]) -> None:
    where = action.label or action.kind
    if action.kind in ("apply", "delete"):
        for obj in action.objects:  # one refusal does not stop the others, as with kubectl
            try:
                if action.kind == "apply":
                    # handed over: nothing reads or changes a scenario's objects once they are applied (stored
                    # objects are never changed either, so a second run of the scenario may share them)
                    cluster.apply([obj], copy=False, owned=True)
                else:
                    cluster.delete([obj])
            except (StoreError, KeyError) as err:
                errors.append(f"t={action.at:g}s {where}: {err}")
        return
    try:
        if action.kind == "drain":
            cluster.kubelet.drain(action.node)
        elif action.kind == "fail":
            cluster.kubelet.fail(action.node)
        else:
            cluster.kubelet.recover(action.node)
    except StoreError as err:
        errors.append(f"t={action.at:g}s {where}: {err}")


def _gc(cluster: Cluster, rec: Recorder) -> None:
    """Delete finished plain pods, and their PodGroup once all its pods are gone (trace semantics)."""
    for uid in rec.take_finished():
        prec = rec.pods[uid]
        with contextlib.suppress(StoreError):
            cluster.store.delete("pods", prec.namespace, prec.name, copy=False)  # not looked at
        job = rec.jobs.get(prec.job)
        if job is not None and job.kind == "PodGroup" and all(rec.pods[p].end is not None for p in job.pods):
            with contextlib.suppress(StoreError):
                cluster.store.delete("podgroups.scheduling.volcano.sh", prec.namespace, job.name, copy=False)


def run_scenario(scenario: Scenario, progress: Callable[[float], None] | None = None) -> SimResult:
    """Simulate ``scenario`` until its ``until`` (or until nothing is left to happen)."""
    with few_collections():
        return _run(scenario, progress)


def _check_ends(scenario: Scenario) -> None:
    """A CronJob makes jobs for ever: a run with one needs an end (``until``)."""
    if scenario.until is not None:
        return
    for action in scenario.timeline:
        for obj in action.objects:
            if action.kind == "apply" and obj.get("kind") == "CronJob" and \
                    str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
                name = (obj.get("metadata") or {}).get("name")
                raise ScenarioError(scenario.source, "until", f"CronJob {name} makes jobs for ever: give the "
                                    "scenario an end (until: 1d, or --until)")


def _run(scenario: Scenario, progress: Callable[[float], None] | None) -> SimResult:
    _check_ends(scenario)
    conf = scheduler_conf(scenario)
    wall = time.perf_counter()
    clock = VirtualClock()
    t0 = clock.now()
    # every object of a simulation comes from a parsed manifest or from the controllers: nothing to screen
    cluster = Cluster(clock=clock, conf=conf, period=scenario.period, history=SIM_HISTORY, screen=False)
    rec = Recorder(cluster.store, clock, t0)
    errors: list[str] = []
    cluster.apply(scenario.nodes)
    timeline = deque(scenario.sorted_timeline())
    horizon = scenario.until if scenario.until is not None else max((a.at for a in timeline), default=0.0)
    every = max(horizon / SAMPLES, scenario.period) if horizon > 0 else scenario.period
    next_sample = 0.0
    frag: list[tuple[float, float]] = []
    limit = math.inf if scenario.until is None else t0 + scenario.until
    while True:
        now = clock.now()
        while timeline and t0 + timeline[0].at <= now:
            _act(cluster, timeline.popleft(), errors)
        cluster.step()
        rec.sync()
        if scenario.gc_finished and rec.finished_plain:
            _gc(cluster, rec)
            continue
        if progress is not None:
            progress(now - t0)
        candidates = [cluster.next_wakeup()]
        if timeline:
            candidates.append(t0 + timeline[0].at)
        due = [c for c in candidates if c is not None]
        nxt = min(due) if due else None
        if nxt is None or nxt > limit:
            stop, target = True, (limit if math.isfinite(limit) else now)
        else:
            stop, target = False, max(nxt, now)
        if next_sample + t0 < target or (stop and next_sample + t0 <= target):
            value = fragmentation(rec)  # the state holds still until ``target``
            while next_sample + t0 < target or (stop and next_sample + t0 <= target):
                frag.append((next_sample, value))
                next_sample += every
                if len(frag) > 2 * SAMPLES:  # a run longer than foreseen: halve the resolution
                    frag = frag[::2]
                    every *= 2
                    next_sample = frag[-1][0] + every
        if stop:
            if target > now:
                clock.advance_to(target)
                cluster.step()
                rec.sync()
            break
        clock.advance_to(target)
    cluster.flush()
    rec.sync()
    end = clock.now() - t0
    if not frag or frag[-1][0] < end:
        frag.append((end, fragmentation(rec)))
    if progress is not None:
        progress(end)
    return SimResult(scenario, rec, cluster, end, time.perf_counter() - wall, cluster.cycles, frag, errors)
