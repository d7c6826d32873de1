"""NUMA end to end in the simulator: a Volcano Job with ``topologyPolicy: single-numa-node`` on nodes that
declare NUMA; the scheduler picks CPU sets, the simulated kubelet pins and frees them and publishes each
node's Numatopology."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pumice.api.numa import CPUSET_ANNOTATION, parse_cpuset
from pumice.sim import load_path, run_scenario
from pumice.sim.errors import ScenarioError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sim" / "numa.yaml"


def _pods(result: Any) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in result.cluster.store.list("pods", None)[0]}


def _topologies(result: Any) -> dict[str, dict[str, Any]]:
    return {t["metadata"]["name"]: t for t in result.cluster.store.list("numatopologies.nodeinfo.volcano.sh")[0]}


def test_single_numa_node_job_runs_pinned_and_frees_its_cpus(write: Callable[[str, str], Path]) -> None:
    text = EXAMPLE.read_text()
    # stop while the pinned job runs (it lasts 30m)
    result = run_scenario(load_path(write("numa.yaml", text + "until: 10m\n")))
    pods = _pods(result)
    workers = {n: p for n, p in pods.items() if n.startswith("pinned-")}
    assert len(workers) == 4 and all(p["status"]["phase"] == "Running" for p in workers.values())
    topologies = _topologies(result)
    assert sorted(topologies) == ["numa-0", "numa-1"]
    held: dict[str, set[int]] = {"numa-0": set(), "numa-1": set()}
    for name, p in workers.items():
        node = p["spec"]["nodeName"]
        cpus = parse_cpuset(p["metadata"]["annotations"][CPUSET_ANNOTATION])
        assert len(cpus) == 6 and len({c // 8 for c in cpus}) == 1, name  # one NUMA node of 8 CPUs
        assert not cpus & held[node], f"{name}: a CPU given twice"
        held[node] |= cpus
        # the kubelet reports what it pinned, as the scheduler chose it
        allocs = {a["name"]: a for a in topologies[node]["spec"]["podAllocations"]}
        assert parse_cpuset(allocs[name]["containerAllocations"][0]["allocations"]["cpu"]) == cpus
    for node, cpus in held.items():
        free = parse_cpuset(topologies[node]["spec"]["numares"]["cpu"]["allocatable"])
        assert free == set(range(16)) - cpus

    done = run_scenario(load_path(write("numa-done.yaml", text)))
    pods = _pods(done)
    assert all(p["status"]["phase"] == "Succeeded" for n, p in pods.items() if n.startswith("pinned-"))
    # 10 CPUs fit the free node (16 CPUs) but no NUMA node of 8: it waits, and says why
    wide = pods["too-wide-worker-0"]
    assert wide["status"].get("phase", "Pending") == "Pending"
    assert "container cannot be assigned by numa" in str(wide["status"].get("conditions"))
    for topo in _topologies(done).values():  # every CPU back
        assert topo["spec"]["numares"]["cpu"]["allocatable"] == "0-15"
        assert not topo["spec"].get("podAllocations")


def test_a_bad_numa_declaration_names_the_field(write: Callable[[str, str], Path]) -> None:
    bad = EXAMPLE.read_text().replace("numa: {nodes: 2,", "numa: {nodes: 3,")  # 16 CPUs over 3 NUMA nodes
    with pytest.raises(ScenarioError, match=r"cluster\.nodes\[0\]\.numa"):
        load_path(write("bad.yaml", bad))
