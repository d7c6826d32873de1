"""``kubectl apply --server-side`` and chunked lists: the same kubectl sequence against pumice's API server
and a real kube-apiserver 1.20, with the same outcomes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import HAVE_KUBE120, Cluster, _kube_apiserver, _pumice_server

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")


def _cm(data: dict[str, str]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "settings", "namespace": "default", "labels": {"app": "demo"}},
                       "data": data})


def _queue(weight: int) -> str:
    return json.dumps({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"},
                       "spec": {"weight": weight, "reclaimable": True}})


def _job(min_available: int, replicas: int) -> str:
    return json.dumps({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "annotations": {"team": "ml"}},
        "spec": {"minAvailable": min_available, "schedulerName": "volcano", "queue": "default",
                 "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {
                     "restartPolicy": "Never",
                     "containers": [{"name": "w", "image": "busybox", "command": ["sleep", "60"]}]}}}]}})


def _sequence(cluster: Cluster, work: Path) -> dict[str, Any]:
    """Run the kubectl steps; return what a user sees of each (exit codes, conflicts, values, owners)."""
    out: dict[str, Any] = {}

    def kubectl(name: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", str(cluster.kubeconfig), "--cache-dir",
                               str(work / "cache"), *args], input=stdin, capture_output=True, text=True,
                              timeout=60, check=False)
        first = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else ""
        out[name] = {"rc": proc.returncode, "stdout": proc.stdout.strip(), "error": first}
        return proc

    def get(kind: str, name: str) -> dict[str, Any]:
        proc = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", str(cluster.kubeconfig), "--cache-dir",
                               str(work / "cache"), "get", kind, name, "-o", "json", "--show-managed-fields"],
                              capture_output=True, text=True, timeout=60, check=True)
        return json.loads(proc.stdout)

    def applied(obj: dict[str, Any]) -> dict[str, Any]:
        return {e["manager"]: e.get("fieldsV1") for e in obj["metadata"].get("managedFields") or []
                if e.get("operation") == "Apply"}

    def managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
        return sorted((e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or [])

    ssa = ("apply", "--server-side", "-f", "-")
    kubectl("cm create", *ssa, stdin=_cm({"a": "1", "b": "2"}))
    kubectl("cm reapply", *ssa, stdin=_cm({"a": "1", "b": "2"}))
    kubectl("cm drop b", *ssa, stdin=_cm({"a": "1"}))
    cm = get("configmap", "settings")
    out["cm data after drop"] = cm.get("data")
    out["cm owners after drop"] = applied(cm)
    kubectl("cm other manager", *ssa, "--field-manager=other", stdin=_cm({"a": "9"}))
    kubectl("cm other manager forced", *ssa, "--field-manager=other", "--force-conflicts", stdin=_cm({"a": "9"}))
    cm = get("configmap", "settings")
    out["cm data after force"] = cm.get("data")
    out["cm owners after force"] = applied(cm)
    out["cm managers"] = managers(cm)

    kubectl("queue create", "create", "-f", "-", stdin=_queue(1))
    kubectl("queue apply other weight", *ssa, stdin=_queue(2))
    kubectl("queue apply same weight", *ssa, stdin=_queue(1))
    kubectl("queue apply forced", *ssa, "--force-conflicts", stdin=_queue(3))
    queue = get("queue", "team")
    out["queue weight"] = queue["spec"]["weight"]
    out["queue managers"] = managers(queue)
    out["queue owners"] = applied(queue)

    kubectl("job create", *ssa, stdin=_job(2, 2))
    kubectl("job modify", *ssa, stdin=_job(1, 3))
    job = get("vcjob", "train")
    out["job spec"] = (job["spec"]["minAvailable"], job["spec"]["tasks"][0]["replicas"], job["metadata"]["annotations"])
    out["job owners"] = applied(job)

    for i in range(5):
        kubectl(f"cm {i}", "create", "configmap", f"chunk-{i}", f"--from-literal=i={i}")
    kubectl("chunked list", "get", "configmaps", "--chunk-size=2", "-o", "name")
    return out


def test_server_side_apply_and_chunked_lists_as_on_kube_apiserver(tmp_path_factory: pytest.TempPathFactory) -> None:
    if not HAVE_KUBE120:
        pytest.skip("kube-apiserver 1.20 is not built")
    outcomes = {}
    for kind, start in (("pumice", _pumice_server), ("kube", _kube_apiserver)):
        servers = start(tmp_path_factory)
        cluster = next(servers)
        try:
            outcomes[kind] = _sequence(cluster, tmp_path_factory.mktemp(kind))
        finally:
            servers.close()
    pumice, kube = outcomes["pumice"], outcomes["kube"]
    for step in kube:
        assert pumice[step] == kube[step], step
    # what the comparison covers, in a user's words
    assert kube["cm data after drop"] == {"a": "1"}
    assert kube["cm other manager"]["rc"] != 0 and "conflict" in kube["cm other manager"]["error"]
    assert kube["queue apply other weight"]["rc"] != 0 and kube["queue weight"] == 3
    assert kube["chunked list"]["stdout"].count("configmap/chunk-") == 5
