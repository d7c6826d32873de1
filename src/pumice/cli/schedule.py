"""``pumice schedule``: one scheduling session on the objects of a file, decisions printed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pumice.admission.pods import default_pod
from pumice.api import ManifestError
from pumice.api.io import load_dicts
from pumice.api.reader import read_text_file
from pumice.api.registry import GenericObject, model_for, versions_of
from pumice.cli.tables import print_table
from pumice.controllers.expand import expand_jobs
from pumice.controllers.queue import DEFAULT_QUEUES
from pumice.runtime.schedconf import live_default_conf
from pumice.scheduler import (
    ConfError,
    SchedulerConf,
    SessionOutcome,
    load_conf,
    node_scores,
    predicate_codes,
    run_session,
)
from pumice.scheduler.snapshot import CATALOG_KINDS
from pumice.topology_discovery import DiscoveryConfigError, load_discovery_config, with_discovered_hypernodes

if TYPE_CHECKING:
    from rich.console import Console


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
            read = load_dicts(path)
        except ManifestError as err:
            raise UsageError(str(err)) from None
        known: set[tuple[str, str]] = set()  # (apiVersion, kind) pairs checked (read objects name both)
        for obj in read:
            pair = (obj["apiVersion"], obj["kind"])
            if pair not in known:
                _check_version(path, obj)
                known.add(pair)
            if pair == ("v1", "Pod"):  # what kube-apiserver does to a pod on create: requests defaulted from limits
                default_pod(obj)
        objects.extend(read)
    return objects


def _check_version(path: Path, obj: dict[str, Any]) -> None:
    """A kind the scheduler reads, in a version pumice does not know (``apiVersion: v2`` on a Pod), is refused
    as kubectl refuses it ("no matches for kind"): read as the kind, its fields were never checked."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind not in CATALOG_KINDS or model_for(str(api_version), str(kind)) is not GenericObject:
        return
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
    known = " or ".join(versions_of(str(kind)))
    raise UsageError(f"{path}: {kind} {name}: apiVersion: {api_version!r} is not a version of {kind} "
                     f"pumice reads (use {known})")


def with_default_queues(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A file that declares no Queue gets ``root`` and ``default``, as every Volcano cluster has them
    (the scheduler creates them at start). A file with Queues of its own is taken as the complete list,
    as Volcano's unit tests (``../shared/cases``) are written."""
    if any(o.get("kind") == "Queue" for o in objects):
        return objects
    return [*objects, *(copy.deepcopy(q) for q in DEFAULT_QUEUES)]


def read_conf(path: Path | None) -> SchedulerConf:
    if path is None:
        # pumice's live default (Volcano's + network-topology-aware, as pumice up and pumice run):
        # without the plugin Volcano places a hard-topology gang across the whole cluster
        return live_default_conf()
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        return load_conf(read_text_file(path), source=str(path))
    except ConfError as err:
        raise UsageError(str(err)) from None
    except (OSError, ValueError) as err:  # too large, not UTF-8, unreadable
        raise UsageError(f"{path}: {err}") from None


def render_json(outcome: SessionOutcome, scores: dict[str, dict[str, float]] | None,
                predicates: dict[str, dict[str, str]] | None = None) -> str:
    data = outcome.to_json()
    if scores is not None:
        data["node_scores"] = scores
    if predicates is not None:
        data["predicates"] = predicates
    return json.dumps(data, indent=2, sort_keys=False)


class Messages:
    """Rich-markup lines for people, printed through ``console``, or a Console made at the first one (Rich's
    import is 20 ms of a dry run, and most runs print no message)."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console

    def print(self, text: str) -> None:
        if self._console is None:
            from rich.console import Console

            self._console = Console()
        self._console.print(text)


def render_table(messages: Messages, outcome: SessionOutcome, scores: dict[str, dict[str, float]] | None,
                 predicates: dict[str, dict[str, str]] | None = None) -> None:
    """The decisions as kubectl-like tables, each under its title (lines for people go to ``messages``)."""
    if outcome.binds:
        print_table(["POD", "NODE"], list(outcome.binds.items()), title=f"Binds ({len(outcome.binds)})")
    else:
        messages.print("No pod was bound in this session.")
    if outcome.evictions:
        print_table(["POD"], [[pod] for pod in outcome.evictions], title=f"Evictions ({len(outcome.evictions)})")
    if outcome.pipelined:
        print_table(["POD", "NODE"], list(outcome.pipelined.items()),
                    title="Pipelined (waiting for resources being released)")
    with_hypernodes = any(job.hypernode for job in outcome.jobs)
    cols = ["JOB", "QUEUE", "PHASE", "READY/MIN", *(["HYPERNODE"] if with_hypernodes else []), "PENDING BECAUSE"]
    print_table(cols, [[job.key, job.queue, job.phase, f"{job.ready}/{job.min_available}",
                        *([job.hypernode or "-"] if with_hypernodes else []), job.reason or "-"]
                       for job in outcome.jobs], title="Jobs (PodGroups)")
    if outcome.orphan_pods:
        messages.print(f"[yellow]{len(outcome.orphan_pods)} pending pod(s) name no PodGroup and were not "
                       f"considered (Volcano schedules pods through their PodGroup): "
                       f"{', '.join(outcome.orphan_pods[:5])}{' ...' if len(outcome.orphan_pods) > 5 else ''}")
    if scores:
        nodes = sorted({n for s in scores.values() for n in s})
        print_table(["POD", *nodes], [[pod, *(f"{per_node.get(n, 0):g}" for n in nodes)]
                                      for pod, per_node in scores.items()],
                    title="Node scores after session open")
    if predicates:
        print_table(["POD", "NODE", "STATUS"], [[pod, n, code] for pod, codes in predicates.items()
                                                for n, code in codes.items()],
                    title="Predicates after session open (Volcano status codes)")


def discover(objects: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """``--discover-topology``: HyperNodes from the Nodes' labels (Volcano's label discoverer)."""
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        return with_discovered_hypernodes(objects, load_discovery_config(path))
    except DiscoveryConfigError as err:
        raise UsageError(str(err)) from None


def run(files: list[Path], config: Path | None, output: str, show_scores: bool, console: Console | None,
        discover_topology: Path | None = None, show_predicates: bool = False) -> str | None:
    """Returns the JSON text for ``-o json``; prints tables otherwise."""
    if output not in ("json", "table"):
        raise UsageError(f"--output: unknown format {output!r} (use json or table)")
    objects, expanded = expand_jobs(read_objects(files))
    objects = with_default_queues(objects)
    if discover_topology is not None:
        objects = discover(objects, discover_topology)
    conf = read_conf(config)
    scores = node_scores(objects, conf) if show_scores else None
    predicates = predicate_codes(objects, conf) if show_predicates else None
    outcome = run_session(objects, conf)
    if output == "json":
        return render_json(outcome, scores, predicates)
    messages = Messages(console)
    if expanded:
        messages.print(f"VolcanoJob(s) {', '.join(expanded)} expanded into their PodGroup and pods, "
                       "as the job controller creates them once the PodGroup is admitted.")
    render_table(messages, outcome, scores, predicates)
    return None
