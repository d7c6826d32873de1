"""Kinds, resource names and object identity."""

from __future__ import annotations

import pytest

from pumice.api import (
    MODELS,
    Command,
    GenericObject,
    HyperNode,
    Job,
    Namespace,
    Node,
    ObjectMeta,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
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
    ],
)
def test_resource_names(names: list[str], model: type) -> None:
    for name in names:
        assert model_for_resource(name) is model
        assert kind_for_resource(name) == model.KIND


def test_unknown_resource() -> None:
    with pytest.raises(UnknownResourceError) as info:
        kind_for_resource("deployments")
    assert str(info.value) == 'unknown resource type "deployments"'


def test_model_for() -> None:
    for model in MODELS:
        assert model_for(model.API_VERSION, model.KIND) is model
    assert model_for("batch/v1", "Job") is GenericObject
    assert model_for("scheduling.volcano.sh/v1alpha1", "Queue") is GenericObject


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
        "Cluster",
    }


def test_constructed_objects_carry_type_and_metadata() -> None:
    pod = Pod(metadata=ObjectMeta(name="p"))
    assert pod.to_dict() == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert list(Pod().to_dict()) == ["apiVersion", "kind", "metadata"]
    assert Pod.model_validate({"metadata": {"name": "p"}}).api_version == "v1"
