"""examples/sim/colocation.yaml: co-location raises the measured utilization and starves no online pod."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from pumice.nodes.colocation import BATCH_CPU, OVERSUBSCRIPTION_LABEL
from pumice.sim import load_path, run_scenario, summarize
from pumice.sim.engine import SimResult
from pumice.sim.scenario import Scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "sim" / "colocation.yaml"


def _run(label: bool) -> SimResult:
    scenario = load_path(SCENARIO)
    assert isinstance(scenario, Scenario)
    scenario = copy.deepcopy(scenario)
    if not label:
        for node in scenario.nodes:
            node["metadata"].get("labels", {}).pop(OVERSUBSCRIPTION_LABEL, None)
    return run_scenario(scenario)


@pytest.fixture(scope="module")
def runs() -> tuple[SimResult, SimResult]:
    return _run(True), _run(False)


def _online(result: SimResult) -> dict[str, tuple[str, float | None, float | None, str]]:
    """web pods: (node, start, end, phase) of each incarnation."""
    return {f"{p.name}@{uid}": (p.node, p.start, p.end, p.phase) for uid, p in result.recorder.pods.items()
            if p.name.startswith("web-")}


def test_colocation_uses_the_idle_requested_cpu(runs: tuple[SimResult, SimResult]) -> None:
    with_, without = (summarize(r)["cluster"] for r in runs)
    assert with_["cpu_used_mean"] > without["cpu_used_mean"] + 0.1  # offline pods run on what online pods idle
    assert with_["cpu_util_mean"] == without["cpu_util_mean"]  # online CPU requests are the same either way
    done = {r.name: r.phase for r in runs[0].recorder.jobs.values() if r.name.startswith("batch-")}
    assert len(done) == 18 and set(done.values()) == {"Completed"}
    idle = {r.name: r.phase for r in runs[1].recorder.jobs.values() if r.name.startswith("batch-")}
    assert set(idle.values()) <= {"Pending", "Inqueue"}  # nothing is offered without the label
    nodes = runs[1].cluster.store.list("nodes")[0]
    assert all(BATCH_CPU not in n["status"]["allocatable"] for n in nodes)


def test_no_online_pod_is_evicted_or_waits_for_offline_pods(runs: tuple[SimResult, SimResult]) -> None:
    with_, without = runs
    online = _online(with_)
    assert len(online) == 8  # one incarnation each: never evicted, never restarted
    assert all(phase == "Running" and end is None for _, _, end, phase in online.values())
    # placed when they would be without any offline pod
    starts = sorted((k.split("@")[0], s) for k, (_, s, _, _) in online.items())
    assert starts == sorted((k.split("@")[0], s) for k, (_, s, _, _) in _online(without).items())
    events = with_.cluster.store.list("events")[0]
    evicted = {e["involvedObject"]["name"] for e in events if e["reason"] == "Evicted"}
    assert evicted and all(name.startswith("batch-") for name in evicted)  # the spike evicts offline pods only
    deleted = [p for p in with_.recorder.pods.values() if p.name in evicted and p.phase == "Deleted"]
    assert {p.name for p in deleted} == evicted
    assert all(40 * 60 < (p.end or 0) <= 56 * 60 for p in deleted)  # while the web pods spike (40m to 55m)
