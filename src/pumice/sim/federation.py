"""Federation scenarios for ``pumice sim``: several member clusters, a federation configuration, a timeline.

A scenario with a ``clusters`` key is a federation (see docs/federation.md)::

    name: three-regions
    federation: federation.yaml      # or inline, or absent (the default configuration)
    clusters:
      east:
        labels: {topology.kubernetes.io/region: us-east}
        cost: {nvidia.com/gpu: "2.5"}
        nodes: [{count: 16, gpu: 8, labels: {nvidia.com/gpu.product: A100}}]
        hypernodes: {leaf: 4}        # tier-1 blocks of 4 nodes under one tier-2 spine; or manifests
      west: {...}
    timeline:
    - {at: 0, apply: jobs.yaml}      # Jobs and Queues go to the host
    - {at: 10m, kill: east}          # or partition / heal / remove
    until: 2h

It runs on the same code as a live federation (``sim.world.FederatedWorld``), so two configurations can be
compared offline on the same workload: where each job ran, when it started, what it cost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from pumice.federation import names
from pumice.federation.config import FederationConfig, FederationConfigError, default_config, parse_config
from pumice.federation.demand import timestamp
from pumice.federation.placement import read_placement
from pumice.federation.view import prices_of
from pumice.scheduler import ConfError, load_conf

from .errors import ScenarioError
from .scenario import _conf, _nodes, _objects, _seconds
from .world import FederatedWorld, MemberSpec, RunTracker

__all__ = ["FederationResult", "FederationScenario", "federation_summary", "load_federation", "member_spec",
           "run_federation"]

Obj = dict[str, Any]
FedActionKind = Literal["apply", "delete", "kill", "partition", "heal", "remove"]
FED_ACTIONS: tuple[FedActionKind, ...] = ("apply", "delete", "kill", "partition", "heal", "remove")
TOP_KEYS = {"name", "description", "federation", "clusters", "timeline", "until", "period"}
CLUSTER_KEYS = {"labels", "cost", "taints", "nodes", "hypernodes", "objects", "scheduler", "fence"}
JOBS = "jobs.batch.volcano.sh"


@dataclass
class FedAction:
    at: float
    kind: FedActionKind
    objects: list[Obj] = field(default_factory=list)
    cluster: str = ""
    label: str = ""


@dataclass
class FederationScenario:
    name: str
    source: str
    members: list[MemberSpec]
    config: FederationConfig
    timeline: list[FedAction] = field(default_factory=list)
    until: float | None = None
    period: float = 1.0
    description: str = ""


def _hypernodes(value: Any, nodes: list[Obj], base: Path, source: str, fld: str) -> list[Obj]:
    if value is None:
        return []
    if isinstance(value, Mapping) and set(value) <= {"leaf"} and "leaf" in value:
        leaf = value["leaf"]
        if not isinstance(leaf, int) or isinstance(leaf, bool) or leaf < 1:
            raise ScenarioError(source, f"{fld}.leaf", "must be a positive number of nodes")
        names_ = [str(n["metadata"]["name"]) for n in nodes]
        prefix = fld.split(".")[1]
        out: list[Obj] = []
        leaves = []
        for i in range(0, len(names_), leaf):
            name = f"{prefix}-leaf{i // leaf}"
            leaves.append(name)
            out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                        "spec": {"tier": 1, "tierName": "leaf", "members": [
                            {"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in names_[i:i + leaf]]}})
        out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                    "metadata": {"name": f"{prefix}-spine"},
                    "spec": {"tier": 2, "tierName": "spine", "members": [
                        {"type": "HyperNode", "selector": {"exactMatch": {"name": n}}} for n in leaves]}})
        return out
    objs = _objects(value, base, source, fld)
    for obj in objs:
        if obj.get("kind") != "HyperNode":
            raise ScenarioError(source, fld, f"expected HyperNodes or {{leaf: N}}, got a {obj.get('kind')}")
    return objs


def member_spec(name: str, spec: Any, base: Path, source: str) -> MemberSpec:
    """One entry of a `clusters` mapping (a federation scenario, or `pumice up --federation --members`)."""
    fld = f"clusters.{name}"
    if not isinstance(spec, Mapping):
        raise ScenarioError(source, fld, "expected a mapping with nodes (and labels, cost, hypernodes, ...)")
    unknown = sorted(set(spec) - CLUSTER_KEYS)
    if unknown:
        raise ScenarioError(source, f"{fld}.{unknown[0]}", f"unknown key (use {', '.join(sorted(CLUSTER_KEYS))})")
    nodes = _nodes(spec.get("nodes"), base, source, f"{fld}.nodes")
    for node in nodes:  # node names unique within the member; prefixed so members can be told apart
        node["metadata"]["labels"] = {**(node["metadata"].get("labels") or {})}
    labels = spec.get("labels") or {}
    cost = spec.get("cost") or {}
    taints = spec.get("taints") or []
    if not isinstance(labels, Mapping) or not isinstance(cost, Mapping) or not isinstance(taints, list):
        raise ScenarioError(source, fld, "labels and cost are mappings, taints a list")
    try:
        prices_of({str(k): str(v) for k, v in cost.items()})
    except Exception as err:  # pragma: no cover - prices_of skips what it cannot read
        raise ScenarioError(source, f"{fld}.cost", str(err)) from None
    conf = None
    if spec.get("scheduler") is not None:
        text, conf_source = _conf(spec["scheduler"], base, source)
        try:
            conf = load_conf(text or "", source=conf_source)
        except ConfError as err:
            raise ScenarioError(source, f"{fld}.scheduler", str(err)) from None
    fence = spec.get("fence", True)
    if not isinstance(fence, bool):
        raise ScenarioError(source, f"{fld}.fence", "expected true or false")
    return MemberSpec(name, nodes, _hypernodes(spec.get("hypernodes"), nodes, base, source, f"{fld}.hypernodes")
                      + (_objects(spec["objects"], base, source, f"{fld}.objects") if spec.get("objects") else []),
                      {str(k): str(v) for k, v in labels.items()}, {str(k): str(v) for k, v in cost.items()},
                      [dict(t) for t in taints], conf, fence)


def _config(value: Any, base: Path, source: str) -> FederationConfig:
    if value is None:
        return default_config()
    if isinstance(value, Mapping) and set(value) == {"file"}:
        value = str(value["file"])
    try:
        if isinstance(value, str):
            path = base / value
            if not path.is_file():
                raise ScenarioError(source, "federation", f"no such file: {path}")
            return parse_config(path.read_text(encoding="utf-8"), source=str(path))
        if isinstance(value, Mapping):
            return parse_config(yaml.safe_dump(dict(value), sort_keys=False), source=f"{source} (federation)")
    except FederationConfigError as err:
        raise ScenarioError(source, "federation", str(err)) from None
    raise ScenarioError(source, "federation", "expected a mapping, a file name or {file: PATH}")


def _action(entry: Any, i: int, base: Path, source: str, clusters: set[str]) -> FedAction:
    fld = f"timeline[{i}]"
    if not isinstance(entry, Mapping) or "at" not in entry:
        raise ScenarioError(source, fld, "expected a mapping like {at: 10m, apply: jobs.yaml}")
    verbs = [k for k in FED_ACTIONS if k in entry]
    unknown = sorted(set(entry) - {"at", "name", *FED_ACTIONS})
    if unknown:
        raise ScenarioError(source, f"{fld}.{unknown[0]}", f"unknown key (use at, name and one of "
                                                           f"{', '.join(FED_ACTIONS)})")
    if len(verbs) != 1:
        raise ScenarioError(source, fld, f"expected exactly one of {', '.join(FED_ACTIONS)}")
    verb = verbs[0]
    at = _seconds(entry["at"], source, f"{fld}.at")
    label = str(entry.get("name", ""))
    if verb in ("apply", "delete"):
        return FedAction(at, verb, _objects(entry[verb], base, source, f"{fld}.{verb}", loose=verb == "delete"),
                         label=label)
    target = entry[verb]
    if target not in clusters:
        raise ScenarioError(source, f"{fld}.{verb}", f"no cluster named {target!r} (clusters: "
                                                     f"{', '.join(sorted(clusters))})")
    return FedAction(at, verb, cluster=str(target), label=label)


def load_federation(path: Path, data: Mapping[str, Any]) -> FederationScenario:
    """A federation scenario from its parsed YAML (``load_scenario`` hands it over when it has ``clusters``)."""
    source = str(path)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        known = ", ".join(sorted(TOP_KEYS))
        raise ScenarioError(source, unknown[0], f"unknown key (a federation scenario has {known})")
    base = path.parent
    raw = data.get("clusters")
    if not isinstance(raw, Mapping) or not raw:
        raise ScenarioError(source, "clusters", "expected a mapping of cluster name to its description")
    members = [member_spec(str(name), spec, base, source) for name, spec in raw.items()]
    timeline = data.get("timeline") or []
    if not isinstance(timeline, list):
        raise ScenarioError(source, "timeline", "expected a list of {at: ..., apply: ...}")
    names_ = {m.name for m in members}
    return FederationScenario(
        name=str(data.get("name") or path.stem), source=source, members=members,
        config=_config(data.get("federation"), base, source),
        timeline=[_action(e, i, base, source, names_) for i, e in enumerate(timeline)],
        until=None if data.get("until") is None else _seconds(data["until"], source, "until"),
        period=_seconds(data.get("period", 1), source, "period"),
        description=str(data.get("description") or ""),
    )


@dataclass
class FederationResult:
    scenario: FederationScenario
    world: FederatedWorld
    tracker: RunTracker
    end: float
    wall_seconds: float
    errors: list[str] = field(default_factory=list)


def _act(world: FederatedWorld, action: FedAction, errors: list[str]) -> None:
    where = action.label or action.kind
    if action.kind == "apply":
        for obj in action.objects:
            try:
                world.apply([obj])
            except Exception as err:  # a refusal by the host's admission: reported, the run goes on
                errors.append(f"t={action.at:g}s {where}: {getattr(err, 'message', err)}")
    elif action.kind == "delete":
        for obj in action.objects:
            meta = obj.get("metadata") or {}
            try:
                from pumice.runtime import resource_for

                info = resource_for(obj, world.host)
                world.host.delete(info.name, (meta.get("namespace") or "default") if info.namespaced else None,
                                  str(meta.get("name")))
            except Exception as err:
                errors.append(f"t={action.at:g}s {where}: {getattr(err, 'message', err)}")
    elif action.kind == "kill":
        world.kill(action.cluster)
    elif action.kind == "partition":
        world.partition(action.cluster)
    elif action.kind == "heal":
        world.heal(action.cluster)
    elif action.kind == "remove":
        world.remove(action.cluster)


def run_federation(scenario: FederationScenario, config: FederationConfig | None = None,
                   progress: Callable[[float], None] | None = None) -> FederationResult:
    """Simulate a federation scenario (``config`` replaces the scenario's federation configuration)."""
    wall = time.perf_counter()
    world = FederatedWorld(scenario.members, config or scenario.config, period=scenario.period)
    tracker = RunTracker(world)
    world.on_step.append(tracker.sync)
    errors: list[str] = []
    t0 = world.clock.now()
    timeline = sorted(scenario.timeline, key=lambda a: a.at)
    for action in timeline:
        world.run_until(t0 + action.at)
        _act(world, action, errors)
        if progress is not None:
            progress(action.at)
    horizon = scenario.until
    if horizon is None:
        world.run_idle(limit=366 * 86400.0)
    else:
        world.run_until(t0 + horizon)
    tracker.sync()
    end = world.clock.now() - t0
    return FederationResult(scenario, world, tracker, end, time.perf_counter() - wall, errors)


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)


def federation_summary(result: FederationResult) -> dict[str, Any]:
    """Per job, per cluster and per queue numbers of a run (the ``-o json`` of ``pumice sim``)."""
    world, tracker = result.world, result.tracker
    t0 = world.clock.now() - result.end
    end_abs = world.clock.now()
    runs_by_job: dict[tuple[str, str], list[Any]] = {}
    for run in tracker.runs:
        runs_by_job.setdefault(run.job, []).append(run)
    jobs, _ = world.host.list(JOBS)
    rows = []
    for job in jobs:
        meta = job["metadata"]
        key = (str(meta.get("namespace")), str(meta["name"]))
        placement, _ = read_placement(meta.get("annotations"))
        state = (job.get("status") or {}).get("state") or {}
        phase = str(state.get("phase") or "Pending")
        submitted = timestamp(meta.get("creationTimestamp")) - t0
        runs = runs_by_job.get(key, [])
        started = min((r.start for r in runs), default=None)
        finished = timestamp(state.get("lastTransitionTime")) - t0 if phase in ("Completed", "Failed") else None
        rows.append({
            "namespace": key[0], "name": key[1], "queue": job["spec"].get("queue", "default"),
            "cluster": placement.label() or None, "phase": phase, "reason": state.get("reason") or "",
            "submitted": _r(submitted), "started": _r(None if started is None else started - t0),
            "finished": _r(finished),
            "wait": _r(None if started is None else started - t0 - submitted),
            "moves": len(placement.history),
        })
    rows.sort(key=lambda r: (r["submitted"] or 0.0, r["namespace"], r["name"]))
    clusters: dict[str, Any] = {}
    for spec in result.scenario.members:
        prices = prices_of(spec.cost)
        gpu_cap = sum(float(str(n["status"]["allocatable"].get("nvidia.com/gpu", 0))) for n in spec.nodes)
        cpu_cap = sum(float(str(n["status"]["allocatable"].get("cpu", 0)).rstrip("m")) for n in spec.nodes)
        gpu_seconds = cpu_seconds = cost = 0.0
        ran: set[tuple[str, str]] = set()
        for run in tracker.runs:
            if run.member != spec.name:
                continue
            seconds = (run.end if run.end is not None else end_abs) - run.start
            gpu_seconds += seconds * run.request.get("nvidia.com/gpu", 0.0) / 1000.0
            cpu_seconds += seconds * run.request.get("cpu", 0.0) / 1000.0
            cost += seconds / 3600.0 * sum(prices.get(k, 0.0) * v for k, v in run.request.items())
            ran.add(run.job)
        horizon = max(result.end, 1e-9)
        clusters[spec.name] = {
            "nodes": len(spec.nodes), "gpus": gpu_cap, "labels": spec.labels,
            "jobs_run": len(ran),
            "gpu_util": _r(gpu_seconds / (gpu_cap * horizon)) if gpu_cap else None,
            "cpu_util": _r(cpu_seconds / (cpu_cap * horizon)) if cpu_cap else None,
            "cost": _r(cost),
            "state": "killed" if spec.name in world.dead else ("cut off" if world.links[spec.name].cut else "up"),
        }
    queues: dict[str, Any] = {}
    for q in sorted({r["queue"] for r in rows}):
        mine = [r for r in rows if r["queue"] == q]
        waits = [r["wait"] for r in mine if r["wait"] is not None]
        queues[q] = {"jobs": len(mine), "started": len(waits),
                     "finished": sum(1 for r in mine if r["phase"] == "Completed"),
                     "mean_wait": _r(sum(waits) / len(waits)) if waits else None}
    phases: dict[str, int] = {}
    for r in rows:
        phases[r["phase"]] = phases.get(r["phase"], 0) + 1
    total = {"jobs": len(rows), "job_phases": dict(sorted(phases.items())),
             "cost": _r(sum(c["cost"] or 0.0 for c in clusters.values())),
             "moves": sum(r["moves"] for r in rows), "overlaps": len(tracker.overlaps),
             "end": _r(result.end), "wall_seconds": _r(result.wall_seconds),
             "dispatch_decisions": world.federation.dispatcher.decisions}
    if result.errors:
        total["errors"] = result.errors
    return {"jobs": rows, "clusters": clusters, "queues": queues, "federation": total,
            "labels": {"cluster": names.CLUSTER_LABEL}}
