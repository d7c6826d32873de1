"""``pumice crds`` on a real kube-apiserver 1.20: applied with kubectl, Volcano's manifests accepted, wrong
types refused, kubectl's short names and columns as with Volcano's CRDs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.api import KubeObject
from pumice.api.schema import crd_name, custom_kinds, openapi_schema
from pumice.client import ApiError
from tests.conftest import REPO, SHARED

from .conftest import Kube

Obj = dict[str, Any]


def _manifests() -> list[Path]:
    """Every Kubernetes manifest of the shared scenarios and of examples/ (scenario files of ``pumice sim``
    are not manifests: they have no ``kind``)."""
    files = sorted((SHARED / "scenarios").rglob("*.yaml")) + sorted((REPO / "examples").rglob("*.yaml"))
    out = []
    for path in files:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        if docs and all("kind" in d and "apiVersion" in d for d in docs):
            out.append(path)
    return out


MANIFESTS = _manifests()


def test_the_crds_are_established_and_structural(kube: Kube) -> None:
    for model in custom_kinds():
        crd = kube.client.get("customresourcedefinitions.apiextensions.k8s.io", crd_name(model))
        conditions = {c["type"]: c for c in crd["status"].get("conditions") or []}
        assert conditions["Established"]["status"] == "True", crd_name(model)
        assert "NonStructuralSchema" not in conditions, conditions.get("NonStructuralSchema")
    # Applying them again changes nothing (what `kubectl apply` of deploy/ does on an upgrade).
    again = kube.kubectl("apply", "-f", "-", input=kube.pumice("crds").stdout)
    assert all(line.endswith("unchanged") for line in again.stdout.strip().splitlines()), again.stdout


def test_the_shared_scenarios_and_the_examples_are_there() -> None:
    names = {p.name for p in MANIFESTS}
    assert {"01-hello-job.yaml", "02-queues.yaml", "06-depends-on.yaml", "gpu-cluster.yaml"} <= names


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_manifest_is_accepted_by_the_real_apiserver(kube: Kube, path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        namespace = (doc or {}).get("metadata", {}).get("namespace")
        if namespace:  # the examples' namespaces exist on the user's cluster
            kube.kubectl("create", "namespace", namespace, check=False)
    proc = kube.kubectl("apply", "--dry-run=server", "-f", str(path), check=False)
    assert proc.returncode == 0, proc.stderr


def test_kubectl_knows_volcanos_short_names_and_columns(kube: Kube) -> None:
    kube.kubectl("apply", "-f", str(SHARED / "scenarios" / "quickstart" / "02-queues.yaml"))
    kube.kubectl("apply", "-f", str(SHARED / "scenarios" / "quickstart" / "01-hello-job.yaml"))
    queues = kube.kubectl("get", "q").stdout.splitlines()
    assert queues[0].split() == ["NAME", "PARENT"]
    jobs = kube.kubectl("get", "vcjob", "-o", "wide").stdout.splitlines()
    assert jobs[0].split() == ["NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE", "QUEUE"]
    assert jobs[1].split()[0] == "hello-volcano-job" and jobs[1].split()[-1] == "default"  # the CRD default
    for word in ("vj", "pg", "podgroup-v1beta1", "queue-v1beta1", "hn", "commands"):
        kube.kubectl("get", word)


def test_the_cluster_keeps_pod_template_fields_and_drops_what_volcano_does_not_know(kube: Kube) -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "kept"},
        "spec": {
            "notAVolcanoField": 1,
            "tasks": [{"replicas": 1, "template": {
                "metadata": {"labels": {"role": "w"}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "volumeMounts": [
                    {"name": "data", "mountPath": "/data"}]}],
                    "volumes": [{"name": "data", "emptyDir": {}}], "securityContext": {"runAsUser": 1000}},
            }}],
        },
    }
    stored = kube.client.create("jobs.batch.volcano.sh", job, "default")
    spec = stored["spec"]
    assert "notAVolcanoField" not in spec
    pod = spec["tasks"][0]["template"]["spec"]
    assert pod["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert pod["securityContext"] == {"runAsUser": 1000}
    assert pod["containers"][0]["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert spec["queue"] == "default" and spec["maxRetry"] == 3  # Volcano's CRD defaults


# -- wrong types are refused, naming the field


def _valid_objects() -> list[Obj]:
    """The custom objects of the manifests above (what a user really writes)."""
    custom = {(m.API_VERSION, m.KIND) for m in custom_kinds()}
    out = []
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and (doc.get("apiVersion"), doc.get("kind")) in custom:
                out.append(doc)
    return out


VALID = _valid_objects()
_WRONG: dict[str, list[Any]] = {
    "string": [7, True, ["x"], {"a": "b"}],
    "integer": ["seven", 1.5, True, [1], {"a": 1}],
    "boolean": ["yes", 1, [True]],
    "array": ["x", 3, {"a": 1}],
    "object": ["x", 3, ["a"]],
    "quantity": [True, ["1"], {"a": 1}, "lots"],
}


def _typed_leaves(value: Any, schema: Obj, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """``(path, type)`` of every value in ``value`` that the schema types (skipping kept-unknown parts)."""
    if schema.get("x-kubernetes-int-or-string"):
        return [(path, "quantity")]
    kind = schema.get("type")
    out = [(path, kind)] if kind and path and path[0] != "metadata" else []
    if isinstance(value, dict) and kind == "object":
        for key, sub in value.items():
            child = (schema.get("properties") or {}).get(key)
            if child is None and isinstance(schema.get("additionalProperties"), dict):
                child = schema["additionalProperties"]
            if child is not None:
                out += _typed_leaves(sub, child, (*path, key))
    elif isinstance(value, list) and kind == "array":
        for index, sub in enumerate(value):
            out += _typed_leaves(sub, schema["items"], (*path, index))
    return out


def _schema_for(obj: Obj) -> Obj:
    return openapi_schema(_model(obj))


@st.composite
def wrong_typed(draw: st.DrawFn) -> tuple[Obj, str]:
    obj = copy.deepcopy(draw(st.sampled_from(VALID)))
    leaves = [leaf for leaf in _typed_leaves(obj, _schema_for(obj)) if leaf[0][0] in ("spec", "target")]
    path, kind = draw(st.sampled_from(leaves))
    wrong = draw(st.sampled_from(_WRONG[kind]))
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = wrong
    obj["metadata"] = {"name": "mutated"}
    return obj, ".".join(str(p) for p in path if not isinstance(p, int))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wrong_typed())
def test_a_wrong_type_anywhere_is_refused_naming_the_field(kube: Kube, case: tuple[Obj, str]) -> None:
    obj, field = case
    resource = crd_name(_model(obj))
    with pytest.raises(ApiError) as refused:
        kube.client.request("POST", kube.client.resource(resource).path("default" if _model(obj).NAMESPACED
                                                                          else None),
                            query={"dryRun": "All"}, body=obj)
    assert refused.value.code == 422, refused.value
    assert field in str(refused.value), (field, str(refused.value))


def _model(obj: Obj) -> type[KubeObject]:
    (model,) = [m for m in custom_kinds() if (obj["apiVersion"], obj["kind"]) == (m.API_VERSION, m.KIND)]
    return model


def test_volcanos_bounds_and_required_fields_are_enforced(kube: Kube) -> None:
    def refused(obj: Obj, namespace: str | None) -> str:
        resource = kube.client.resource(crd_name(_model(obj)))
        with pytest.raises(ApiError) as err:
            kube.client.request("POST", resource.path(namespace), query={"dryRun": "All"}, body=obj)
        assert err.value.code == 422
        return str(err.value)

    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
             "spec": {"weight": 70000}}
    assert "spec.weight" in refused(queue, None)
    hypernode = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "h"},
                 "spec": {"members": []}}
    message = refused(hypernode, None)
    assert "spec.tier" in message and "spec.members" in message
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"tasks": [{"name": "Not_A_Label", "replicas": 1, "template": {}}],
                    "policies": [{"event": "PodExploded", "action": "RestartJob"}]}}
    message = refused(job, "default")
    assert "spec.tasks.name" in message and "spec.policies.event" in message
    assert json.loads(json.dumps(job))  # the objects are plain JSON (nothing kubectl would mangle)
