"""Volcano's own scheduler unit tests (../shared/cases): pumice must decide the same.

Cases that need a capability pumice does not have yet are expected failures that name it; they
turn into passes (strict) as soon as the capability is registered.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from pumice.cli import schedule as schedule_cmd
from pumice.scheduler import ACTIONS, PLUGINS
from tests.conftest import SHARED

#: Annotations whose value is the scheduler's clock (Volcano writes time.Now()).
CLOCK_ANNOTATIONS = {"volcano.sh/predicate-time", "volcano.sh/vgpu-time", "volcano.sh/bind-time"}
CASES = sorted(p for p in (SHARED / "cases").iterdir() if p.is_dir()) if (SHARED / "cases").is_dir() else []


def _missing_capability(case: Path) -> tuple[str, bool] | None:
    """(what is missing, strict): strict when the session cannot run at all; a case that only
    lacks a plugin may still pass by coincidence (e.g. a bind count), so it is not strict."""
    conf = yaml.safe_load((case / "scheduler.yaml").read_text())
    actions = [a.strip() for a in str(conf.get("actions", "")).split(",") if a.strip()]
    for a in actions:
        if a not in ACTIONS:
            return f"action {a!r} is not implemented yet", True
    for tier in conf.get("tiers") or []:
        for p in tier.get("plugins") or []:
            if p["name"] not in PLUGINS:
                return f"plugin {p['name']!r} is not implemented yet", False
    text = (case / "cluster.yaml").read_text()
    if ("kind: HyperNode" in text or "networkTopology" in text or "subGroupPolicy" in text) and (
        "network-topology-aware" not in PLUGINS
    ):
        return "network-topology-aware scheduling (HyperNodes) is not implemented yet", False
    return None


def _params() -> list[Any]:
    out = []
    for case in CASES:
        missing = _missing_capability(case)
        marks = [pytest.mark.xfail(reason=missing[0], strict=missing[1])] if missing else []
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out


def _lowest_tier_hypernode(objects: list[dict[str, Any]]) -> dict[str, str]:
    """node -> the lowest-tier HyperNode that has it as a direct member (for the per-HyperNode counts)."""
    nodes = {o["metadata"]["name"]: (o["metadata"].get("labels") or {}) for o in objects if o["kind"] == "Node"}
    best: dict[str, tuple[int, str]] = {}
    for hn in (o for o in objects if o["kind"] == "HyperNode"):
        tier = int(hn["spec"]["tier"])
        for m in hn["spec"].get("members") or []:
            if m.get("type") != "Node":
                continue
            sel = m.get("selector") or {}
            for node, labels in nodes.items():
                if "exactMatch" in sel:
                    hit = sel["exactMatch"].get("name") == node
                elif "regexMatch" in sel:
                    hit = re.match(sel["regexMatch"].get("pattern", ""), node) is not None
                else:
                    want = (sel.get("labelMatch") or {}).get("matchLabels") or {}
                    hit = all(labels.get(k) == v for k, v in want.items())
                if hit and (node not in best or best[node][0] > tier):
                    best[node] = (tier, hn["metadata"]["name"])
    return {node: name for node, (_, name) in best.items()}


@pytest.mark.parametrize("case", _params())
def test_case(case: Path) -> None:
    expected = json.loads((case / "expected.json").read_text())
    want_scores = "node_scores" in expected
    text = schedule_cmd.run([case / "cluster.yaml"], case / "scheduler.yaml", "json", want_scores, Console())
    assert text is not None
    got = json.loads(text)
    note = f"{expected.get('case_name')} ({expected.get('source')}) notes: {expected.get('notes')}"
    if "binds" in expected:
        assert got["binds"] == expected["binds"], note
    if "bind_count" in expected:
        assert len(got["binds"]) == expected["bind_count"], note
    if "evicted" in expected:
        assert Counter(got["evictions"]) == Counter(expected["evicted"]), note
    for group, nodes in (expected.get("pipelined") or {}).items():
        ns, name = group.split("/", 1)
        objects = [o for o in yaml.safe_load_all((case / "cluster.yaml").read_text()) if o]
        members = {
            f"{ns}/{o['metadata']['name']}" for o in objects
            if o["kind"] == "Pod" and (o["metadata"].get("namespace") or "default") == ns
            and (o["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name") == name
        }
        placed = {pod: node for pod, node in got["pipelined"].items() if pod in members}
        assert placed, f"no task of {group} is pipelined; {note}"
        assert all(node in nodes for node in placed.values()), note
    for group, phase in (expected.get("podgroup_phase") or {}).items():
        assert got["podgroups"][group]["phase"] == phase, note
    if "bind_counts_per_hypernode_sorted" in expected:
        objects = [o for o in yaml.safe_load_all((case / "cluster.yaml").read_text()) if o]
        owner = _lowest_tier_hypernode(objects)
        counts = Counter(owner.get(node, "") for node in got["binds"].values())
        assert sorted(counts.values()) == expected["bind_counts_per_hypernode_sorted"], note
    for pod, wanted in (expected.get("pod_annotations") or {}).items():
        written = got.get("pod_annotations", {}).get(pod, {})
        for key, value in wanted.items():
            if key not in CLOCK_ANNOTATIONS:  # wall-clock stamps: present, any value
                assert written.get(key) == value, f"{pod} annotation {key}; {note}"
            else:
                assert key in written, f"{pod} annotation {key}; {note}"
    if want_scores:
        for pod, per_node in expected["node_scores"].items():
            for node, score in per_node.items():
                assert got["node_scores"][pod][node] == pytest.approx(score, abs=1e-6), f"{pod} on {node}; {note}"


def test_cases_are_there() -> None:
    assert CASES, f"no case folders under {SHARED / 'cases'}"
