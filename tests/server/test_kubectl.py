"""The real kubectl against the server: apply the quick-start, get (with printer columns), describe, delete."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .conftest import KUBECTL, Api

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")

QUICKSTART = "scenarios/quickstart"

HYPERNODE = """\
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: rack-1
spec:
  tier: 1
  tierName: rack
  members:
  - type: Node
    selector:
      exactMatch: {name: k3d-agent-0}
"""

PODGROUP = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: pg-1
  namespace: default
spec:
  minMember: 2
  queue: queue-a
"""


def _header(output: str) -> list[str]:
    return output.splitlines()[0].split()


def test_apply_the_quickstart_and_get_with_columns(api: Api, shared: Path, tmp_path: Path) -> None:
    files = sorted((shared / QUICKSTART).glob("*.yaml"))
    assert files, "the quick-start scenarios are missing"
    for path in files:
        out = api.kubectl("apply", "-f", str(path)).stdout
        assert "created" in out or "configured" in out or "unchanged" in out
    again = api.kubectl("apply", "-f", str(shared / QUICKSTART / "02-queues.yaml")).stdout
    assert "unchanged" in again

    jobs = api.kubectl("get", "vcjob", "-A").stdout
    assert _header(jobs) == ["NAMESPACE", "NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE"]
    assert "hello-volcano-job" in jobs
    wide = api.kubectl("get", "vj", "-o", "wide").stdout
    assert _header(wide)[-1] == "QUEUE" and "queue-a" in wide

    queues = api.kubectl("get", "queues").stdout
    assert _header(queues) == ["NAME", "PARENT"]
    assert {"queue-a", "queue-b"} <= {line.split()[0] for line in queues.splitlines()[1:]}
    assert "queue-a" in api.kubectl("get", "q", "queue-a", "-o", "name").stdout

    nodes = api.kubectl("get", "nodes").stdout
    assert _header(nodes) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"] and "control-plane" in nodes

    (tmp_path / "hn.yaml").write_text(HYPERNODE)
    (tmp_path / "pg.yaml").write_text(PODGROUP)
    api.kubectl("apply", "-f", str(tmp_path / "hn.yaml"))
    api.kubectl("apply", "-f", str(tmp_path / "pg.yaml"))
    hypernodes = api.kubectl("get", "hypernodes").stdout
    assert _header(hypernodes) == ["NAME", "TIER", "TIERNAME", "NODECOUNT", "AGE"]
    assert hypernodes.splitlines()[1].split()[:3] == ["rack-1", "1", "rack"]
    assert "rack-1" in api.kubectl("get", "hn").stdout
    pgs = api.kubectl("get", "pg").stdout
    assert _header(pgs) == ["NAME", "STATUS", "MINMEMBER", "RUNNINGS", "AGE"]
    assert pgs.splitlines()[1].split()[:2] == ["pg-1", "2"]

    pods = api.kubectl("get", "pods", "-o", "wide").stdout
    assert "No resources found" in pods + api.kubectl("get", "pods", "-o", "wide").stderr
    api.kubectl("run", "p1", "--image=busybox", "--restart=Never")
    pods = api.kubectl("get", "pods", "-o", "wide").stdout
    assert _header(pods)[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert pods.splitlines()[1].split()[:3] == ["p1", "0/1", "Pending"]


def test_describe_and_delete_a_job(api: Api, shared: Path) -> None:
    api.kubectl("apply", "-f", str(shared / QUICKSTART / "01-hello-job.yaml"))
    described = api.kubectl("describe", "vcjob", "hello-volcano-job").stdout
    assert "Name:         hello-volcano-job" in described
    assert re.search(r"^Kind:\s+Job$", described, re.M) and re.search(r"Min Available:\s+1$", described, re.M)
    out = api.kubectl("delete", "vcjob", "hello-volcano-job").stdout
    assert 'job.batch.volcano.sh "hello-volcano-job" deleted' in out
    missing = api.kubectl("get", "vcjob", "hello-volcano-job", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_kubectl_without_credentials_is_refused(api: Api, tmp_path: Path) -> None:
    text = api.kubeconfig.read_text().replace("test-token", "bad-token")
    bad = tmp_path / "bad-kubeconfig"
    bad.write_text(text)
    assert KUBECTL is not None
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(bad), "--cache-dir", str(tmp_path / "c"), "get", "pods"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0 and ("Unauthorized" in proc.stderr or "credentials" in proc.stderr)


def test_typed_create_commands_send_protobuf_and_work(api: Api) -> None:
    api.kubectl("create", "namespace", "team")
    api.kubectl("create", "configmap", "cm", "-n", "team", "--from-literal=a=b")
    api.kubectl("create", "secret", "generic", "s", "-n", "team", "--from-literal=k=v")
    api.kubectl("create", "priorityclass", "high", "--value=1000", "--description=urgent")
    assert api.store.get("namespaces", None, "team")["metadata"]["name"] == "team"
    assert api.store.get("configmaps", "team", "cm")["data"] == {"a": "b"}
    assert api.store.get("secrets", "team", "s")["data"] == {"k": "dg=="}
    pc = api.store.get("priorityclasses.scheduling.k8s.io", None, "high")
    assert pc["value"] == 1000 and pc["description"] == "urgent"
    assert "team" in api.kubectl("get", "ns").stdout


def _versioned_kubectls() -> list[str]:
    if KUBECTL is None:
        return []
    folder = Path(KUBECTL).resolve().parent
    return sorted(str(p) for p in folder.glob("kubectl.1.*") if p.name in ("kubectl.1.27", "kubectl.1.33"))


@pytest.mark.parametrize("binary", _versioned_kubectls() or [pytest.param("", marks=pytest.mark.skip(
    reason="no versioned kubectl binaries (kubectl.1.27, kubectl.1.33) beside kubectl"))])
def test_old_and_new_kubectl_validate_and_apply(api: Api, shared: Path, tmp_path: Path, binary: str) -> None:
    """1.27 validates against /openapi/v2 (protobuf); 1.33 relies on /openapi/v3's fieldValidation."""
    manifest = tmp_path / "q.yaml"
    manifest.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: qx}\n"
                        "spec: {weight: 1, anything: {goes: here}}\nextraField: 1\n")
    base = [binary, "--kubeconfig", str(api.kubeconfig), "--cache-dir", str(tmp_path / "cache")]
    for args in (["apply", "-f", str(manifest)], ["apply", "-f", str(shared / QUICKSTART / "00-cluster.yaml")],
                 ["apply", "-f", str(manifest)], ["get", "q", "qx", "--no-headers"]):
        proc = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert api.store.get("queues.scheduling.volcano.sh", None, "qx")["spec"]["anything"] == {"goes": "here"}


def test_cordon_taint_and_drain_a_node(api: Api, shared: Path) -> None:
    api.kubectl("apply", "-f", str(shared / QUICKSTART / "00-cluster.yaml"))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "default"},
           "spec": {"nodeName": "k3d-agent-0", "containers": [{"name": "c", "image": "busybox"}]}}
    assert api.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    api.kubectl("taint", "node", "k3d-agent-1", "dedicated=gpu:NoSchedule")
    taints = api.store.get("nodes", None, "k3d-agent-1")["spec"]["taints"]
    assert taints == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    out = api.kubectl("drain", "k3d-agent-0", "--force", "--ignore-daemonsets", "--timeout=30s").stdout
    assert "drained" in out  # typed client: protobuf DeleteOptions
    assert api.store.get("nodes", None, "k3d-agent-0")["spec"]["unschedulable"] is True
    assert api.store.list("pods")[0] == []
    assert "SchedulingDisabled" in api.kubectl("get", "node", "k3d-agent-0").stdout
