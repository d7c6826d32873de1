"""The everyday kubectl verbs with the real kubectl against ``pumice up`` (issue 18's "done when").

apply twice (the second an unchanged manifest: no change, Volcano's issue #2238), diff (server-side dry run),
explain, auth can-i, get / describe / label / annotate / patch / cordon / drain / wait / delete, refusals printed as
kubectl prints kube-apiserver's, and a namespace deleted with what is in it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pumice.cli.up import ControlPlane
from pumice.server import free_port

from .conftest import KUBECTL

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")

NODES = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {capacity: {cpu: "8", memory: 16Gi, pods: "110"}, allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
status: {capacity: {cpu: "8", memory: 16Gi, pods: "110"}, allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
"""
JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: default
  policies: [{event: PodEvicted, action: RestartJob}]
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox:1.36
          command: [sh, -c, "sleep 3600"]
          resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "1", memory: 1Gi}}
"""


def kubectl(plane: ControlPlane, *args: str, check: bool = True, input: str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    cache = plane.data_dir / "kcache"
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(plane.kubeconfig), "--cache-dir", str(cache), *args],
                          capture_output=True, text=True, timeout=timeout, check=False, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> ControlPlane:
    directory = tmp_path_factory.mktemp("up")
    with ControlPlane(directory, port=free_port(), time_scale=1) as running:
        yield running


def test_apply_twice_diff_and_dry_run(plane: ControlPlane, tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(NODES)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(JOB)
    kubectl(plane, "apply", "-f", str(tmp_path / "nodes.yaml"))
    assert "job.batch.volcano.sh/train created" in kubectl(plane, "apply", "-f", str(manifest)).stdout
    before = json.loads(kubectl(plane, "get", "vcjob", "train", "-o", "json").stdout)
    # Refused before issue 18 (Volcano's issue #2238). kubectl sends the task list again (the live one has the
    # defaults the create added), so it says "configured"; the job does not change.
    again = kubectl(plane, "apply", "-f", str(manifest))
    assert "job.batch.volcano.sh/train" in again.stdout
    after = json.loads(kubectl(plane, "get", "vcjob", "train", "-o", "json").stdout)
    assert after["spec"] == before["spec"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]  # the spec was not written
    # kubectl diff: nothing to show for the unchanged manifest (exit 0), a diff for a changed one (exit 1)
    assert kubectl(plane, "diff", "-f", str(manifest)).returncode == 0
    changed = tmp_path / "changed.yaml"
    changed.write_text(JOB.replace("replicas: 2", "replicas: 3"))
    diff = kubectl(plane, "diff", "-f", str(changed), check=False)
    assert diff.returncode == 1 and "+    replicas: 3" in diff.stdout, diff.stderr
    dry = kubectl(plane, "apply", "-f", str(changed), "--dry-run=server")
    assert "(server dry run)" in dry.stdout
    assert kubectl(plane, "get", "vcjob", "train", "-o", "jsonpath={.spec.tasks[0].replicas}").stdout == "2"
    image = tmp_path / "image.yaml"
    image.write_text(JOB.replace("busybox:1.36", "busybox:1.37"))
    refused = kubectl(plane, "apply", "-f", str(image), check=False)
    assert refused.returncode == 1
    assert 'admission webhook "validatejob.volcano.sh" denied the request' in refused.stderr
    assert "job updates may only change minAvailable" in refused.stderr


def test_explain_and_auth_can_i(plane: ControlPlane) -> None:
    explained = kubectl(plane, "explain", "vcjob.spec").stdout
    assert "minAvailable" in explained and "tasks" in explained and "<integer>" in explained
    assert "minMember" in kubectl(plane, "explain", "podgroup.spec").stdout
    assert "containers" in kubectl(plane, "explain", "pod.spec").stdout
    assert kubectl(plane, "auth", "can-i", "create", "pods").stdout.strip() == "yes"
    assert kubectl(plane, "auth", "can-i", "delete", "vcjob", "-n", "default").stdout.strip() == "yes"
    listed = kubectl(plane, "auth", "can-i", "--list").stdout
    assert "*.*" in listed


def test_refusals_read_as_kube_apiservers(plane: ControlPlane, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("""
apiVersion: v1
kind: Pod
metadata: {name: Bad-Name, labels: {"a b": x}}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "-4"}}}]
""")
    refused = kubectl(plane, "apply", "-f", str(bad), check=False)
    assert refused.returncode == 1
    assert 'The Pod "Bad-Name" is invalid:' in refused.stderr
    assert "metadata.name: Invalid value" in refused.stderr and "metadata.labels: Invalid value" in refused.stderr
    assert "must be greater than or equal to 0" in refused.stderr
    lots = tmp_path / "lots.yaml"
    lots.write_text("""
apiVersion: v1
kind: Pod
metadata: {name: lots}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: lots}}}]
""")
    refused = kubectl(plane, "create", "-f", str(lots), "--validate=false", check=False)
    assert refused.returncode == 1 and "Error from server (BadRequest)" in refused.stderr
    nowhere = kubectl(plane, "run", "p", "--image=busybox", "-n", "nowhere", check=False)
    assert nowhere.returncode == 1 and 'namespaces "nowhere" not found' in nowhere.stderr


def test_get_describe_label_annotate_patch_cordon_drain_wait_delete(plane: ControlPlane, tmp_path: Path) -> None:
    if "train" not in kubectl(plane, "get", "vcjob", "-o", "name").stdout:
        (tmp_path / "nodes.yaml").write_text(NODES)
        (tmp_path / "job.yaml").write_text(JOB)
        kubectl(plane, "apply", "-f", str(tmp_path / "nodes.yaml"), "-f", str(tmp_path / "job.yaml"))
    kubectl(plane, "wait", "--for=condition=PodScheduled", "pod/train-worker-0", "pod/train-worker-1",
            "--timeout=30s")
    kubectl(plane, "wait", "--for=jsonpath={.status.state.phase}=Running", "vcjob/train", "--timeout=30s")
    assert "train-worker-0" in kubectl(plane, "get", "pods").stdout
    assert "Worker" in kubectl(plane, "describe", "vcjob", "train").stdout or "worker" in kubectl(
        plane, "describe", "vcjob", "train").stdout
    kubectl(plane, "label", "vcjob", "train", "team=ml")
    assert kubectl(plane, "get", "vcjob", "-l", "team=ml", "-o", "name").stdout.strip() == \
        "job.batch.volcano.sh/train"
    kubectl(plane, "annotate", "node", "n1", "example.com/owner=ops")
    refused = kubectl(plane, "label", "node", "n1", "bad key=x", check=False)
    assert refused.returncode == 1 and "Invalid value" in refused.stderr
    kubectl(plane, "patch", "node", "n2", "-p", '{"metadata":{"labels":{"zone":"b"}}}')
    assert kubectl(plane, "get", "node", "n2", "-o", "jsonpath={.metadata.labels.zone}").stdout == "b"
    node = kubectl(plane, "get", "pod", "train-worker-0", "-o", "jsonpath={.spec.nodeName}").stdout
    kubectl(plane, "cordon", node)
    assert kubectl(plane, "get", "node", node, "-o", "jsonpath={.spec.unschedulable}").stdout == "true"
    drained = kubectl(plane, "drain", node, "--force", "--ignore-daemonsets", "--timeout=60s", check=False)
    assert drained.returncode == 0, drained.stderr
    kubectl(plane, "uncordon", node)
    kubectl(plane, "delete", "vcjob", "train", "--wait=true", "--timeout=60s")
    assert "train" not in kubectl(plane, "get", "vcjob", "-o", "name").stdout


def test_a_deleted_namespace_takes_its_objects_with_it(plane: ControlPlane) -> None:
    kubectl(plane, "create", "namespace", "scratch")
    kubectl(plane, "create", "configmap", "settings", "-n", "scratch", "--from-literal=a=b")
    kubectl(plane, "delete", "namespace", "scratch", "--wait=true", "--timeout=30s")
    assert kubectl(plane, "get", "namespace", "scratch", check=False).returncode == 1
    assert kubectl(plane, "get", "configmap", "settings", "-n", "scratch", check=False).returncode == 1
