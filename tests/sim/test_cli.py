"""``pumice sim``: -o json with job and pod timings, tables, reports, and bad input exiting 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pumice.cli.main import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

Write = Callable[[str, str], Path]

SCENARIO = """
name: timing
cluster:
  nodes:
    - {count: 1, cpu: 2, memory: 4Gi}
timeline:
  - at: 0s
    apply:
      - apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: first}
        spec: {minMember: 1, queue: default}
      - apiVersion: v1
        kind: Pod
        metadata:
          name: first
          annotations: {scheduling.k8s.io/group-name: first, pumice.io/duration: 10m}
        spec:
          schedulerName: volcano
          containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
  - at: 1m
    apply:
      - apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: second}
        spec: {minMember: 1, queue: default}
      - apiVersion: v1
        kind: Pod
        metadata:
          name: second
          annotations: {scheduling.k8s.io/group-name: second}
        spec:
          schedulerName: volcano
          containers: [{name: c, image: x, command: [sh, -c, "sleep 120"], resources: {requests: {cpu: "1"}}}]
until: 1h
"""


def run_json(*args: str) -> dict:
    result = runner.invoke(app, ["sim", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_jobs_and_pod_timing(write: Write) -> None:
    data = run_json(str(write("s.yaml", SCENARIO)))
    assert data["scenario"] == "timing" and data["end"] == 3600
    jobs = {j["name"]: j for j in data["jobs"]}
    first, second = jobs["first"], jobs["second"]
    assert (first["kind"], first["queue"], first["phase"]) == ("PodGroup", "default", "Completed")
    assert first["submitted"] == 0 and first["started"] == 0 and first["finished"] == 600
    assert first["pods"] == [{"name": "first", "node": "node-0", "phase": "Succeeded", "start": 0.0, "end": 600.0}]
    # the second waits for the first to free the node, then runs its `sleep 120`
    assert second["submitted"] == 60 and second["started"] == 600 and second["finished"] == 720
    assert second["wait"] == 540 and second["jct"] == 660
    assert second["pods"][0]["node"] == "node-0"
    q = data["queues"]["default"]
    assert q["jobs"] == 2 and q["finished"] == 2 and q["mean_wait"] == 270
    c = data["cluster"]
    assert c["nodes"] == 1 and c["capacity"]["cpu"] == 2
    assert c["cpu_util_peak"] == 1.0
    assert c["cpu_util_mean"] == pytest.approx((600 * 1.0 + 120 * 0.5) / 3600, abs=1e-3)


def test_table_and_report(write: Write, tmp_path: Path) -> None:
    report = tmp_path / "report"
    result = runner.invoke(app, ["sim", str(write("s.yaml", SCENARIO)), "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert "Queues" in result.output and "Cluster" in result.output and "default/second" in result.output
    for name in ("index.html", "utilization.png", "queue_shares.png", "wait_times.png", "result.json"):
        assert (report / name).stat().st_size > 0, name
    assert (report / "utilization.png").read_bytes()[:4] == b"\x89PNG"
    assert "<img" in (report / "index.html").read_text()


def test_quickstart_example_runs() -> None:
    data = run_json(str(REPO / "examples" / "sim" / "quickstart.yaml"))
    jobs = {j["name"]: j for j in data["jobs"]}
    assert jobs["hello-volcano-job"]["phase"] == "Completed"
    assert jobs["gang-job"]["phase"] == "Deleted" and jobs["gang-job"]["started"] is None
    assert jobs["workflow-job"]["phase"] == "Completed"
    assert data["end"] == 3600


def test_directory_of_manifests(quickstart: Path) -> None:
    data = run_json(str(quickstart), "--until", "30m")
    names = {j["name"] for j in data["jobs"]}
    assert {"hello-volcano-job", "gang-job", "gang-job-min4", "workflow-job"} <= names


@pytest.mark.parametrize(("args", "words"), [
    (["missing.yaml"], "missing.yaml: no such file"),
    ([], "SCENARIO: missing"),
    (["--trace", "openb"], "--trace-dir: required"),
    (["--trace", "other", "--trace-dir", "."], "unknown trace"),
    (["x.yaml", "-o", "yaml"], "--output"),
    (["BAD", "--until", "later"], "--until"),
])
def test_bad_input_exits_2_with_one_line(write: Write, args: list[str], words: str) -> None:
    bad = write("bad.yaml", "timeline: [{at: soon, apply: x.yaml}]\n")
    args = [str(bad) if a == "BAD" else a for a in args]
    result = runner.invoke(app, ["sim", *args])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], result.stderr


def test_bad_scenario_names_file_and_field(write: Write) -> None:
    bad = write("bad.yaml", "timeline: [{at: soon, apply: x.yaml}]\n")
    result = runner.invoke(app, ["sim", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {bad}: timeline[0].at: not a duration: 'soon' (use seconds or a Go " \
                                    "duration like 5m, 1h30m)"


def test_node_failure_example_restarts_the_gang() -> None:
    data = run_json(str(REPO / "examples" / "sim" / "node-failure.yaml"))
    train = next(j for j in data["jobs"] if j["name"] == "train")
    first, second = train["pods"][:4], train["pods"][4:]
    assert [p["phase"] for p in first] == ["Deleted"] * 4 and {p["end"] for p in first} == {1800.0}  # drain
    # back once worker-0 is uncordoned (60m) and worker-1 recovered (90m): the gang needs all four nodes
    assert {p["start"] for p in second} == {5400.0} and {p["phase"] for p in second} == {"Succeeded"}
    assert train["phase"] == "Completed" and train["finished"] == 5400 + 7200


def test_refused_objects_are_reported_and_the_rest_applied(write: Write) -> None:
    data = run_json(str(write("r.yaml", """
cluster: {nodes: [{count: 1}]}
timeline:
  - at: 0
    apply:
      - apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: bad}
        spec:
          queue: nowhere
          tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}]
      - {apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: good},
         spec: {minMember: 1, queue: default}}
      - apiVersion: v1
        kind: Pod
        metadata: {name: good, annotations: {scheduling.k8s.io/group-name: good, pumice.io/duration: "5"}}
        spec: {schedulerName: volcano, containers: [{name: c, image: x}]}
""")))
    assert [j["name"] for j in data["jobs"]] == ["good"] and data["jobs"][0]["phase"] == "Completed"
    (error,) = data["cluster"]["errors"]
    assert error.startswith("t=0s apply: ") and "nowhere" in error


def test_progress_bar_follows_virtual_time(write: Write) -> None:
    import io

    from rich.console import Console

    from pumice.cli.sim import _Bar
    from pumice.sim import load_path, run_scenario

    out = io.StringIO()
    seen: list[float] = []
    bar = _Bar(3600, Console(file=out, force_terminal=True, width=100))
    with bar as tick:
        def progress(t: float) -> None:
            seen.append(t)
            tick(t)

        run_scenario(load_path(write("s.yaml", SCENARIO)), progress=progress)
    assert seen[0] == 0 and seen[-1] == 3600 and seen == sorted(seen)
    assert bar.progress.tasks[0].total == 3600


QUEUE_ANNOTATED = """
name: queue-annotated
cluster:
  nodes:
    - {count: 1, cpu: 4, memory: 8Gi}
timeline:
  - at: 0s
    apply:
      - apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: queue1}
        spec: {weight: 1}
  - at: 1s
    apply:
      - apiVersion: v1
        kind: Pod
        metadata:
          name: plain
          annotations: {scheduling.volcano.sh/queue-name: queue1, pumice.io/duration: "60"}
        spec:
          schedulerName: volcano
          containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
until: 10m
"""


def test_plain_pods_count_under_the_queue_their_podgroup_carries(write: Write) -> None:
    """Issue 19, defect 5: a plain pod annotated with a queue is that queue's job, not ``default``'s."""
    data = run_json(str(write("q.yaml", QUEUE_ANNOTATED)))
    (job,) = data["jobs"]
    assert job["queue"] == "queue1" and job["kind"] == "PodGroup" and job["submitted"] == 1
    assert [p["name"] for p in job["pods"]] == ["plain"] and job["phase"] == "Completed"
    assert set(data["queues"]) == {"queue1"}
    assert data["queues"]["queue1"]["jobs"] == 1 and data["queues"]["queue1"]["finished"] == 1


WORKLOADS = """
name: workloads
cluster:
  nodes:
    - {count: 1, cpu: 8, memory: 16Gi}
timeline:
  - at: 0s
    apply:
      - apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: test}
        spec: {weight: 1}
  - at: 1s
    apply:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          replicas: 2
          selector: {matchLabels: {app: web}}
          template:
            metadata:
              labels: {app: web}
              annotations: {scheduling.volcano.sh/queue-name: test}
            spec:
              schedulerName: volcano
              containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
      - apiVersion: batch/v1
        kind: Job
        metadata: {name: pi}
        spec:
          completions: 2
          parallelism: 1
          template:
            metadata: {annotations: {pumice.io/duration: "60"}}
            spec:
              schedulerName: volcano
              restartPolicy: Never
              containers: [{name: c, image: perl, resources: {requests: {cpu: "1"}}}]
until: 10m
"""


def test_workload_controllers_run_in_the_simulator(write: Write) -> None:
    data = run_json(str(write("w.yaml", WORKLOADS)))
    assert not data["cluster"].get("errors")
    jobs = {(j["kind"], j["name"].split("-")[0]): j for j in data["jobs"]}
    web = jobs[("ReplicaSet", "web")]
    assert web["queue"] == "test" and len(web["pods"]) == 2 and web["phase"] == "Running"
    pi = jobs[("Job.batch", "pi")]
    assert pi["queue"] == "default" and pi["phase"] == "Completed"
    starts = sorted(p["start"] for p in pi["pods"])
    assert len(starts) == 2 and starts[1] >= starts[0] + 60  # parallelism 1: one after the other
    assert data["queues"]["test"]["jobs"] == 1


CRON = """
name: cron
cluster:
  nodes:
    - {count: 1, cpu: 4, memory: 8Gi}
timeline:
  - at: 0s
    apply:
      - apiVersion: batch.volcano.sh/v1alpha1
        kind: CronJob
        metadata: {name: tick}
        spec:
          schedule: "*/10 * * * *"
          jobTemplate:
            spec:
              minAvailable: 1
              schedulerName: volcano
              tasks:
                - name: t
                  replicas: 1
                  template:
                    metadata: {annotations: {pumice.io/duration: "120"}}
                    spec:
                      restartPolicy: OnFailure
                      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""


def test_the_virtual_clock_drives_cronjobs(write: Write) -> None:
    path = write("cron.yaml", CRON)
    endless = runner.invoke(app, ["sim", str(path), "-o", "json"])
    assert endless.exit_code == 2 and "CronJob tick makes jobs for ever" in endless.output
    data = run_json(str(path), "--until", "1h")
    jobs = [j for j in data["jobs"] if j["kind"] == "Job"]
    assert [j["submitted"] for j in jobs] == [600, 1200, 1800, 2400, 3000, 3600]
    assert all(j["phase"] == "Completed" for j in jobs[:5])
