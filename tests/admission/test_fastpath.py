"""The PodGroup fast path of defaulting gives exactly what the pydantic round trip gives, key order included."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from pumice.admission import default_object
from pumice.admission.fastpath import podgroup_defaults
from pumice.api import apply_defaults, parse_object
from pumice.controllers.podgroup import podgroup_for_pod
from pumice.store import Invalid

Obj = dict[str, Any]
PG = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup"}


def _slow(obj: Obj) -> Obj:
    return apply_defaults(parse_object(obj)).to_dict()


def _same(a: Obj, b: Obj) -> bool:
    """Equal, with every mapping's keys in the same order."""
    return json.dumps(a) == json.dumps(b)


def _trace_podgroup() -> Obj:
    return {**PG, "metadata": {"name": "openb-pod-0000", "namespace": "default",
                               "labels": {"pumice.io/trace": "openb", "pumice.io/qos": "LS"},
                               "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1},
            "spec": {"minMember": 1, "queue": "default",
                     "minResources": {"cpu": "12000m", "memory": "16384Mi", "nvidia.com/gpu": "1"}}}


PLAIN: list[Obj] = [
    _trace_podgroup(),
    podgroup_for_pod({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "p", "namespace": "ns", "uid": "u-2",
                                   "annotations": {"volcano.sh/x": "y"}},
                      "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}),
    {**PG, "metadata": {"name": "no-spec"}},
    {"metadata": {"name": "meta-first"}, "kind": "PodGroup", "apiVersion": PG["apiVersion"], "spec": {}},
    {**PG, "status": {"phase": "Pending", "running": 0}, "spec": {"queue": ""}, "metadata": {"name": "status-first"}},
    {**PG, "metadata": {"name": "q", "finalizers": ["f"], "ownerReferences": [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "u", "controller": True,
         "blockOwnerDeletion": False}]},
     "spec": {"minTaskMember": {"a": 2}, "priorityClassName": "high", "queue": "other", "minMember": 0}},
    {**PG, "metadata": {"name": "null-queue"}, "spec": {"queue": None}},  # defaulted where it stands
    {**PG, "metadata": {"name": "extra"}, "spec": {"minMember": 1, "unknown": 1}},  # kept, as the model keeps it
    {**PG, "metadata": {"name": "conditions"}, "status": {"phase": "Pending", "conditions": [
        {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": "0/1",
         "lastTransitionTime": "2026-01-01T00:00:00Z", "transitionID": "t"}]}},
]

DECLINED: list[Obj] = [
    {**PG, "metadata": {"name": "snake"}, "spec": {"min_member": 1}},
    {**PG, "metadata": {"name": "number-quantity"}, "spec": {"minResources": {"cpu": 2}}},
    {**PG, "metadata": {"name": "bad-quantity"}, "spec": {"minResources": {"cpu": "two"}}},
    {**PG, "metadata": {"name": "bool-int"}, "spec": {"minMember": True}},
    {**PG, "metadata": {"name": "float-int"}, "spec": {"minMember": 1.0}},
    {**PG, "metadata": {"name": "topology"}, "spec": {"networkTopology": {}}},  # its mode: the model's default
    {**PG, "metadata": {"name": "subgroups"}, "spec": {"subGroupPolicy": []}},
    {**PG, "metadata": {"name": "label", "labels": {"a": 1}}},
    {**PG, "spec": {}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod"}},
    {**PG, "kind": "Queue", "metadata": {"name": "queue"}},
]


@pytest.mark.parametrize("obj", PLAIN, ids=lambda o: o["metadata"]["name"])
def test_plain_podgroups_take_the_fast_path_with_the_models_result(obj: Obj) -> None:
    before = json.dumps(obj)
    fast = podgroup_defaults(obj)
    assert fast is not None
    assert _same(fast, _slow(obj))
    assert (fast.get("spec") or {}).get("queue")
    assert json.dumps(obj) == before  # the input is left alone


@pytest.mark.parametrize("obj", DECLINED, ids=lambda o: str(o.get("metadata", {}).get("name")))
def test_other_documents_are_left_to_the_model(obj: Obj) -> None:
    assert podgroup_defaults(obj) is None


def test_refusals_keep_the_models_one_line_error() -> None:
    with pytest.raises(Invalid, match=r'PodGroup "bool-int": spec.minMember: Input should be a valid integer'):
        default_object({**PG, "metadata": {"name": "bool-int"}, "spec": {"minMember": True}})


def test_random_podgroups_agree_with_the_model() -> None:
    rng = random.Random(7)
    values: dict[str, list[Any]] = {
        "name": ["a", "", 3, None], "namespace": ["ns"], "generation": [1, True, 2.0], "labels": [{"k": "v"}, {}],
        "annotations": [{"k": 1}, {"a": "b"}], "finalizers": [["x"], "x"], "uid": ["u"],
        "minMember": [1, 0, -1, "1", None], "queue": ["default", "", "q"], "priorityClassName": ["p", 5],
        "minResources": [{"cpu": "1"}, {"cpu": "1.5Gi"}, {"cpu": 1}, {"cpu": "x"}, {}], "minTaskMember": [{"t": 1}],
        "phase": ["Pending", 1], "running": [0, False], "extra": [1, None],
        "networkTopology": [{"mode": "soft"}, {}], "conditions": [[], [{"type": "Scheduled", "status": "True"}]],
    }
    meta_keys = ["name", "namespace", "generation", "labels", "annotations", "finalizers", "uid", "extra"]
    spec_keys = ["minMember", "queue", "priorityClassName", "minResources", "minTaskMember", "extra",
                 "networkTopology"]
    fast_taken = 0
    for _ in range(1000):
        doc: Obj = {}
        parts = ["apiVersion", "kind", "metadata", "spec", "status"]
        rng.shuffle(parts)
        for part in parts:
            if part in ("apiVersion", "kind"):
                doc[part] = PG[part]
            elif part == "metadata" or rng.random() < 0.8:
                keys = {"metadata": meta_keys, "spec": spec_keys, "status": ["phase", "running", "conditions"]}[part]
                chosen = rng.sample(keys, rng.randint(0, len(keys)))
                doc[part] = {k: rng.choice(values[k]) for k in chosen}
        fast = podgroup_defaults(doc)
        if fast is None:
            continue
        fast_taken += 1
        assert _same(fast, _slow(doc)), doc
    assert fast_taken > 50
