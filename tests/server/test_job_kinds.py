"""MPI, PyTorch and TensorFlow jobs and a JobFlow end to end: ``pumice up`` on loopback, the real kubectl.

What a user would check on a cluster: the env each pod carries, the MPI hostfile and SSH keys, the
Services, the jobs running to Completed, a cyclic JobFlow refused, and the story of a job in
``kubectl get events`` / ``kubectl describe``.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from pumice.cli.up import ControlPlane
from pumice.server import free_port

from .conftest import KUBECTL
from .test_up import kubectl

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "jobs"

CYCLE = """\
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: cyclic
spec:
  flows:
  - name: prepare
    dependsOn: {targets: [evaluate]}
  - name: train
    dependsOn: {targets: [prepare]}
  - name: evaluate
    dependsOn: {targets: [train]}
"""


def get_json(directory: Path, *args: str) -> Any:
    return json.loads(kubectl(directory, "get", *args, "-o", "json").stdout)


def wait_for(what: str, check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
        except AssertionError:
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.1)


def env_of(pod: dict[str, Any], container: int = 0) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][container]["env"]}


def job_phase(directory: Path, name: str) -> str:
    job = get_json(directory, "vcjob", name)
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Any:
    directory = tmp_path_factory.mktemp("up")
    with ControlPlane(directory, port=free_port(), time_scale=5) as running:
        kubectl(directory, "apply", "-f", str(EXAMPLES / "00-cluster.yaml"))
        yield directory, running


def test_mpi_job_hostfile_keys_service_and_completion(plane: Any) -> None:
    directory, _ = plane
    kubectl(directory, "apply", "-f", str(EXAMPLES / "20-mpi.yaml"))
    master = wait_for("the MPI master pod", lambda: get_json(directory, "pod", "lm-mpi-job-mpimaster-0"))
    # at once, in one call: the plugins' objects go with the job when it completes (40 s at x5)
    made = {(o["kind"], o["metadata"]["name"]): o for o in get_json(
        directory, "secret/lm-mpi-job-ssh", "configmap/lm-mpi-job-svc", "service/lm-mpi-job",
        "networkpolicy/lm-mpi-job", "vcjob/lm-mpi-job")["items"]}
    assert set(made[("Job", "lm-mpi-job")]["spec"]["plugins"]) == {"ssh", "svc"}
    hosts = made[("ConfigMap", "lm-mpi-job-svc")]["data"]
    assert hosts["mpiworker.host"] == "lm-mpi-job-mpiworker-0.lm-mpi-job\nlm-mpi-job-mpiworker-1.lm-mpi-job"
    assert hosts["VC_MPIWORKER_NUM"] == "2"
    mounts = {m["mountPath"] for m in master["spec"]["containers"][0]["volumeMounts"]}
    assert {"/etc/volcano", "/root/.ssh"} <= mounts
    assert master["spec"]["hostname"] == "lm-mpi-job-mpimaster-0" and master["spec"]["subdomain"] == "lm-mpi-job"
    assert env_of(master)["VC_MPIWORKER_HOSTS"] == {
        "configMapKeyRef": {"name": "lm-mpi-job-svc", "key": "VC_MPIWORKER_HOSTS"}}
    service = made[("Service", "lm-mpi-job")]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"volcano.sh/job-name": "lm-mpi-job", "volcano.sh/job-namespace": "default"}
    assert made[("NetworkPolicy", "lm-mpi-job")]["spec"]["policyTypes"] == ["Ingress"]
    data = made[("Secret", "lm-mpi-job-ssh")]["data"]
    secret = {k: base64.b64decode(v).decode() for k, v in data.items()}
    key = serialization.load_pem_private_key(secret["id_rsa"].encode(), password=None)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    assert secret["authorized_keys"].strip() == public.decode()
    assert "Host lm-mpi-job-mpiworker-1\n  HostName lm-mpi-job-mpiworker-1.lm-mpi-job\n  Port 22\n" in secret["config"]
    wait_for("lm-mpi-job Completed", lambda: job_phase(directory, "lm-mpi-job") == "Completed", timeout=60)
    # the story, with the real kubectl
    def story() -> str:  # the phase event follows the status write: wait for it too
        events = kubectl(directory, "get", "events", "--field-selector", "involvedObject.name=lm-mpi-job").stdout
        return events if all(r in events for r in ("Running", "Completing", "Completed", "ExecuteAction")) else ""

    wait_for("the job's story in kubectl get events", story)
    described = kubectl(directory, "describe", "vcjob", "lm-mpi-job").stdout
    assert "Start to execute action CompleteJob" in described and "vc-controller-manager" in described
    assert "PRIVATE KEY" not in kubectl(directory, "get", "events", "-o", "yaml").stdout


def test_pytorch_job_env_init_container_and_service(plane: Any) -> None:
    directory, _ = plane
    kubectl(directory, "apply", "-f", str(EXAMPLES / "30-pytorch.yaml"))
    worker = wait_for("a PyTorch worker", lambda: get_json(directory, "pod", "pytorch-job-worker-1"))
    env = env_of(worker)
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]) == (
        "pytorch-job-master-0.pytorch-job", "23456", "3", "2")
    master = get_json(directory, "pod", "pytorch-job-master-0")
    assert env_of(master)["RANK"] == "0"
    assert any(p["containerPort"] == 23456 and p["name"] == "pytorchjob-port"
               for p in master["spec"]["containers"][0]["ports"])
    assert [c["name"] for c in worker["spec"].get("initContainers") or []] == ["wait-for-master"]
    assert "initContainers" not in master["spec"]
    assert get_json(directory, "service", "pytorch-job")["spec"]["clusterIP"] == "None"
    wait_for("pytorch-job Completed", lambda: job_phase(directory, "pytorch-job") == "Completed", timeout=60)


def test_tensorflow_job_tf_config(plane: Any) -> None:
    directory, _ = plane
    kubectl(directory, "apply", "-f", str(EXAMPLES / "40-tensorflow.yaml"))
    worker = wait_for("a TensorFlow worker", lambda: get_json(directory, "pod", "tf-job-worker-1"))
    assert env_of(worker)["TF_CONFIG"] == (
        '{"cluster":{"ps":["tf-job-ps-0.tf-job:2222"],"worker":["tf-job-worker-0.tf-job:2222",'
        '"tf-job-worker-1.tf-job:2222"]},"task":{"type":"worker","index":1}}')
    ps = get_json(directory, "pod", "tf-job-ps-0")
    assert json.loads(env_of(ps)["TF_CONFIG"])["task"] == {"type": "ps", "index": 0}
    wait_for("tf-job Completed", lambda: job_phase(directory, "tf-job") == "Completed", timeout=60)


def test_jobflow_with_a_cycle_is_refused_and_a_dag_runs(plane: Any, tmp_path: Path) -> None:
    directory, _ = plane
    (tmp_path / "cycle.yaml").write_text(CYCLE)
    refused = kubectl(directory, "apply", "-f", str(tmp_path / "cycle.yaml"), check=False)
    assert refused.returncode != 0 and "jobflow Flow is not DAG" in refused.stderr
    kubectl(directory, "apply", "-f", str(EXAMPLES / "70-jobflow.yaml"))
    assert kubectl(directory, "get", "jt", "--no-headers").stdout.split()[::2] == ["evaluate", "prepare", "train"]
    wait_for("the flow succeeded", lambda: get_json(directory, "jf", "pipeline").get("status", {}).get("state", {})
             .get("phase") == "Succeed", timeout=90)
    header = kubectl(directory, "get", "jf").stdout.splitlines()[0].split()
    assert header == ["NAME", "STATUS", "AGE"]
    status = get_json(directory, "jf", "pipeline")["status"]
    assert status["completedJobs"] == ["pipeline-evaluate", "pipeline-prepare", "pipeline-train"]
    described = kubectl(directory, "describe", "jf", "pipeline").stdout
    assert "create a job named pipeline-train!" in described
    assert "cyclic" not in kubectl(directory, "get", "jf").stdout
