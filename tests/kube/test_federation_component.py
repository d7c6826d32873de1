"""``pumice federation --kubeconfig HOST``, the independent component, with a real kube-apiserver 1.20 as the host
(``pumice crds | kubectl apply -f -`` is all it was given) and a ``pumice up`` member; everything with kubectl.

The host keeps its queues (root/default) as Volcano's controller does; a Job submitted to it lands in the member
with the Queue and PriorityClass it needs, its status flows back (phase, running pods, the member's name), the
explanation is on the host's copy, and the component stops cleanly on SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

from .conftest import Kube
from .helpers import eventually, kubectl
from .test_federation import CLUSTER, FAST, nodes_and_blocks, pumice, vcjob


@dataclass
class Component:
    host: Path
    member: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture(scope="module")
def component(kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Component]:
    base = tmp_path_factory.mktemp("component")
    data = base / "member"
    (base / "member.yaml").write_text(nodes_and_blocks("m", "A100", 2))
    (base / "federation.yaml").write_text(FAST)
    pumice("up", "-d", "--data-dir", str(data), "--port", "0", "--time-scale", "10", "-f", str(base / "member.yaml"))
    log = base / "federation.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        with open(log, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "federation", "--kubeconfig",
                                     str(kube.kubeconfig), "--config", str(base / "federation.yaml")],
                                    stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
        comp = Component(kube.kubeconfig, data / "kubeconfig", proc, log)
        eventually(lambda: "pumice federation is running" in comp.text() or proc.poll() is not None, 60,
                   "the federation running")
        assert proc.poll() is None, comp.text()[-2000:]
        kubectl(comp.host, "apply", "-f", "-", input=json.dumps({
            "apiVersion": "federation.pumice.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "only", "labels": {"topology.kubernetes.io/region": "us-east"}},
            "spec": {"kubeconfig": {"file": str(comp.member)}}}))
        yield comp
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        subprocess.run([sys.executable, "-m", "pumice.cli.main", "down", "--data-dir", str(data)],
                       capture_output=True, timeout=60, cwd=REPO)


def test_the_component_runs_jobs_of_a_kubernetes_host(component: Component) -> None:
    comp = component
    host = comp.host

    def member_ready() -> bool:
        status = json.loads(kubectl(host, "get", "cluster", "only", "-o", "json")).get("status") or {}
        return (status.get("resourceSummary") or {}).get("readyNodes") == 4

    eventually(member_ready, 60, "the member's summary on the host's Cluster")
    queues = kubectl(host, "get", "queues", "-o", "jsonpath={.items[*].metadata.name}").split()
    assert {"root", "default"} <= set(queues)  # kept by the component's host control plane
    kubectl(host, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"},
         "spec": {"weight": 2}},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "urgent"},
         "value": 1000}]}))
    job = vcjob("pair", 2, seconds=200, queue="team", tier=1).replace(
        "  tasks:", "  priorityClassName: urgent\n  tasks:", 1)
    kubectl(host, "apply", "-f", "-", input=job)

    eventually(lambda: kubectl(host, "get", "vcjob", "pair", "-o", "jsonpath={.status.state.phase}") in (
        "Running", "Completed"), 60, "pair started in the member")
    labels = json.loads(kubectl(host, "get", "vcjob", "pair", "-o", "json"))["metadata"]["labels"]
    assert labels[CLUSTER] == "only"
    # what the Job needs came along: its Queue and its PriorityClass, in the member
    assert kubectl(comp.member, "get", "queue", "team", "-o", "jsonpath={.spec.weight}") == "2"
    assert kubectl(comp.member, "get", "priorityclass", "urgent", "-o", "jsonpath={.value}") == "1000"
    pods = json.loads(kubectl(comp.member, "get", "pods", "-o", "json"))["items"]
    nodes = {p["spec"].get("nodeName") for p in pods if p["metadata"]["name"].startswith("pair-")}
    assert nodes in ({"m-0", "m-1"}, {"m-2", "m-3"})  # one leaf HyperNode of tier 1

    eventually(lambda: kubectl(host, "get", "vcjob", "pair", "-o", "jsonpath={.status.state.phase}") == "Completed",
               90, "pair Completed on the host")
    status = json.loads(kubectl(host, "get", "vcjob", "pair", "-o", "json"))["status"]
    assert status["succeeded"] == 2 and status["minAvailable"] == 2
    explained = pumice("federation", "explain", "pair", "--kubeconfig", str(host))
    assert "dispatched to only" in explained, explained

    comp.proc.send_signal(signal.SIGTERM)
    assert comp.proc.wait(30) == 0, comp.text()[-2000:]
    assert "pumice federation stopped" in comp.text()
    assert "Traceback" not in comp.text(), comp.text()[-3000:]
