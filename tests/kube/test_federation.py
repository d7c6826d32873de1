"""A federation for real: a host and three ``pumice up`` members on loopback, each its own process, and a fourth
member that is the real kube-apiserver 1.20 with ``pumice run`` and fake nodes; every member reached through
its kubeconfig (one of them from a Secret on the host) by the Kubernetes store; everything driven with kubectl.

Jobs land where the policy says (a GPU model, a region, a gang that fits only one member's leaf tier, the
cheapest fit), queue shares hold across the members, a member killed mid-run has its jobs finished
elsewhere, and nothing is lost on the host.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

from .cluster import Kube120
from .helpers import PumiceRun, eventually, kubectl

FAST = "dispatchPeriod: 1s\nprobePeriod: 1s\nleaseDuration: 4s\ngracePeriod: 6s\n"
GPU_MODEL = "nvidia.com/gpu.product"
CLUSTER = "federation.pumice.io/cluster"
#: member -> (GPU model, region, price per GPU-hour, nodes per tier-1 block)
MEMBERS = {"east": ("A100", "us-east", "1.0", 2), "west": ("H100", "us-west", "3.0", 2),
           "eu": ("A100", "eu-west", "2.0", 2)}
KUBE_MEMBER = ("A100", "ap-south", "1.5", 4)


def nodes_and_blocks(prefix: str, model: str, leaf: int, *, fake: bool = False) -> str:
    docs = []
    names = [f"{prefix}-{i}" for i in range(4)]
    for name in names:
        annotations = '\n  annotations: {kwok.x-k8s.io/node: fake}' if fake else ""
        docs.append(f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{{GPU_MODEL}: {model}, kubernetes.io/hostname: {name}}}{annotations}
status:
  capacity: {{cpu: "16", memory: 128Gi, nvidia.com/gpu: "8", pods: "110"}}
  allocatable: {{cpu: "16", memory: 128Gi, nvidia.com/gpu: "8", pods: "110"}}
""")
    leaves = []
    for i in range(0, 4, leaf):
        leaves.append(f"{prefix}-leaf{i // leaf}")
        members = "".join(f"\n  - {{type: Node, selector: {{exactMatch: {{name: {n}}}}}}}" for n in names[i:i + leaf])
        docs.append(f"""apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {{name: {leaves[-1]}}}
spec:
  tier: 1
  members:{members}
""")
    members = "".join(f"\n  - {{type: HyperNode, selector: {{exactMatch: {{name: {n}}}}}}}" for n in leaves)
    docs.append(f"""apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {{name: {prefix}-spine}}
spec:
  tier: 2
  members:{members}
""")
    return "---\n".join(docs)


def vcjob(name: str, pods: int, *, seconds: int = 300, queue: str = "default", selector: str = "",
          annotations: str = "", tier: int | None = None) -> str:
    node_selector = f"\n        nodeSelector: {{{GPU_MODEL}: {selector}}}" if selector else ""
    meta = f"\n  annotations: {{{annotations}}}" if annotations else ""
    topology = f"\n  networkTopology: {{mode: hard, highestTierAllowed: {tier}}}" if tier else ""
    return f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}{meta}
spec:
  schedulerName: volcano
  queue: {queue}
  minAvailable: {pods}{topology}
  tasks:
  - name: worker
    replicas: {pods}
    template:
      metadata: {{annotations: {{pumice.io/duration: "{seconds}"}}}}
      spec:{node_selector}
        containers:
        - name: w
          image: busybox
          resources: {{requests: {{cpu: "1", nvidia.com/gpu: "8"}}, limits: {{nvidia.com/gpu: "8"}}}}
"""


def pumice(*args: str, timeout: float = 90) -> str:
    proc = subprocess.run([sys.executable, "-m", "pumice.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)
    assert proc.returncode == 0, f"pumice {' '.join(args)}: {proc.stderr.strip()[-2000:]}"
    return proc.stdout


@dataclass
class Federation:
    host: Path
    members: dict[str, Path]  # member -> kubeconfig
    data: dict[str, Path]  # pumice up member -> data dir

    def placed(self, job: str) -> str:
        return kubectl(self.host, "get", "vcjob", job, "-o",
                       r"jsonpath={.metadata.labels.federation\.pumice\.io/cluster}", check=False)

    def describe(self) -> str:
        """Every host job's member, phase and reason (for failure messages)."""
        items = json.loads(kubectl(self.host, "get", "vcjob", "-o", "json"))["items"]
        return "; ".join(f"{j['metadata']['name']}@{(j['metadata'].get('labels') or {}).get(CLUSTER, '-')} "
                         f"{(j.get('status') or {}).get('state', {}).get('phase')} "
                         f"{(j.get('status') or {}).get('state', {}).get('message', '')[:200]}" for j in items)

    def phase(self, job: str) -> str:
        return kubectl(self.host, "get", "vcjob", job, "-o", "jsonpath={.status.state.phase}", check=False)


@pytest.fixture(scope="module")
def federation(kube120: Kube120, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    base = tmp_path_factory.mktemp("federation")
    data: dict[str, Path] = {}
    run: PumiceRun | None = None
    try:
        for name, (model, _, _, leaf) in MEMBERS.items():
            (base / f"{name}.yaml").write_text(nodes_and_blocks(name, model, leaf))
            data[name] = base / name
            pumice("up", "-d", "--data-dir", str(data[name]), "--port", "0", "--time-scale", "10",
                   "-f", str(base / f"{name}.yaml"))
        model, _, _, leaf = KUBE_MEMBER
        kubectl(kube120.kubeconfig, "apply", "-f", "-", input=nodes_and_blocks("kube", model, leaf, fake=True))
        run = PumiceRun(kube120.kubeconfig, base / "run.log",
                        ("--components", "scheduler,controllers,nodes", "--time-scale", "10")).start()
        run.wait_for_log("pumice run: scheduler, controllers, nodes")
        (base / "federation.yaml").write_text(FAST)
        data["host"] = base / "host"
        pumice("up", "-d", "--data-dir", str(data["host"]), "--port", "0", "--federation",
               "--federation-config", str(base / "federation.yaml"))
        host = data["host"] / "kubeconfig"
        members = {name: data[name] / "kubeconfig" for name in MEMBERS} | {"kube": kube120.kubeconfig}
        clusters = []
        for name, (_, region, price, _) in (MEMBERS | {"kube": KUBE_MEMBER}).items():
            if name == "kube":  # its kubeconfig from a Secret on the host
                secret = base64.b64encode(kube120.kubeconfig.read_bytes()).decode()
                kubectl(host, "create", "namespace", "pumice-system")
                kubectl(host, "apply", "-f", "-", input=json.dumps({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "kube-kubeconfig", "namespace": "pumice-system"},
                    "data": {"kubeconfig": secret}}))
                source = {"secretRef": {"namespace": "pumice-system", "name": "kube-kubeconfig"}}
            else:
                source = {"file": str(members[name])}
            clusters.append({"apiVersion": "federation.pumice.io/v1alpha1", "kind": "Cluster",
                             "metadata": {"name": name, "labels": {"topology.kubernetes.io/region": region}},
                             "spec": {"kubeconfig": source, "cost": {"nvidia.com/gpu": price}}})
        kubectl(host, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": clusters}))

        def ready() -> bool:
            out = kubectl(host, "get", "clusters", "-o", "json")
            items = json.loads(out)["items"]
            return len(items) == 4 and all(
                (i.get("status") or {}).get("resourceSummary", {}).get("readyNodes") == 4 for i in items)

        eventually(ready, 60, "four members answering with four ready nodes each")
        yield Federation(host, members, data)
    finally:
        for name in ("host", *MEMBERS):
            if name in data:
                subprocess.run([sys.executable, "-m", "pumice.cli.main", "down", "--data-dir", str(data[name])],
                               capture_output=True, timeout=60, cwd=REPO)
        if run is not None:
            run.stop()


def test_jobs_land_where_the_policy_says(federation: Federation) -> None:
    fed = federation
    # the ring first, on empty members: only the topology can tell them apart (every member has 4 free nodes)
    kubectl(fed.host, "apply", "-f", "-", input=vcjob("ring", 4, tier=1))
    eventually(lambda: fed.placed("ring"), 60, "ring dispatched")
    explained = pumice("federation", "explain", "ring", "--kubeconfig", str(fed.host))
    assert "dispatched to kube" in explained, explained
    rejected = [line for line in explained.splitlines() if " rejected " in line]
    assert len(rejected) == 3 and all("network-topology" in line and "tier <= 1" in line for line in rejected), \
        explained
    jobs = [vcjob("h100", 2, selector="H100"),
            vcjob("near-eu", 1, annotations="federation.pumice.io/region-affinity: eu-west"), vcjob("cheap", 1)]
    kubectl(fed.host, "apply", "-f", "-", input="---\n".join(jobs))
    started = ("Running", "Completed")  # members run 10 times faster than the wall clock
    try:
        eventually(lambda: all(fed.phase(j) in started for j in ("h100", "near-eu", "ring", "cheap")), 60,
                   "all four started")
    except AssertionError as err:
        raise AssertionError(f"{err}: {fed.describe()}") from None
    assert {j: fed.placed(j) for j in ("h100", "near-eu", "ring", "cheap")} == {
        "h100": "west", "near-eu": "eu", "ring": "kube", "cheap": "east"}
    table = kubectl(fed.host, "get", "vcjob", "ring")
    assert table.split()[:6] == ["NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE", "CLUSTER"]
    pods = json.loads(kubectl(fed.members["kube"], "get", "pods", "-o", "json"))["items"]
    ring = [p for p in pods if p["metadata"]["name"].startswith("ring-")]
    assert len(ring) == 4 and {p["spec"]["nodeName"] for p in ring} == {f"kube-{i}" for i in range(4)}
    eventually(lambda: all(fed.phase(j) == "Completed" for j in ("h100", "near-eu", "ring", "cheap")), 90,
               "all four completed")


def _cordon(fed: Federation, unschedulable: bool) -> None:
    patch = json.dumps({"spec": {"unschedulable": unschedulable}})
    for name in fed.members:
        kubectl(fed.host, "patch", "clusters.federation.pumice.io", name, "--type", "merge", "-p", patch)


def test_queue_shares_hold_across_members(federation: Federation) -> None:
    fed = federation
    queues = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
               "spec": {"weight": w, "reclaimable": True}} for q, w in (("big", 3), ("small", 1))]
    kubectl(fed.host, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": queues}))
    names = [f"{q}-{i}" for i in range(16) for q in ("big", "small")]
    # the members cordoned while the 32 jobs arrive: shares decide among jobs that wait together (free
    # members would take the first arrivals as they come, whatever their queue)
    _cordon(fed, True)
    try:
        kubectl(fed.host, "apply", "-f", "-",
                input="---\n".join(vcjob(name, 1, queue=name.split("-")[0], seconds=3600) for name in names))
        eventually(lambda: set(names) <= {n.rpartition("/")[2] for n in
                                          kubectl(fed.host, "get", "vcjob", "-o", "name").split()}, 30,
                   "the 32 jobs on the host")
        assert not any(fed.placed(name) for name in names)
        time.sleep(2)  # a dispatch cycle sees them all waiting
        _cordon(fed, False)

        def held() -> dict[str, set[str]]:
            out: dict[str, set[str]] = {"big": set(), "small": set()}
            for name in names:
                member = fed.placed(name)
                if member:
                    out[name.split("-")[0]].add(f"{name}@{member}")
            return out

        eventually(lambda: len(held()["big"]) + len(held()["small"]) == 16, 60, "the 16 nodes taken")
        now = held()
        # 3 to 1 of the federation's 128 GPUs: 12 to 4, within one job (members are uncordoned one by one)
        assert len(now["big"]) + len(now["small"]) == 16 and abs(len(now["big"]) - 12) <= 1, now
        assert len({j.split("@")[1] for j in now["big"]}) == 4  # a share no single member could give
    finally:
        _cordon(fed, False)
        for name in names:
            kubectl(fed.host, "delete", "vcjob", name, "--wait=false", "--ignore-not-found")

    def copies() -> list[str]:
        return [name for member in fed.members.values()
                for name in kubectl(member, "get", "vcjob", "-o", "jsonpath={.items[*].metadata.name}").split()
                if name.startswith(("big-", "small-"))]

    eventually(lambda: not copies(), 60, "the copies removed from every member")


def test_a_killed_member_has_its_jobs_finished_elsewhere(federation: Federation) -> None:
    fed = federation
    kubectl(fed.host, "apply", "-f", "-", input=vcjob("survivor", 2, seconds=600,
                                                       annotations="federation.pumice.io/region-affinity: eu-west"))
    eventually(lambda: fed.phase("survivor") == "Running", 60, "survivor running")
    assert fed.placed("survivor") == "eu"
    pid = json.loads((fed.data["eu"] / "pumice.pid").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)  # the member dies mid-run, nothing of it answers any more
    eventually(lambda: fed.placed("survivor") not in ("", "eu"), 60, "survivor moved")
    eventually(lambda: fed.phase("survivor") == "Completed", 90, "survivor completed elsewhere")
    events = kubectl(fed.host, "get", "events", "--field-selector", "involvedObject.name=survivor", "-o",
                     "jsonpath={.items[*].reason}").split()
    assert "ClusterLost" in events and "Redispatching" in events
    status = json.loads(kubectl(fed.host, "get", "cluster", "eu", "-o", "json"))["status"]
    assert status["conditions"][0]["status"] == "False"
    every = json.loads(kubectl(fed.host, "get", "vcjob", "-o", "json"))["items"]
    names = {j["metadata"]["name"] for j in every}
    assert {"h100", "near-eu", "ring", "cheap", "survivor"} <= names  # nothing lost on the host
    assert all((j.get("status") or {}).get("state", {}).get("phase") == "Completed" for j in every
               if j["metadata"]["name"] in {"h100", "near-eu", "ring", "cheap", "survivor"})


def test_depends_on_across_members(federation: Federation) -> None:
    """A job in the real cluster, and one in a pumice up member that may start only once the first completed."""
    fed = federation
    first = vcjob("extract", 1, seconds=100, annotations="federation.pumice.io/cluster-selector: "
                                                         "topology.kubernetes.io/region=ap-south")
    second = vcjob("train", 1, seconds=100, annotations="federation.pumice.io/cluster-selector: "
                                                        "topology.kubernetes.io/region=us-east, "
                                                        "federation.pumice.io/depends-on: extract")
    kubectl(fed.host, "apply", "-f", "-", input=first + "---\n" + second)
    eventually(lambda: fed.phase("extract") == "Running", 60, "extract running")
    assert fed.placed("extract") == "kube"
    reason = kubectl(fed.host, "get", "vcjob", "train", "-o", "jsonpath={.status.state.reason}")
    assert reason == "DependencyPending" and not fed.placed("train")

    def extract_done() -> bool:
        train_placed = fed.placed("train")  # read first: it may not be placed before extract is seen Completed
        done = fed.phase("extract") == "Completed"
        assert done or not train_placed, f"train dispatched to {train_placed} before extract completed"
        return done

    eventually(extract_done, 60, "extract completed in the real cluster")
    eventually(lambda: fed.phase("train") == "Completed", 60, "train completed after it")
    assert fed.placed("train") == "east"
