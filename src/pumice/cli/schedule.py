"""``pumice schedule``: one scheduling session on the objects of a file, decisions printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pumice.api import ManifestError
from pumice.api.io import load_dicts
from pumice.api.reader import read_text_file
from pumice.controllers.expand import expand_jobs
from pumice.scheduler import ConfError, SchedulerConf, SessionOutcome, default_conf, load_conf, node_scores, run_session
from pumice.topology_discovery import DiscoveryConfigError, load_discovery_config, with_discovered_hypernodes


class UsageError(Exception):
    """Bad input named in one line; the command exits 2."""


def read_objects(paths: list[Path]) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file")
        if path.is_dir():
            raise UsageError(f"{path}: is a directory, expected a manifest file")
        try:
            objects.extend(load_dicts(path))
        except ManifestError as err:
            raise UsageError(str(err)) from None
    return objects


def read_conf(path: Path | None) -> SchedulerConf:
    if path is None:
        return default_conf()
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        return load_conf(read_text_file(path), source=str(path))
    except ConfError as err:
        raise UsageError(str(err)) from None
    except (OSError, ValueError) as err:  # too large, not UTF-8, unreadable
        raise UsageError(f"{path}: {err}") from None


def render_json(outcome: SessionOutcome, scores: dict[str, dict[str, float]] | None) -> str:
    data = outcome.to_json()
    if scores is not None:
        data["node_scores"] = scores
    return json.dumps(data, indent=2, sort_keys=False)


def render_table(console: Console, outcome: SessionOutcome, scores: dict[str, dict[str, float]] | None) -> None:
    if outcome.binds:
        t = Table(title=f"Binds ({len(outcome.binds)})", title_justify="left")
        t.add_column("POD")
        t.add_column("NODE")
        for pod, node in outcome.binds.items():
            t.add_row(pod, node)
        console.print(t)
    else:
        console.print("No pod was bound in this session.")
    if outcome.evictions:
        t = Table(title=f"Evictions ({len(outcome.evictions)})", title_justify="left")
        t.add_column("POD")
        for pod in outcome.evictions:
            t.add_row(pod)
        console.print(t)
    if outcome.pipelined:
        t = Table(title="Pipelined (waiting for resources being released)", title_justify="left")
        t.add_column("POD")
        t.add_column("NODE")
        for pod, node in outcome.pipelined.items():
            t.add_row(pod, node)
        console.print(t)
    t = Table(title="Jobs (PodGroups)", title_justify="left")
    with_hypernodes = any(job.hypernode for job in outcome.jobs)
    cols = ("JOB", "QUEUE", "PHASE", "READY/MIN", *(("HYPERNODE",) if with_hypernodes else ()), "PENDING BECAUSE")
    for col in cols:
        t.add_column(col, overflow="fold")
    for job in outcome.jobs:
        hypernode = (job.hypernode or "-",) if with_hypernodes else ()
        t.add_row(job.key, job.queue, job.phase, f"{job.ready}/{job.min_available}", *hypernode, job.reason or "-")
    console.print(t)
    if outcome.orphan_pods:
        console.print(f"[yellow]{len(outcome.orphan_pods)} pending pod(s) name no PodGroup and were not "
                      f"considered (Volcano schedules pods through their PodGroup): "
                      f"{', '.join(outcome.orphan_pods[:5])}{' ...' if len(outcome.orphan_pods) > 5 else ''}")
    if scores:
        t = Table(title="Node scores after session open", title_justify="left")
        t.add_column("POD")
        nodes = sorted({n for s in scores.values() for n in s})
        for n in nodes:
            t.add_column(n, justify="right")
        for pod, per_node in scores.items():
            t.add_row(pod, *(f"{per_node.get(n, 0):g}" for n in nodes))
        console.print(t)


def discover(objects: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """``--discover-topology``: HyperNodes from the Nodes' labels (Volcano's label discoverer)."""
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        return with_discovered_hypernodes(objects, load_discovery_config(path))
    except DiscoveryConfigError as err:
        raise UsageError(str(err)) from None


def run(files: list[Path], config: Path | None, output: str, show_scores: bool, console: Console,
        discover_topology: Path | None = None) -> str | None:
    """Returns the JSON text for ``-o json``; prints tables otherwise."""
    if output not in ("json", "table"):
        raise UsageError(f"--output: unknown format {output!r} (use json or table)")
    objects, expanded = expand_jobs(read_objects(files))
    if discover_topology is not None:
        objects = discover(objects, discover_topology)
    conf = read_conf(config)
    scores = node_scores(objects, conf) if show_scores else None
    outcome = run_session(objects, conf)
    if output == "json":
        return render_json(outcome, scores)
    if expanded:
        console.print(f"VolcanoJob(s) {', '.join(expanded)} expanded into their PodGroup and pods, "
                      "as the job controller creates them once the PodGroup is admitted.")
    render_table(console, outcome, scores)
    return None
