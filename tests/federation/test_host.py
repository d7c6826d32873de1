"""``pumice up --federation`` with members of its own, driven with the real kubectl; the explain command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pumice.cli.federation_host import FederationHost, load_members
from pumice.cli.main import app

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")

MEMBERS = """\
clusters:
  east:
    labels: {topology.kubernetes.io/region: us-east}
    cost: {nvidia.com/gpu: "2"}
    nodes: [{name: e, count: 4, gpu: 8}]
    hypernodes: {leaf: 2}
  west:
    labels: {topology.kubernetes.io/region: us-west}
    cost: {nvidia.com/gpu: "3"}
    nodes: [{name: w, count: 4, gpu: 8}]
    hypernodes: {leaf: 4}
"""
FAST = "dispatchPeriod: 1s\nprobePeriod: 1s\nleaseDuration: 4s\ngracePeriod: 6s\n"


def job(name: str, pods: int, *, tier: int | None = None, seconds: int = 600) -> str:
    topology = f"\n  networkTopology: {{mode: hard, highestTierAllowed: {tier}}}" if tier else ""
    return f"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
  schedulerName: volcano
  minAvailable: {pods}{topology}
  tasks:
  - name: worker
    replicas: {pods}
    template:
      metadata: {{annotations: {{pumice.io/duration: "{seconds}"}}}}
      spec:
        containers:
        - name: w
          image: busybox
          resources: {{requests: {{cpu: "1", nvidia.com/gpu: "8"}}, limits: {{nvidia.com/gpu: "8"}}}}
"""


@pytest.fixture
def federation_host(tmp_path: Path) -> Iterator[Callable[[], FederationHost]]:
    (tmp_path / "members.yaml").write_text(MEMBERS)
    (tmp_path / "federation.yaml").write_text(FAST)
    started: list[FederationHost] = []

    def start() -> FederationHost:
        host = FederationHost(tmp_path / "host", port=0, time_scale=1.0, config_path=tmp_path / "federation.yaml",
                              members=load_members(tmp_path / "members.yaml")).start()
        started.append(host)
        return host

    yield start
    for host in started:
        host.stop()


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(kubeconfig.parent / "cache")}
    done = subprocess.run([str(KUBECTL), *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cluster_of(kubeconfig: Path, name: str) -> str:
    path = r"jsonpath={.metadata.labels.federation\.pumice\.io/cluster}"
    return kubectl(kubeconfig, "get", "vcjob", name, "-o", path)


def wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_a_job_lands_by_topology_and_kubectl_shows_where(federation_host: Callable[[], FederationHost]) -> None:
    host = federation_host()
    kc = host.kubeconfig
    kubectl(kc, "apply", "-f", "-", stdin=job("ring", 4, tier=1) + "---\n" + job("small", 1))
    wait_for(lambda: "Running" in kubectl(kc, "get", "vcjob", "ring", "--no-headers"))
    table = kubectl(kc, "get", "vcjob")
    lines = {line.split()[0]: line.split() for line in table.splitlines()}
    assert lines["NAME"] == ["NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE", "CLUSTER"]
    assert lines["ring"][1] == "Running" and lines["ring"][3] == "4" and lines["ring"][5] == "west"
    assert lines["small"][5] == "east"  # no topology: the cheaper one
    pods = kubectl(host.members["west"].kubeconfig, "get", "pods", "-o", "name").split()
    assert sorted(pods) == [f"pod/ring-worker-{i}" for i in range(4)]
    clusters = kubectl(kc, "get", "clusters", "-o", "json")
    status = {c["metadata"]["name"]: c["status"] for c in json.loads(clusters)["items"]}
    assert status["west"]["conditions"][0]["status"] == "True"
    tiers = status["west"]["resourceSummary"]["hyperNodeTiers"]
    assert tiers[0]["tier"] == 1 and tiers[0]["largestFreeBlock"]["nodes"] == 4
    out = CliRunner().invoke(app, ["federation", "explain", "ring", "--kubeconfig", str(kc)])
    assert out.exit_code == 0, out.output
    assert "dispatched to west" in out.output and "tier <= 1" in out.output


def test_member_killed_mid_run_jobs_finish_elsewhere(federation_host: Callable[[], FederationHost]) -> None:
    host = federation_host()
    kc = host.kubeconfig
    kubectl(kc, "apply", "-f", "-", stdin=job("train", 2, seconds=8))
    wait_for(lambda: "Running" in kubectl(kc, "get", "vcjob", "train", "--no-headers"))
    assert cluster_of(kc, "train") == "east"
    host.members["east"].stop()  # the whole member goes away mid-run
    wait_for(lambda: cluster_of(kc, "train") == "west", timeout=40)
    wait_for(lambda: "Completed" in kubectl(kc, "get", "vcjob", "train", "--no-headers"), timeout=40)
    events = kubectl(kc, "get", "events", "--field-selector", "involvedObject.name=train")
    assert "ClusterLost" in events and "Redispatching" in events


def test_restarted_host_loses_nothing(federation_host: Callable[[], FederationHost]) -> None:
    host = federation_host()
    kubectl(host.kubeconfig, "apply", "-f", "-", stdin=job("a", 1) + "---\n" + job("b", 2))
    wait_for(lambda: kubectl(host.kubeconfig, "get", "vcjob", "--no-headers").count("Running") == 2)
    before = kubectl(host.kubeconfig, "get", "vcjob", "-o", "custom-columns=N:.metadata.name,C:.metadata.labels")
    host.stop()
    again = federation_host()
    wait_for(lambda: kubectl(again.kubeconfig, "get", "vcjob", "--no-headers").count("Running") == 2)
    after = kubectl(again.kubeconfig, "get", "vcjob", "-o", "custom-columns=N:.metadata.name,C:.metadata.labels")
    assert after == before
    copies = [c for m in again.members.values() for c in kubectl(m.kubeconfig, "get", "vcjob", "-o", "name").split()]
    assert sorted(copies) == ["job.batch.volcano.sh/a", "job.batch.volcano.sh/b"]


def test_up_federation_refuses_bad_members_file(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("clusters:\n  east: {nodes: [{count: two}]}\n")
    out = CliRunner().invoke(app, ["up", "--data-dir", str(tmp_path / "d"), "--federation", "--members",
                                   str(tmp_path / "m.yaml")])
    assert out.exit_code == 2
    assert "clusters.east.nodes[0].count" in out.output and str(tmp_path / "m.yaml") in out.output
    assert not (tmp_path / "d" / "store.db").exists()  # nothing started, nothing left
    out = CliRunner().invoke(app, ["up", "--data-dir", str(tmp_path / "d"), "--members", str(tmp_path / "m.yaml")])
    assert out.exit_code == 2 and "go with --federation" in out.output


def test_the_readme_federation(tmp_path: Path) -> None:
    """README's three-cluster federation: examples/federation/members.yaml, and ring.yaml landing by topology."""
    from tests.conftest import REPO

    examples = REPO / "examples" / "federation"
    host = FederationHost(tmp_path / "host", port=0, time_scale=60.0,
                          members=load_members(examples / "members.yaml")).start()
    try:
        kc = host.kubeconfig
        wait_for(lambda: kubectl(kc, "get", "clusters", "--no-headers").count(" True ") == 3)
        kubectl(kc, "apply", "-f", str(examples / "ring.yaml"))
        wait_for(lambda: "Running" in kubectl(kc, "get", "vcjob", "ring", "--no-headers"))
        assert cluster_of(kc, "ring") == "us-west"  # the only 8-node block, though us-east is cheaper
        out = CliRunner().invoke(app, ["federation", "explain", "ring", "--kubeconfig", str(kc)])
        rejected = {line.split()[0]: line for line in out.output.splitlines() if " rejected " in line}
        assert set(rejected) == {"us-east", "eu-west"}
        assert "network-topology" in rejected["us-east"] and "tier <= 1" in rejected["us-east"]
    finally:
        host.stop()
