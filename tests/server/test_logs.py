"""``kubectl logs`` against ``pumice up``: what the simulated containers' commands printed, when."""

from __future__ import annotations

import re
import ssl
import subprocess
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from pumice.cli.up import ControlPlane
from pumice.nodes.script import simulate
from pumice.server import free_port

from .conftest import KUBECTL
from .test_up import kubectl

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")

QUICKSTART = "scenarios/quickstart"
SCALE = 50  # cluster seconds per wall second

PODS = """
apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  schedulerName: volcano
  restartPolicy: Never
  initContainers:
  - name: setup
    image: busybox
    command: ["sh", "-c", "echo preparing; sleep 10; echo ready"]
  containers:
  - name: main
    image: busybox
    env: [{name: GREETING, value: hello}]
    command: ["/bin/sh", "-ec"]
    args: ["echo \\"$GREETING from $HOSTNAME\\"; printf '%s=%d\\\\n' a 1 b 2; sleep 20; echo done; exit 3; echo never"]
  - name: side
    image: busybox
    command: ["python", "serve.py"]
---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec:
  schedulerName: volcano
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo never printed"]
    resources: {requests: {cpu: "1000"}}
"""


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _wait_phase(directory: Path, pod: str, phases: tuple[str, ...], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = kubectl(directory, "get", "pod", pod, "-o", "jsonpath={.status.phase}", check=False).stdout
        if out in phases:
            return
        time.sleep(0.2)
    raise AssertionError(f"pod {pod} never reached {phases}")


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory, shared: Path):
    directory = tmp_path_factory.mktemp("up")
    with ControlPlane(directory, port=free_port(), time_scale=SCALE) as plane:
        kubectl(directory, "apply", "-f", str(shared / QUICKSTART / "00-cluster.yaml"))
        yield plane


def test_logs_of_the_quickstart_workflow_in_order_with_the_pods_times(plane: ControlPlane, shared: Path) -> None:
    d = plane.data_dir
    kubectl(d, "apply", "-f", str(shared / QUICKSTART / "06-depends-on.yaml"))
    _wait_phase(d, "workflow-job-task-a-0", ("Running", "Succeeded"))
    # follow task A: its first line at once, the second 100 cluster seconds (2 wall seconds) later, then the
    # stream ends with the container
    began = time.monotonic()
    follow = kubectl(d, "logs", "-f", "--timestamps", "workflow-job-task-a-0")
    took = time.monotonic() - began
    lines = follow.stdout.splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["Task A: Starting process...",
                                                          "Task A: Process finished successfully!"]
    start = kubectl(d, "get", "pod", "workflow-job-task-a-0", "-o", "jsonpath={.status.startTime}").stdout
    first, second = (_seconds(line.split(" ", 1)[0]) for line in lines)
    assert first == _seconds(start)
    assert second - first == 100
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", lines[0].split(" ", 1)[0])
    assert took < 30
    _wait_phase(d, "workflow-job-task-a-0", ("Succeeded",))
    # the finished container keeps its log
    assert kubectl(d, "logs", "workflow-job-task-a-0").stdout == ("Task A: Starting process...\n"
                                                                   "Task A: Process finished successfully!\n")
    assert kubectl(d, "logs", "--tail=1", "workflow-job-task-a-0").stdout == "Task A: Process finished successfully!\n"
    previous = kubectl(d, "logs", "--previous", "workflow-job-task-a-0", check=False)
    assert previous.returncode != 0 and "previous terminated container" in previous.stderr


def test_logs_by_container_with_exit_codes_and_honest_lines(plane: ControlPlane) -> None:
    d = plane.data_dir
    proc = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", str(d / "kubeconfig"), "apply", "-f", "-"],
                          input=PODS, capture_output=True, text=True, timeout=60, check=True)
    assert "chatty" in proc.stdout
    _wait_phase(d, "chatty", ("Failed",))
    setup = kubectl(d, "logs", "chatty", "-c", "setup").stdout
    assert setup == "preparing\nready\n"
    main = kubectl(d, "logs", "chatty", "-c", "main", "--timestamps").stdout.splitlines()
    assert [line.split(" ", 1)[1] for line in main] == ["hello from chatty", "a=1", "b=2", "done"]
    times = [_seconds(line.split(" ", 1)[0]) for line in main]
    start = _seconds(kubectl(d, "get", "pod", "chatty", "-o", "jsonpath={.status.startTime}").stdout)
    assert times == [start + 10, start + 10, start + 10, start + 30]  # after the init container's 10 s
    code = kubectl(d, "get", "pod", "chatty", "-o",
                   "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}").stdout
    assert code == "3"  # `exit 3`: the pod failed, as the command says
    side = kubectl(d, "logs", "chatty", "-c", "side").stdout
    assert side.startswith("[pumice] this simulated container's output is not known")
    assert "`python`" in side and "hello" not in side
    unknown = kubectl(d, "logs", "chatty", "-c", "nope", check=False)
    assert unknown.returncode != 0 and "container nope is not valid for pod chatty" in unknown.stderr
    pending = kubectl(d, "logs", "huge", check=False)
    assert pending.returncode != 0 and "does not have a host assigned" in pending.stderr
    missing = kubectl(d, "logs", "ghost", check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr


def test_the_quickstart_cpu_eater_prints_what_is_known_then_says_so(shared: Path) -> None:
    job = yaml.safe_load_all((shared / QUICKSTART / "03-weighted-jobs.yaml").read_text())
    container = next(iter(job))["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    run = simulate(container)
    assert [line.text for line in run.lines] == ["Starting CPU load..."]
    assert not run.complete and "while" in run.problem


def test_metrics_on_pumice_up(plane: ControlPlane) -> None:
    token = (plane.data_dir / "token").read_text().strip()
    context = ssl.create_default_context(cafile=str(plane.data_dir / "ca.crt"))
    req = urllib.request.Request(plane.url + "/metrics", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, context=context, timeout=10) as resp:
        text = resp.read().decode()
    names = {s.name for family in text_string_to_metric_families(text) for s in family.samples}
    assert "volcano_e2e_scheduling_latency_milliseconds_count" in names
    assert "volcano_queue_pod_group_running_count" in names or "volcano_queue_weight" in names
