"""Kinds, resource names and object identity."""

from __future__ import annotations

import pytest
from tests.imports import imported_after

from pumice.api import (
    MODELS,
    BatchJob,
    Command,
    CronJob,
    CustomResourceDefinition,
    Deployment,
    GenericObject,
    HyperNode,
    Job,
    Namespace,
    Node,
    Numatopology,
    ObjectMeta,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    ReplicaSet,
    ResourceQuota,
    StatefulSet,
    UnknownResourceError,
    kind_for_resource,
    model_for,
    model_for_resource,
)


@pytest.mark.parametrize(
    ("names", "model"),
    [
        (["pods", "po", "pod", "Pod"], Pod),
        (["nodes", "no", "node"], Node),
        (["namespaces", "ns", "namespace"], Namespace),
        (["priorityclasses", "pc", "priorityclass", "priorityclasses.scheduling.k8s.io"], PriorityClass),
        (["podgroups", "pg", "podgroup-v1beta1", "podgroup", "PodGroup"], PodGroup),
        (["queues", "q", "queue-v1beta1", "queue"], Queue),
        (["hypernodes", "hn", "hypernode"], HyperNode),
        (["jobs", "vcjob", "vj", "job", "jobs.batch.volcano.sh"], Job),
        (["commands", "command"], Command),
        (["jobs.batch"], BatchJob),
        (["deployments", "deploy", "deployments.apps"], Deployment),
        (["replicasets", "rs"], ReplicaSet),
        (["statefulsets", "sts"], StatefulSet),
        (["cronjobs", "cronvj", "cronjobs.batch.volcano.sh"], CronJob),
        (["resourcequotas", "quota"], ResourceQuota),
        (["numatopologies", "numatopo"], Numatopology),
        (["customresourcedefinitions", "crd", "crds"], CustomResourceDefinition),
        (["roles", "rolebindings", "clusterroles", "clusterrolebindings"], None),
    ],
)
def test_resource_names(names: list[str], model: type | None) -> None:
    for name in names:
        found = model_for_resource(name)
        assert found is model if model is not None else name == found.PLURAL
        assert kind_for_resource(name) == found.KIND


def test_unknown_resource() -> None:
    with pytest.raises(UnknownResourceError) as info:
        kind_for_resource("daemonsets")
    assert str(info.value) == 'unknown resource type "daemonsets"'


def test_model_for() -> None:
    for model in MODELS:
        assert model_for(model.API_VERSION, model.KIND) is model
    assert model_for("batch/v1", "Job") is BatchJob  # Kubernetes' Job, not Volcano's
    assert model_for("scheduling.k8s.io/v1beta1", "PriorityClass") is PriorityClass
    assert model_for("argoproj.io/v1alpha1", "Workflow") is GenericObject
    assert model_for("scheduling.volcano.sh/v1alpha1", "Queue") is GenericObject


def test_a_kind_imports_only_its_own_models() -> None:
    """Reading a file of pods does not build the pydantic classes of every kind (a fifth of a second)."""
    code = "from pumice.api.registry import model_for\nassert model_for('v1', 'Pod').KIND == 'Pod'"
    assert imported_after(code, ("pumice.api.apps", "pumice.api.flow", "pumice.api.rbac", "pumice.api.core")) == [
        "pumice.api.core"]


def test_keys_and_scope() -> None:
    assert Pod(metadata=ObjectMeta(name="p", namespace="ns")).key == "ns/p"
    assert Pod(metadata=ObjectMeta(name="p")).key == "default/p"
    assert Job(metadata=ObjectMeta(name="j")).namespace == "default"
    assert Queue(metadata=ObjectMeta(name="q", namespace="ignored")).key == "q"
    assert Node(metadata=ObjectMeta(name="n")).namespace is None
    assert {m.KIND for m in MODELS if not m.NAMESPACED} == {
        "Node",
        "Namespace",
        "PriorityClass",
        "Queue",
        "HyperNode",
        "Numatopology",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Cluster",
    }


def test_constructed_objects_carry_type_and_metadata() -> None:
    pod = Pod(metadata=ObjectMeta(name="p"))
    assert pod.to_dict() == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert list(Pod().to_dict()) == ["apiVersion", "kind", "metadata"]
    assert Pod.model_validate({"metadata": {"name": "p"}}).api_version == "v1"
