"""HyperNodes discovered from node labels (Volcano's label discoverer), and scheduling through them.

The scenario of issue 4: several InfiniBand fabrics in one cluster, nodes labelled with their
fabric; every pod of a PodGroup with ``networkTopology: {mode: hard, highestTierAllowed: 1}`` must
land in one fabric, whatever the other predicates leave of each fabric.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from pumice.cli.main import app
from pumice.scheduler import load_conf, run_session
from pumice.topology_discovery import (
    SOURCE_LABEL,
    DiscoveryConfigError,
    discover_hypernodes,
    parse_discovery_config,
    with_discovered_hypernodes,
)
from tests.builders import node, pod, podgroup
from tests.scheduler.test_topology import GPU_NODE, ML_GROUP, ML_POD, QUEUE, job_reason

IB = "example.com/ib-cluster"
LEAF = "example.com/leaf-switch"
HOST = "kubernetes.io/hostname"

VOLCANO_FORM = {"networkTopologyDiscovery": [
    {"source": "ufm", "enabled": False, "config": {"endpoint": "https://ufm:8080"}},
    {"source": "label", "enabled": True, "config": {"networkTopologyTypes": {
        "ib": [{"nodeLabel": IB}, {"nodeLabel": LEAF}, {"nodeLabel": HOST}]}}},
]}

CONF = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
""")


def two_fabrics() -> list[dict[str, Any]]:
    """fabric-a: leaves a0, a1; fabric-b: leaves b0, b1; two nodes per leaf; one node unlabelled."""
    nodes = [node(f"{leaf}-n{i}", gpus=8, labels={IB: f"fabric-{leaf[0]}", LEAF: leaf}, **GPU_NODE)
             for leaf in ("a0", "a1", "b0", "b1") for i in range(2)]
    # no fabric label: its chain stops at the leaf
    return [*nodes, node("lonely", gpus=8, labels={LEAF: "c0"}, **GPU_NODE)]


def by_name(hypernodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {h["metadata"]["labels"].get(LEAF) or h["metadata"]["labels"][IB]: h for h in hypernodes}


def members(hn: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["type"], m["selector"]["exactMatch"]["name"]) for m in hn["spec"]["members"]]


# --- discovery -------------------------------------------------------------------------------------
def test_two_fabrics_of_leaf_switches() -> None:
    found = discover_hypernodes(two_fabrics(), VOLCANO_FORM)
    hns = by_name(found)
    assert sorted(hns) == ["a0", "a1", "b0", "b1", "c0", "fabric-a", "fabric-b"]
    for key, hn in hns.items():
        assert hn["apiVersion"] == "topology.volcano.sh/v1alpha1" and hn["kind"] == "HyperNode"
        tier = 2 if key.startswith("fabric") else 1
        assert hn["spec"]["tier"] == tier
        assert hn["spec"]["tierName"] == (IB if tier == 2 else LEAF)
        assert hn["metadata"]["labels"] == {SOURCE_LABEL: "label", (IB if tier == 2 else LEAF): key}
        assert re.fullmatch(rf"hypernode-ib-tier{tier}-[0-9a-z]{{5}}", hn["metadata"]["name"])
    assert members(hns["a1"]) == [("Node", "a1-n0"), ("Node", "a1-n1")]
    assert members(hns["c0"]) == [("Node", "lonely")]
    assert members(hns["fabric-b"]) == sorted(("HyperNode", hns[leaf]["metadata"]["name"]) for leaf in ("b0", "b1"))
    # tier 1 first, then by name
    assert [h["spec"]["tier"] for h in found] == [1, 1, 1, 1, 1, 2, 2]


def test_names_are_deterministic() -> None:
    first = discover_hypernodes(two_fabrics(), VOLCANO_FORM)
    assert discover_hypernodes(list(reversed(two_fabrics())), VOLCANO_FORM) == first
    names = {h["metadata"]["name"] for h in first}
    assert len(names) == len(first)
    # a node more changes no name: names hash the type, tier, label key and value, nothing else
    more = discover_hypernodes([*two_fabrics(), node("a0-n9", gpus=8, labels={IB: "fabric-a", LEAF: "a0"}, **GPU_NODE)],
                               VOLCANO_FORM)
    assert {h["metadata"]["name"] for h in more} == names


def test_simple_form_label_to_tier() -> None:
    found = by_name(discover_hypernodes(two_fabrics(), {IB: 2, LEAF: 1}))
    assert sorted(found) == ["a0", "a1", "b0", "b1", "c0", "fabric-a", "fabric-b"]
    assert found["fabric-a"]["spec"]["tier"] == 2 and found["b0"]["spec"]["tier"] == 1
    assert members(found["fabric-a"]) == sorted(("HyperNode", found[x]["metadata"]["name"]) for x in ("a0", "a1"))
    # one label: every fabric is a tier-1 HyperNode of nodes
    fabrics = discover_hypernodes(two_fabrics(), {IB: 1})
    assert [(h["spec"]["tier"], len(h["spec"]["members"])) for h in fabrics] == [(1, 4), (1, 4)]
    assert all(m["type"] == "Node" for h in fabrics for m in h["spec"]["members"])


@pytest.mark.parametrize(("config", "message"), [
    ({"networkTopologyTypes": {"t": [{"nodeLabel": IB}, {"nodeLabel": LEAF}]}}, "must be kubernetes.io/hostname"),
    ({"networkTopologyTypes": {"t": [{"nodeLabel": IB}, {"nodeLabel": IB}, {"nodeLabel": HOST}]}}, "duplicate"),
    ({"networkTopologyTypes": {"x" * 21: [{"nodeLabel": IB}, {"nodeLabel": HOST}]}}, "longer than 20"),
    ({"networkTopologyDiscovery": [{"source": "ufm"}]}, "no enabled source 'label'"),
    ({IB: 1, LEAF: 1}, "same tier"),
    ({IB: "two"}, "positive integer"),
])
def test_bad_configurations_are_named(config: dict[str, Any], message: str) -> None:
    with pytest.raises(DiscoveryConfigError, match=message):
        parse_discovery_config(config)


def test_discovered_hypernodes_replace_label_sourced_ones_only() -> None:
    manual = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "manual"},
              "spec": {"tier": 1, "members": []}}
    stale = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
             "metadata": {"name": "stale", "labels": {SOURCE_LABEL: "label"}}, "spec": {"tier": 1, "members": []}}
    out = with_discovered_hypernodes([*two_fabrics(), manual, stale], {LEAF: 1})
    names = [o["metadata"]["name"] for o in out if o["kind"] == "HyperNode"]
    assert "manual" in names and "stale" not in names and len(names) == 6


# --- one fabric per gang, end to end through discovery ---------------------------------------------
def ib_cluster(taint_b: int = 0, select_away_b: int = 0) -> list[dict[str, Any]]:
    """fabric-a: 4 nodes; fabric-b: 6 nodes, 3 of them busy (so HyperNode binpacking prefers it).
    ``taint_b`` free nodes of fabric-b get a NoSchedule taint, ``select_away_b`` lose the
    ``gpu: h100`` label the gang's pods select."""
    objs: list[dict[str, Any]] = [QUEUE]
    for fabric, count in (("a", 4), ("b", 6)):
        for i in range(count):
            n = node(f"fabric-{fabric}-n{i}", gpus=8, labels={IB: f"fabric-{fabric}", "gpu": "h100"}, **GPU_NODE)
            free = i - 3 if fabric == "b" else -1  # fabric-b: n3, n4, n5 are the free ones
            if 0 <= free < taint_b:
                n["spec"] = {"taints": [{"key": "maintenance", "value": "ib", "effect": "NoSchedule"}]}
            elif 0 <= free - taint_b < select_away_b:
                n["metadata"]["labels"]["gpu"] = "a100"
            objs.append(n)
    for i in range(3):
        objs += [podgroup(f"busy-{i}", min_member=1, **ML_GROUP),
                 pod(f"busy-{i}-0", group=f"busy-{i}", gpus=8, node=f"fabric-b-n{i}", phase="Running", **ML_POD)]
    return objs


def train(size: int) -> list[dict[str, Any]]:
    objs = [podgroup("train", min_member=size, topology={"mode": "hard", "highestTierAllowed": 1}, **ML_GROUP)]
    for i in range(size):
        p = pod(f"train-worker-{i}", group="train", gpus=8, phase="Pending", **ML_POD)
        p["spec"]["nodeSelector"] = {"gpu": "h100"}
        objs.append(p)
    return objs


def fabric_of(name: str) -> str:
    return name.rsplit("-n", 1)[0]


def discovered_run(objs: list[dict[str, Any]]) -> Any:
    return run_session(with_discovered_hypernodes(objs, {IB: 1}), CONF)


def test_gang_lands_in_one_discovered_fabric_and_follows_the_predicates() -> None:
    out = discovered_run(ib_cluster() + train(3))
    assert len(out.binds) == 3
    assert {fabric_of(n) for n in out.binds.values()} == {"fabric-b"}  # the fuller fabric
    assert discovered_run(ib_cluster() + train(3)).binds == out.binds  # reproducible
    hypernode = next(j.hypernode for j in out.jobs if j.key == "ml/train")
    assert hypernode.startswith("hypernode-label-tier1-")
    assert out.to_json()["hypernodes"]["ml/train"] == hypernode
    # a taint or a selector leaves fabric-b two usable free nodes: the gang moves to fabric-a whole
    for objs in (ib_cluster(taint_b=1) + train(3), ib_cluster(select_away_b=1) + train(3)):
        moved = discovered_run(objs)
        assert len(moved.binds) == 3
        assert {fabric_of(n) for n in moved.binds.values()} == {"fabric-a"}
        assert discovered_run(objs).binds == moved.binds


def test_gang_fitting_no_single_fabric_stays_pending_and_says_so() -> None:
    out = discovered_run(ib_cluster() + train(5))  # 4 + 3 free nodes: enough only across fabrics
    assert out.binds == {}
    reason = job_reason(out, "ml/train")
    assert reason.startswith("no tier-1 HyperNode has 40 free GPUs; best has 32 (hypernode-label-tier1-")
    assert next(j.hypernode for j in out.jobs if j.key == "ml/train") == ""
    # with a fabric of four free nodes and one of three, a gang of four fits only in fabric-a, once
    # fabric-b's fourth free node is tainted; both fabrics tainted by one: nowhere, and said so
    four = discovered_run(ib_cluster(taint_b=1) + train(4))
    assert {fabric_of(n) for n in four.binds.values()} == {"fabric-a"} and len(four.binds) == 4
    objs = ib_cluster(taint_b=1) + train(4)
    objs[1]["spec"] = {"taints": [{"key": "maintenance", "value": "ib", "effect": "NoSchedule"}]}  # fabric-a-n0
    stuck = discovered_run(objs)
    assert stuck.binds == {}
    assert "no tier-1 HyperNode fits all 4 pods of the gang together" in job_reason(stuck, "ml/train")


# --- the command line ------------------------------------------------------------------------------
def write(path: Path, objs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return path


def test_schedule_discover_topology_json_and_table(tmp_path: Path) -> None:
    cluster = write(tmp_path / "cluster.yaml", ib_cluster(taint_b=1) + train(3))
    disc = tmp_path / "discovery.yaml"
    disc.write_text(yaml.safe_dump(VOLCANO_FORM | {"networkTopologyDiscovery": [
        {"source": "label", "config": {"networkTopologyTypes": {"ib": [{"nodeLabel": IB}, {"nodeLabel": HOST}]}}}]}))
    runner = CliRunner()
    result = runner.invoke(app, ["schedule", "-f", str(cluster), "--discover-topology", str(disc), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {fabric_of(n) for n in data["binds"].values()} == {"fabric-a"}
    assert set(data) == {"binds", "evictions", "pipelined", "podgroups", "hypernodes"}
    assert re.fullmatch(r"hypernode-ib-tier1-[0-9a-z]{5}", data["hypernodes"]["ml/train"])
    table = runner.invoke(app, ["schedule", "-f", str(cluster), "--discover-topology", str(disc)],
                          env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "HYPERNODE" in table.stdout and data["hypernodes"]["ml/train"] in table.stdout
    # without discovery there are no HyperNodes: the hard gang waits, no column, no key
    plain = runner.invoke(app, ["schedule", "-f", str(cluster), "-o", "json"])
    assert "hypernodes" not in json.loads(plain.stdout)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"networkTopologyTypes": {"t": [{"nodeLabel": IB}]}}))
    failed = runner.invoke(app, ["schedule", "-f", str(cluster), "--discover-topology", str(bad)])
    assert failed.exit_code == 2 and "kubernetes.io/hostname" in failed.output
