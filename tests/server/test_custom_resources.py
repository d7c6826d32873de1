"""The API groups real bundles carry, through the real kubectl: CRDs and their objects (schemas, status
subresource, discovery), PriorityClass under v1beta1, RBAC objects, apps/v1 and batch/v1."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pumice.admission import admitted_memory_store

from .conftest import KUBECTL, Api

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")

CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "crds"

WORKFLOW = """\
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: hello
spec:
  entrypoint: main
  templates:
  - name: main
    resource:
      action: create
      manifest: |
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {generateName: hello-}
"""

PYTORCH = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
spec:
  runPolicy:
    cleanPodPolicy: {policy}
    schedulingPolicy: {{queue: default}}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {{spec: {{containers: [{{name: pytorch, image: torch}}]}}}}
  surprise: dropped
"""

RBAC = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: argo}
rules:
- apiGroups: ["batch.volcano.sh"]
  resources: ["jobs"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: argo}
subjects:
- {kind: ServiceAccount, name: argo, namespace: argo}
roleRef: {kind: Role, name: reader, apiGroup: rbac.authorization.k8s.io}
"""

PRIORITY = """\
apiVersion: scheduling.k8s.io/v1beta1
kind: PriorityClass
metadata: {name: high-pri}
value: 1000
"""


@pytest.fixture
def admitted(make_api: Callable[..., Api]) -> Api:
    return make_api(admitted_memory_store())


def test_a_crd_bundle_applies_and_its_objects_are_served(admitted: Api, tmp_path: Path) -> None:
    api = admitted
    out = api.kubectl("apply", "-f", str(CRDS / "argo-workflows.yaml")).stdout
    assert "customresourcedefinition.apiextensions.k8s.io/workflows.argoproj.io created" in out
    crd = json.loads(api.kubectl("get", "crd", "workflows.argoproj.io", "-o", "json").stdout)
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]} == {"NamesAccepted": "True",
                                                                            "Established": "True"}
    (tmp_path / "wf.yaml").write_text(WORKFLOW)
    assert "workflow.argoproj.io/hello created" in api.kubectl("apply", "-f", str(tmp_path / "wf.yaml")).stdout
    assert "hello" in api.kubectl("get", "wf").stdout  # the CRD's short name, found by discovery
    wf = json.loads(api.kubectl("get", "workflows.argoproj.io", "hello", "-o", "json").stdout)
    assert wf["spec"]["templates"][0]["resource"]["action"] == "create"  # preserved unknown fields kept
    assert "unchanged" in api.kubectl("apply", "-f", str(tmp_path / "wf.yaml")).stdout
    api.kubectl("delete", "-f", str(tmp_path / "wf.yaml"))
    assert "No resources found" in api.kubectl("get", "wf").stderr


def test_a_structural_schema_defaults_prunes_and_refuses(admitted: Api, tmp_path: Path) -> None:
    api = admitted
    api.kubectl("apply", "-f", str(CRDS / "kubeflow-pytorchjob.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(PYTORCH.format(policy="Sometimes"))
    refused = api.kubectl("apply", "-f", str(bad), check=False)
    assert refused.returncode != 0
    assert 'spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes"' in refused.stderr
    good = tmp_path / "good.yaml"
    good.write_text(PYTORCH.format(policy="Running"))
    api.kubectl("apply", "-f", str(good))
    job = json.loads(api.kubectl("get", "pytorchjob", "mnist", "-o", "json").stdout)
    assert "surprise" not in job["spec"]  # pruned: the schema does not declare it
    assert job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"] == "torch"
    # the status subresource: status is written there only, and a main write leaves it alone
    api.kubectl("patch", "pytorchjob", "mnist", "--subresource=status", "--type=merge",
                "-p", '{"status": {"conditions": [{"type": "Running", "status": "True"}]}}')
    api.kubectl("patch", "pytorchjob", "mnist", "--type=merge", "-p", '{"status": {"conditions": []}}')
    job = json.loads(api.kubectl("get", "pytorchjob", "mnist", "-o", "json").stdout)
    assert job["status"]["conditions"][0]["type"] == "Running"
    groups = json.loads(api.kubectl("get", "--raw", "/apis/kubeflow.org/v1").stdout)
    names = {r["name"]: r for r in groups["resources"]}
    assert set(names) == {"pytorchjobs", "pytorchjobs/status"} and names["pytorchjobs"]["categories"] == ["kubeflow"]


def test_priorityclass_v1beta1_is_stored_as_v1_and_served_as_both(admitted: Api, tmp_path: Path) -> None:
    api = admitted
    (tmp_path / "pc.yaml").write_text(PRIORITY)
    assert "created" in api.kubectl("apply", "-f", str(tmp_path / "pc.yaml")).stdout
    stored = api.store.get("priorityclasses.scheduling.k8s.io", None, "high-pri")
    assert stored["apiVersion"] == "scheduling.k8s.io/v1" and stored["value"] == 1000
    beta = json.loads(api.kubectl("get", "--raw", "/apis/scheduling.k8s.io/v1beta1/priorityclasses/high-pri").stdout)
    assert beta["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert "high-pri" in api.kubectl("get", "pc").stdout


def test_rbac_objects_are_stored(admitted: Api, tmp_path: Path) -> None:
    api = admitted
    (tmp_path / "rbac.yaml").write_text(RBAC)
    out = api.kubectl("apply", "-f", str(tmp_path / "rbac.yaml")).stdout
    assert "role.rbac.authorization.k8s.io/reader created" in out
    assert "rolebinding.rbac.authorization.k8s.io/reader created" in out
    binding = json.loads(api.kubectl("get", "rolebinding", "reader", "-n", "argo", "-o", "json").stdout)
    assert binding["roleRef"]["name"] == "reader"
    (tmp_path / "rbac2.yaml").write_text(RBAC.replace("name: reader, apiGroup", "name: writer, apiGroup"))
    refused = api.kubectl("apply", "-f", str(tmp_path / "rbac2.yaml"), check=False)
    assert refused.returncode != 0 and "cannot change roleRef" in refused.stderr


def test_deployments_and_jobs_are_served_with_their_columns(admitted: Api, tmp_path: Path) -> None:
    api = admitted
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    (tmp_path / "d.json").write_text(json.dumps(deployment))
    api.kubectl("apply", "-f", str(tmp_path / "d.json"))
    header = api.kubectl("get", "deploy").stdout.splitlines()[0].split()
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    stored = api.store.get("deployments.apps", "default", "web")
    assert stored["spec"]["strategy"] == {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    mismatch = {**deployment, "metadata": {"name": "bad"},
                "spec": {**deployment["spec"], "selector": {"matchLabels": {"app": "other"}}}}
    (tmp_path / "bad.json").write_text(json.dumps(mismatch))
    refused = api.kubectl("apply", "-f", str(tmp_path / "bad.json"), check=False)
    assert refused.returncode != 0 and "`selector` does not match template `labels`" in refused.stderr
