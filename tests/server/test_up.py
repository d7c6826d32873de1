"""``pumice up`` / ``pumice down``: the control plane with kubectl, sped-up time, restarts."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from pumice.cli.up import ControlPlane, read_pid_file
from pumice.server import free_port

from .conftest import KUBECTL

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")
QUICKSTART = "scenarios/quickstart"


def kubectl(directory: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(directory / "kubeconfig"), "--cache-dir",
                           str(directory / "kcache"), *args], capture_output=True, text=True, timeout=60, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {proc.stdout}{proc.stderr}")
    return proc


def pumice(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pumice.cli.main", *args], capture_output=True, text=True,
                          timeout=90, check=False, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _watch_phases(plane: ControlPlane, name: str, phases: list[str], stop: threading.Event) -> None:
    """Follow a VolcanoJob over HTTP (watch from the start) and record each new status.state.phase."""
    token = (plane.data_dir / "token").read_text().strip()
    context = ssl.create_default_context(cafile=str(plane.data_dir / "ca.crt"))
    url = (f"{plane.url}/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs?watch=1&timeoutSeconds=30"
           f"&fieldSelector=metadata.name%3D{name}")
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, context=context, timeout=40) as resp:
        for line in resp:
            event = json.loads(line)
            phase = ((event["object"].get("status") or {}).get("state") or {}).get("phase") or "<none>"
            if not phases or phases[-1] != phase:
                phases.append(phase)
            if phase == "Completed" or stop.is_set():
                return


@needs_kubectl
def test_a_job_goes_pending_running_completed_at_time_scale_60(tmp_path: Path, shared: Path) -> None:
    with ControlPlane(tmp_path, port=free_port(), time_scale=60) as plane:
        kubectl(tmp_path, "apply", "-f", str(shared / QUICKSTART / "00-cluster.yaml"))
        phases: list[str] = []
        stop = threading.Event()
        watcher = threading.Thread(target=_watch_phases, args=(plane, "hello-volcano-job", phases, stop),
                                   daemon=True)
        watcher.start()
        started = time.monotonic()
        kubectl(tmp_path, "apply", "-f", str(shared / QUICKSTART / "01-hello-job.yaml"))
        pg = ""
        while time.monotonic() - started < 30 and (not phases or phases[-1] != "Completed"):
            if phases and phases[-1] == "Running" and not pg:
                pg = kubectl(tmp_path, "get", "pg", "--no-headers").stdout
                pods = kubectl(tmp_path, "get", "pods", "-o", "wide", "--no-headers").stdout.split()
                assert pods[0] == "hello-volcano-job-mytask-0" and pods[6].startswith("k3d-"), pods
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        stop.set()
        watcher.join(5)
        print(f"hello-volcano-job phases {phases}, completed after {elapsed:.2f} s wall (sleep 300 at x60)")
        assert [p for p in phases if p in ("Pending", "Running", "Completed")] == ["Pending", "Running", "Completed"]
        assert 4.0 <= elapsed <= 20.0, f"sleep 300 at x60 should take about 5 s, took {elapsed:.1f} s"
        assert pg.startswith("hello-volcano-job-"), pg
        out = kubectl(tmp_path, "get", "vcjob", "hello-volcano-job", "--no-headers").stdout.split()
        assert out[1] == "Completed"
        pods = kubectl(tmp_path, "get", "pods", "--no-headers").stdout.split()
        assert pods[2] == "Completed"
        assert plane.step_errors == 0


@needs_kubectl
def test_up_down_and_restart_lose_nothing(tmp_path: Path, shared: Path) -> None:
    port = free_port()
    directory = tmp_path / "state"
    up = pumice("up", "--data-dir", str(directory), "--port", str(port), "--time-scale", "30", "--background")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"https://127.0.0.1:{port}" in up.stdout
        info = read_pid_file(directory)
        assert info is not None and info["port"] == port
        config = json.loads((directory / "kubeconfig").read_text())
        assert config["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{port}"
        assert (directory / "token").stat().st_mode & 0o077 == 0
        kubectl(directory, "apply", "-f", str(shared / QUICKSTART / "02-queues.yaml"))
        (tmp_path / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
        kubectl(directory, "create", "-f", str(tmp_path / "ns.yaml"))
        again = pumice("up", "--data-dir", str(directory), "--port", str(free_port()), "--background")
        assert again.returncode != 0 and "already running" in again.stderr
        before = kubectl(directory, "get", "--raw", "/apis/scheduling.volcano.sh/v1beta1/queues").stdout
        version = json.loads(before)["metadata"]["resourceVersion"]
        down = pumice("down", "--data-dir", str(directory))
        assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
        assert read_pid_file(directory) is None
        assert "not running" in pumice("down", "--data-dir", str(directory)).stdout
        token = (directory / "token").read_text()

        up = pumice("up", "--data-dir", str(directory), "--port", str(port), "--time-scale", "30", "--background")
        assert up.returncode == 0, up.stdout + up.stderr
        assert (directory / "token").read_text() == token
        queues = kubectl(directory, "get", "queues", "--no-headers").stdout
        assert {"queue-a", "queue-b"} <= {line.split()[0] for line in queues.splitlines()}
        assert "team" in kubectl(directory, "get", "ns", "-o", "name").stdout
        ages = kubectl(directory, "get", "queues", "-o", "wide").stdout + kubectl(directory, "get", "ns").stdout
        assert "<invalid>" not in ages  # the sped-up clock resumed, it did not go back
        (tmp_path / "qc.yaml").write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                                          "metadata: {name: queue-c}\nspec: {weight: 1}\n")
        kubectl(directory, "create", "-f", str(tmp_path / "qc.yaml"))
        # a watch from a version seen before the restart resumes from the persisted event log
        token = (directory / "token").read_text().strip()
        req = urllib.request.Request(
            f"https://127.0.0.1:{port}/apis/scheduling.volcano.sh/v1beta1/queues?watch=1&resourceVersion={version}"
            "&timeoutSeconds=1", headers={"Authorization": f"Bearer {token}"})
        context = ssl.create_default_context(cafile=str(directory / "ca.crt"))
        with urllib.request.urlopen(req, context=context, timeout=10) as resp:
            events = [json.loads(line) for line in resp if line.strip()]
        assert ("ADDED", "queue-c") in [(e["type"], e["object"]["metadata"]["name"]) for e in events]
        assert all(int(e["object"]["metadata"]["resourceVersion"]) > int(version) for e in events)
    finally:
        pumice("down", "--data-dir", str(directory))
    assert read_pid_file(directory) is None


def test_default_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pumice.cli.up import default_data_dir

    monkeypatch.setenv("PUMICE_HOME", str(tmp_path / "h"))
    assert default_data_dir() == tmp_path / "h"
    monkeypatch.delenv("PUMICE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_data_dir() == tmp_path / ".pumice"
    monkeypatch.setenv("HOME", str(tmp_path / "missing"))
    monkeypatch.chdir(tmp_path)
    assert default_data_dir() == tmp_path / ".pumice"


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: volcano
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]
"""


@needs_kubectl
def test_deployments_roll_out_and_crds_survive_a_restart(tmp_path: Path, shared: Path) -> None:
    crds = Path(__file__).resolve().parents[1] / "fixtures" / "crds" / "argo-workflows.yaml"
    (tmp_path / "web.yaml").write_text(DEPLOYMENT)
    (tmp_path / "wf.yaml").write_text("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\n"
                                      "spec: {entrypoint: main}\n")
    with ControlPlane(tmp_path, port=free_port(), time_scale=30):
        kubectl(tmp_path, "apply", "-f", str(shared / QUICKSTART / "00-cluster.yaml"))
        kubectl(tmp_path, "apply", "-f", str(tmp_path / "web.yaml"))
        status = kubectl(tmp_path, "rollout", "status", "deployment/web", "--timeout=30s").stdout
        assert 'deployment "web" successfully rolled out' in status
        kubectl(tmp_path, "apply", "-f", str(crds))
        kubectl(tmp_path, "apply", "-f", str(tmp_path / "wf.yaml"))
    with ControlPlane(tmp_path, port=free_port(), time_scale=30):  # the CRD's kind is served again from SQLite
        assert "w " in kubectl(tmp_path, "get", "wf").stdout
        ready = kubectl(tmp_path, "get", "deploy", "web", "--no-headers").stdout.split()
        assert ready[1] == "2/2"
