"""The quick-start rows of ``../shared/scenarios/README.md``, each through store, controllers,
scheduler and simulated nodes (``pumice.sim.run_scenario``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pumice.api import load_file
from pumice.scheduler.conf import DEFAULT_CONF
from pumice.sim import Action, Scenario, SimResult, job_rows, run_scenario


def manifests(path: Path) -> list[dict[str, Any]]:
    return [o.to_dict() for o in load_file(path)]


def simulate(quickstart: Path, *files: str, until: float, nodes: list[dict[str, Any]] | None = None,
             conf: str | None = None) -> SimResult:
    actions = [Action(0.0, "apply", manifests(quickstart / f), label=f) for f in files]
    sc = Scenario(name="quickstart", source=str(quickstart), timeline=actions, until=until, conf_text=conf,
                  nodes=nodes if nodes is not None else manifests(quickstart / "00-cluster.yaml"))
    return run_scenario(sc)


def job(result: SimResult, name: str) -> dict[str, Any]:
    return next(r for r in job_rows(result) if r["name"] == name)


def test_00_three_ready_nodes(quickstart: Path) -> None:
    result = simulate(quickstart, until=1)
    store = result.cluster.store
    nodes, _ = store.list("nodes")
    assert len(nodes) == 3
    for n in nodes:
        assert [c["status"] for c in n["status"]["conditions"] if c["type"] == "Ready"] == ["True"]


def test_01_hello_job(quickstart: Path) -> None:
    result = simulate(quickstart, "01-hello-job.yaml", until=600)
    row = job(result, "hello-volcano-job")
    assert [p["name"] for p in row["pods"]] == ["hello-volcano-job-mytask-0"]
    pod = row["pods"][0]
    assert pod["node"] and pod["phase"] == "Succeeded"
    assert pod["end"] - pod["start"] == pytest.approx(300)
    record = result.recorder.jobs[("Job", "default", "hello-volcano-job")]
    phases = [p for _, p in record.history]
    assert phases[0] == "Pending" and phases[-1] == "Completed"
    assert "Running" in phases and phases.index("Running") < phases.index("Completed")
    # it had a PodGroup of its own (the Job controller removes it once the Job has finished)
    assert [k for k, rec in result.recorder.groups.items() if rec is record] != []


def test_02_queues(quickstart: Path) -> None:
    result = simulate(quickstart, "02-queues.yaml", until=5)
    queues = {q["metadata"]["name"]: q for q in result.cluster.store.list("queues.scheduling.volcano.sh")[0]}
    assert {"root", "default", "queue-a", "queue-b"} <= set(queues)
    assert queues["queue-a"]["spec"]["weight"] == 1 and queues["queue-b"]["spec"]["weight"] == 2
    for name in ("queue-a", "queue-b"):
        assert queues[name]["status"]["state"] == "Open"


def test_03_weighted_jobs_share_by_weight(quickstart: Path) -> None:
    """"When the cluster cannot run them all at once" (one 3-CPU node runs 6 of the 12 half-CPU pods),
    queue-b (weight 2) holds twice queue-a's share, within a quarter, in pumice's default configuration.

    Volcano's shipped configuration admits queue-a's PodGroups first while the shares tie, and its
    proportion then gives queue-a the spare deserved share (5 pods against 1); see
    ``tests/scheduler/test_queue_weights.py`` and the README's differences.
    """
    small = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "small"},
              "status": {"allocatable": {"cpu": "3", "memory": "16Gi", "pods": "110"},
                         "capacity": {"cpu": "3", "memory": "16Gi", "pods": "110"}}}]
    result = simulate(quickstart, "02-queues.yaml", "03-weighted-jobs.yaml", until=1200, nodes=small)
    rows = [r for r in job_rows(result) if r["name"].startswith("job-")]
    assert len(rows) == 12
    first = min(r["started"] for r in rows)
    running = {q: sum(1 for r in rows if r["queue"] == q and r["started"] == first) for q in ("queue-a", "queue-b")}
    assert running["queue-a"] + running["queue-b"] == 6  # the node is full
    assert 2 * 0.75 <= running["queue-b"] / running["queue-a"] <= 2 * 1.25, running
    assert all(r["phase"] == "Completed" for r in rows)  # and everyone finishes in the end


def test_03_weighted_jobs_in_volcanos_configuration(quickstart: Path) -> None:
    """Volcano's shipped configuration, given explicitly, keeps Volcano's decision: 5 pods against 1."""
    small = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "small"},
              "status": {"allocatable": {"cpu": "3", "memory": "16Gi", "pods": "110"},
                         "capacity": {"cpu": "3", "memory": "16Gi", "pods": "110"}}}]
    result = simulate(quickstart, "02-queues.yaml", "03-weighted-jobs.yaml", until=400, nodes=small,
                      conf=DEFAULT_CONF)
    rows = [r for r in job_rows(result) if r["name"].startswith("job-")]
    first = min(r["started"] for r in rows if r["started"] is not None)
    running = {q: sum(1 for r in rows if r["queue"] == q and r["started"] == first) for q in ("queue-a", "queue-b")}
    assert running == {"queue-a": 5, "queue-b": 1}


def gang20_podgroup(quickstart: Path) -> dict[str, Any]:
    result = simulate(quickstart, "02-queues.yaml", "04-gang-20.yaml", until=900)
    row = job(result, "gang-job")
    assert all(p["node"] is None for p in row["pods"])
    assert row["started"] is None
    groups, _ = result.cluster.store.list("podgroups.scheduling.volcano.sh")
    (pg,) = [g for g in groups if g["metadata"]["name"].startswith("gang-job")]
    return pg


def test_04_gang_that_cannot_fit_never_binds(quickstart: Path) -> None:
    pg = gang20_podgroup(quickstart)
    assert pg["status"]["phase"] in ("Pending", "Inqueue")


def test_04_gang_that_cannot_fit_says_why(quickstart: Path) -> None:
    pg = gang20_podgroup(quickstart)
    reasons = " ".join(c.get("message", "") + c.get("reason", "") for c in pg["status"].get("conditions", [])
                       if c.get("type") == "Unschedulable")
    assert reasons, pg["status"]


def test_05_gang_min4_starts_at_least_four_together(quickstart: Path) -> None:
    result = simulate(quickstart, "02-queues.yaml", "05-gang-min4.yaml", until=2400)
    row = job(result, "gang-job-min4")
    starts = sorted(p["start"] for p in row["pods"] if p["start"] is not None)
    first = [s for s in starts if s == starts[0]]
    assert len(first) >= 4
    assert len(row["pods"]) == 20 and row["phase"] == "Completed"


def test_06_depends_on(quickstart: Path) -> None:
    result = simulate(quickstart, "06-depends-on.yaml", until=600)
    row = job(result, "workflow-job")
    pods = {p["name"]: p for p in row["pods"]}
    a, b = pods["workflow-job-task-a-0"], pods["workflow-job-task-b-0"]
    assert a["end"] - a["start"] == pytest.approx(100)
    assert b["end"] - b["start"] == pytest.approx(20)
    record_b = result.recorder.pod("default/workflow-job-task-b-0")
    assert record_b is not None
    created_b = record_b.created
    assert created_b >= a["end"] and b["start"] >= a["end"]
    assert row["phase"] == "Completed"
    assert row["finished"] >= b["end"]
