"""The openb trace: nodes and pods from the CSVs (a small slice; the full run is for benchmarks)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pumice.cli.main import app
from pumice.sim import ScenarioError, job_rows, load_openb, run_scenario, summarize


@pytest.fixture
def openb(shared: Path) -> Path:
    return shared / "data" / "openb"


def test_nodes_and_pods_from_the_csvs(openb: Path) -> None:
    sc = load_openb(openb, limit=40)
    assert len(sc.nodes) == 1523
    first = sc.nodes[0]["status"]["allocatable"]
    assert first["cpu"] == "32000m" and first["memory"] == "262144Mi" and "nvidia.com/gpu" not in first
    gpu = next(n for n in sc.nodes if "nvidia.com/gpu" in n["status"]["allocatable"])
    assert int(gpu["status"]["allocatable"]["pumice.io/gpu-milli"]) == 1000 * int(
        gpu["status"]["allocatable"]["nvidia.com/gpu"])
    assert gpu["metadata"]["labels"]["pumice.io/gpu-model"]
    pods = [o for a in sc.timeline for o in a.objects if o["kind"] == "Pod"]
    assert len(pods) == 40
    assert [a.at for a in sc.timeline] == sorted(a.at for a in sc.timeline)
    with (openb / "openb_pod_list_default.csv").open() as fh:
        row = next(csv.DictReader(fh))
    p0 = next(p for p in pods if p["metadata"]["name"] == row["name"])
    req = p0["spec"]["containers"][0]["resources"]["requests"]
    assert req["cpu"] == f"{row['cpu_milli']}m" and req["memory"] == f"{row['memory_mib']}Mi"
    duration = int(row["deletion_time"]) - int(row["scheduled_time"] or row["creation_time"])
    assert p0["metadata"]["annotations"]["pumice.io/duration"] == str(duration)
    assert p0["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == row["name"]


def test_gpu_sharing_and_failed_pods(openb: Path) -> None:
    pods = [o for a in load_openb(openb).timeline for o in a.objects if o["kind"] == "Pod"]
    sharing = [p for p in pods if "nvidia.com/gpu" not in p["spec"]["containers"][0]["resources"]["requests"]
               and "pumice.io/gpu-milli" in p["spec"]["containers"][0]["resources"]["requests"]]
    assert sharing and all(int(p["spec"]["containers"][0]["resources"]["requests"]["pumice.io/gpu-milli"]) < 1000
                           for p in sharing)
    failed = [p for p in pods if p["metadata"]["annotations"].get("pumice.io/fail") == "true"]
    assert len(failed) == 1870


def test_a_slice_runs_with_trace_timing(openb: Path) -> None:
    sc = load_openb(openb, limit=60)
    result = run_scenario(sc)
    rows = job_rows(result)
    assert len(rows) == 60
    assert all(r["started"] is not None for r in rows)  # a light load: everything starts
    for r in rows:
        (pod,) = r["pods"]
        trace_duration = next(float(o["metadata"]["annotations"]["pumice.io/duration"]) for a in sc.timeline
                              for o in a.objects if o["kind"] == "Pod" and o["metadata"]["name"] == r["name"])
        assert pod["end"] - pod["start"] == pytest.approx(trace_duration)
    # finished pods and their PodGroups are deleted, as the trace deletes them
    assert result.cluster.store.list("pods")[0] == []
    assert result.cluster.store.list("podgroups.scheduling.volcano.sh")[0] == []
    summary = summarize(result, rows)
    assert summary["cluster"]["primary_resource"] == "gpu"
    assert 0 < summary["cluster"]["gpu_util_peak"] <= 1


def test_cli_trace_slice(openb: Path) -> None:
    result = CliRunner().invoke(app, ["sim", "--trace", "openb", "--trace-dir", str(openb), "--limit", "20",
                                      "-o", "json"])
    assert result.exit_code == 0, result.output
    assert '"scenario": "openb-default"' in result.stdout


def test_bad_trace_input(openb: Path, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="creation_time: column missing"):
        load_openb(openb, "multigpu50")
    with pytest.raises(ScenarioError, match="no such file"):
        load_openb(tmp_path)
    bad = tmp_path / "openb_pod_list_default.csv"
    bad.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np,lots,1,0,0,0,1\n")
    for name in ("openb_node_list_all_node.csv",):
        (tmp_path / name).write_text((openb / name).read_text().split("\n", 3)[0] + "\n")
    with pytest.raises(ScenarioError, match=r"line 2, cpu_milli: not a number"):
        load_openb(tmp_path)
