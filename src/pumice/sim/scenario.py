"""Scenarios: a cluster, a scheduler configuration and a timeline, read from YAML or a directory.

The format is for people (see ``docs/sim.md``); Volcano manifests sit inside it unchanged,
inline or as files next to the scenario. Every mistake is one :class:`ScenarioError` line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from pumice.api import ManifestError, load_file, load_text
from pumice.api.reader import InputError, load_yaml, read_text_file
from pumice.nodes import DURATION_ANNOTATION, parse_duration

from .errors import ScenarioError
from .nodegen import generate_nodes

if TYPE_CHECKING:
    from .federation import FederationScenario

__all__ = ["ACTION_KINDS", "Action", "Scenario", "load_directory", "load_path", "load_scenario"]

ActionKind = Literal["apply", "delete", "drain", "fail", "recover"]
ACTION_KINDS: tuple[ActionKind, ...] = ("apply", "delete", "drain", "fail", "recover")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
TOP_KEYS = {"name", "description", "cluster", "scheduler", "timeline", "until", "period", "gc"}


@dataclass
class Action:
    """One timeline entry: at ``at`` seconds, apply/delete objects or act on a node."""

    at: float
    kind: ActionKind
    objects: list[dict[str, Any]] = field(default_factory=list)
    node: str = ""
    label: str = ""


@dataclass
class Scenario:
    """Everything a simulation run needs; times are seconds from the start."""

    name: str
    source: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    conf_text: str | None = None
    conf_source: str = "volcano-scheduler.conf"
    timeline: list[Action] = field(default_factory=list)
    until: float | None = None
    period: float = 1.0
    #: Delete plain pods (and their own PodGroup) as soon as they finish, as a trace's deletions do.
    gc_finished: bool = False
    description: str = ""

    def sorted_timeline(self) -> list[Action]:
        return sorted(self.timeline, key=lambda a: a.at)  # stable: file order among equal times


def _manifests(path: Path, source: str, fld: str) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ScenarioError(source, fld, f"no such file: {path}")
    try:
        return [o.to_dict() for o in load_file(path)]
    except ManifestError as err:
        raise ScenarioError(source, fld, str(err)) from None


def _inline(obj: Any, source: str, fld: str) -> list[dict[str, Any]]:
    try:
        return [o.to_dict() for o in load_text(json.dumps(obj), source=f"{source} ({fld})")]
    except (ManifestError, TypeError, ValueError) as err:
        raise ScenarioError(source, fld, str(err)) from None


def _objects(value: Any, base: Path, source: str, fld: str, *, loose: bool = False) -> list[dict[str, Any]]:
    """A file name, an inline manifest, or a list of either; ``loose`` accepts kind+name references."""
    if isinstance(value, str):
        return _check_durations(_manifests(base / value, source, fld), source, fld)
    if isinstance(value, list):
        out: list[dict[str, Any]] = []
        for i, item in enumerate(value):
            out.extend(_objects(item, base, source, f"{fld}[{i}]", loose=loose))
        return out
    if isinstance(value, Mapping):
        if set(value) == {"file"}:
            return _objects(value["file"], base, source, f"{fld}.file", loose=loose)
        if loose and "kind" in value and ("name" in value or "metadata" in value):
            if "metadata" in value:
                return [dict(value)]
            meta = {"name": value["name"], **({"namespace": value["namespace"]} if "namespace" in value else {})}
            return [{"kind": value["kind"], "metadata": meta}]
        if "kind" not in value:
            raise ScenarioError(source, fld, "expected a manifest (with kind), a file name, or a list of them")
        return _check_durations(_inline(dict(value), source, fld), source, fld)
    raise ScenarioError(source, fld, f"expected a file name, a manifest or a list, got {type(value).__name__}")


def _annotation_paths(obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(field path, annotations) of an object and of the pod templates inside it."""
    out = [("metadata.annotations", (obj.get("metadata") or {}).get("annotations") or {})]
    spec = obj.get("spec") or {}
    for i, task in enumerate(spec.get("tasks") or []):
        meta = ((task or {}).get("template") or {}).get("metadata") or {}
        out.append((f"spec.tasks[{i}].template.metadata.annotations", meta.get("annotations") or {}))
    meta = (spec.get("template") or {}).get("metadata") or {}
    out.append(("spec.template.metadata.annotations", meta.get("annotations") or {}))
    return out


def _check_durations(objs: list[dict[str, Any]], source: str, fld: str) -> list[dict[str, Any]]:
    """A bad ``pumice.io/duration`` is bad input, not a pod that silently runs forever."""
    for obj in objs:
        for path, ann in _annotation_paths(obj):
            if DURATION_ANNOTATION in ann:
                try:
                    parse_duration(ann[DURATION_ANNOTATION])
                except ValueError as err:
                    name = (obj.get("metadata") or {}).get("name")
                    raise ScenarioError(source, f"{fld} ({obj.get('kind')} {name}) {path}.{DURATION_ANNOTATION}",
                                        str(err)) from None
    return objs


def _seconds(value: Any, source: str, fld: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as err:
        raise ScenarioError(source, fld, str(err)) from None


def _nodes(value: Any, base: Path, source: str, field: str = "cluster.nodes") -> list[dict[str, Any]]:
    if value is None:
        return []
    entries = value if isinstance(value, list) else [value]
    used: set[str] = set()
    nodes: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        fld = f"{field}[{i}]"
        if isinstance(entry, Mapping) and "kind" not in entry and set(entry) != {"file"}:
            nodes.extend(generate_nodes(entry, source, fld, used))
            continue
        for obj in _objects(entry, base, source, fld):
            if obj.get("kind") != "Node":
                raise ScenarioError(source, fld, f"expected Nodes, got a {obj.get('kind')}")
            used.add(str(obj["metadata"]["name"]))
            nodes.append(obj)
    return nodes


def _conf(value: Any, base: Path, source: str) -> tuple[str | None, str]:
    if value is None:
        return None, "volcano-scheduler.conf"
    if isinstance(value, Mapping):
        if set(value) == {"file"}:
            value = str(value["file"])
        else:
            return yaml.safe_dump(dict(value), sort_keys=False), f"{source} (scheduler)"
    if not isinstance(value, str):
        raise ScenarioError(source, "scheduler", "expected configuration text, a mapping, or {file: PATH}")
    if "\n" not in value.strip() and ": " not in value:
        path = base / value.strip()
        if not path.is_file():
            raise ScenarioError(source, "scheduler", f"no such file: {path}")
        try:
            return read_text_file(path), str(path)
        except (OSError, UnicodeDecodeError, InputError) as err:  # unreadable, not UTF-8, too large
            raise ScenarioError(source, "scheduler", f"{path}: {err}") from None
    return value, f"{source} (scheduler)"


def _action(entry: Any, i: int, base: Path, source: str) -> Action:
    fld = f"timeline[{i}]"
    if not isinstance(entry, Mapping):
        raise ScenarioError(source, fld, "expected a mapping like {at: 10m, apply: job.yaml}")
    if "at" not in entry:
        raise ScenarioError(source, f"{fld}.at", "missing: when this happens (seconds or 5m, 1h30m)")
    at = _seconds(entry["at"], source, f"{fld}.at")
    verbs = [k for k in ACTION_KINDS if k in entry]
    unknown = sorted(set(entry) - {"at", "name", *ACTION_KINDS})
    if unknown:
        raise ScenarioError(source, f"{fld}.{unknown[0]}",
                            f"unknown key (use at, name and one of {', '.join(ACTION_KINDS)})")
    if len(verbs) != 1:
        raise ScenarioError(source, fld, f"expected exactly one of {', '.join(ACTION_KINDS)}")
    verb = verbs[0]
    label = str(entry.get("name", ""))
    value = entry[verb]
    if verb in ("apply", "delete"):
        objs = _objects(value, base, source, f"{fld}.{verb}", loose=verb == "delete")
        return Action(at, verb, objs, label=label)
    if not isinstance(value, str) or not value:
        raise ScenarioError(source, f"{fld}.{verb}", "expected a node name")
    return Action(at, verb, node=value, label=label)


def load_scenario(path: Path) -> Scenario | FederationScenario:
    """Read a scenario file (see ``docs/sim.md``); one with ``clusters`` is a federation (docs/federation.md)."""
    source = str(path)
    try:
        data = load_yaml(read_text_file(path))
    except OSError as err:
        raise ScenarioError(source, "", f"cannot read: {err.strerror or err}") from None
    except InputError as err:
        raise ScenarioError(source, "", str(err)) from None
    except UnicodeDecodeError as err:
        raise ScenarioError(source, "", f"not UTF-8 text: {err.reason} at byte {err.start}") from None
    except ValueError as err:  # an integer beyond Python's digit limit
        raise ScenarioError(source, "", f"not valid YAML ({err})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise ScenarioError(source, where, f"not valid YAML ({getattr(err, 'problem', None) or err})") from None
    if not isinstance(data, Mapping):
        raise ScenarioError(source, "", "a scenario is a mapping with cluster, scheduler, timeline and until")
    if "kind" in data and "timeline" not in data:
        raise ScenarioError(source, "", "this is a manifest, not a scenario: put it in a directory or a timeline")
    if "clusters" in data:  # several member clusters: a federation scenario (sim/federation.py)
        from .federation import load_federation

        return load_federation(path, data)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ScenarioError(source, unknown[0], f"unknown key (a scenario has {', '.join(sorted(TOP_KEYS))})")
    base = path.parent
    cluster = data.get("cluster") or {}
    if not isinstance(cluster, Mapping):
        raise ScenarioError(source, "cluster", "expected a mapping with nodes")
    if set(cluster) - {"nodes"}:
        raise ScenarioError(source, f"cluster.{sorted(set(cluster) - {'nodes'})[0]}", "unknown key (use nodes)")
    conf_text, conf_source = _conf(data.get("scheduler"), base, source)
    timeline = data.get("timeline") or []
    if not isinstance(timeline, list):
        raise ScenarioError(source, "timeline", "expected a list of {at: ..., apply: ...}")
    gc = data.get("gc", False)
    if gc not in (False, True, "finished"):
        raise ScenarioError(source, "gc", "expected true/false (delete plain pods once finished)")
    return Scenario(
        name=str(data.get("name") or path.stem),
        source=source,
        description=str(data.get("description") or ""),
        nodes=_nodes(cluster.get("nodes"), base, source),
        conf_text=conf_text,
        conf_source=conf_source,
        timeline=[_action(e, i, base, source) for i, e in enumerate(timeline)],
        until=None if data.get("until") is None else _seconds(data["until"], source, "until"),
        period=_seconds(data.get("period", 1), source, "period"),
        gc_finished=bool(gc),
    )


def load_directory(path: Path) -> Scenario:
    """Plain manifests, applied in file-name order at time zero; their Nodes become the simulated nodes."""
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    if not files:
        raise ScenarioError(str(path), "", "no manifests (*.yaml, *.yml, *.json) in this directory")
    scenario = Scenario(name=path.name, source=str(path))
    for f in files:
        objs = _check_durations(_manifests(f, str(f), ""), str(f), "")
        scenario.nodes.extend(o for o in objs if o.get("kind") == "Node")
        rest = [o for o in objs if o.get("kind") != "Node"]
        if rest:
            scenario.timeline.append(Action(0.0, "apply", rest, label=f.name))
    return scenario


def load_path(path: Path) -> Scenario | FederationScenario:
    """A scenario file, or a directory of manifests."""
    if path.is_dir():
        return load_directory(path)
    if not path.exists():
        raise ScenarioError(str(path), "", "no such file or directory")
    return load_scenario(path)
