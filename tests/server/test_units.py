"""Pure parts of the server: strategic merge patch, ages, table cells, Accept parsing, resource index."""

from __future__ import annotations

import pytest

from pumice.server import ResourceIndex, apply_strategic_merge_patch, human_duration, table_for, wants_table
from pumice.store import DEFAULT_RESOURCES, BadRequest

POD = {
    "metadata": {"name": "p", "finalizers": ["a"]},
    "spec": {
        "containers": [
            {"name": "main", "image": "x:1", "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "y:1"},
        ],
        "tolerations": [{"key": "k"}],
    },
    "status": {"conditions": [{"type": "Ready", "status": "False"}]},
}


def test_strategic_merge_merges_lists_by_key() -> None:
    patch = {
        "metadata": {"finalizers": ["b", "a"]},
        "spec": {
            "containers": [{"name": "main", "image": "x:2", "env": [{"name": "B", "value": "2"}],
                            "ports": [{"containerPort": 80, "name": "http"}]}],
            "tolerations": [{"key": "other"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}]},
    }
    out = apply_strategic_merge_patch(POD, patch)
    main, side = out["spec"]["containers"]
    assert main["image"] == "x:2" and [e["name"] for e in main["env"]] == ["A", "B"]
    assert main["ports"] == [{"containerPort": 80, "name": "http"}] and side == {"name": "side", "image": "y:1"}
    assert out["spec"]["tolerations"] == [{"key": "other"}]  # no merge key: replaced
    assert out["metadata"]["finalizers"] == ["a", "b"]
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"},
                                           {"type": "Initialized", "status": "True"}]
    assert POD["spec"]["containers"][0]["image"] == "x:1"  # input untouched


def test_strategic_merge_directives() -> None:
    deleted = apply_strategic_merge_patch(POD, {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}})
    assert [c["name"] for c in deleted["spec"]["containers"]] == ["main"]
    replaced = apply_strategic_merge_patch(POD, {"spec": {"$patch": "replace", "containers": [{"name": "only"}]}})
    assert replaced["spec"] == {"containers": [{"name": "only"}]}
    ordered = apply_strategic_merge_patch(POD, {"spec": {"$setElementOrder/containers": [{"name": "side"},
                                                                                        {"name": "main"}]}})
    assert [c["name"] for c in ordered["spec"]["containers"]] == ["side", "main"]
    dropped = apply_strategic_merge_patch(POD, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert dropped["metadata"]["finalizers"] == []
    retained = apply_strategic_merge_patch(POD, {"spec": {"$retainKeys": ["containers"], "containers": []}})
    assert set(retained["spec"]) == {"containers"}
    removed = apply_strategic_merge_patch(POD, {"spec": {"tolerations": None}})
    assert "tolerations" not in removed["spec"]
    with pytest.raises(BadRequest):
        apply_strategic_merge_patch(POD, [1])
    with pytest.raises(BadRequest):
        apply_strategic_merge_patch(POD, {"$patch": "delete"})


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (150, "2m30s"), (600, "10m"),
     (3 * 3600, "3h"), (3 * 3600 + 120, "3h2m"), (10 * 3600, "10h"), (50 * 3600, "2d2h"), (30 * 86400, "30d"),
     (800 * 86400, "2y70d"), (9 * 365 * 86400, "9y")],
)
def test_human_duration_matches_kubernetes(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_wants_table() -> None:
    assert wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert wants_table("application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert not wants_table("application/json")
    assert not wants_table(None)


def test_pod_status_column_follows_kubectl() -> None:
    ts = "2026-01-01T00:00:00Z"
    now = 1_767_225_600.0 + 90
    pod = {"metadata": {"name": "p", "creationTimestamp": ts}, "spec": {"containers": [{"name": "c"}],
                                                                         "nodeName": "n1"},
           "status": {"phase": "Running", "podIP": "10.0.0.9", "containerStatuses": [
               {"name": "c", "ready": True, "restartCount": 2, "state": {"running": {}}}]}}
    row = table_for("pods", [pod], now)["rows"][0]["cells"]
    assert row == ["p", "1/1", "Running", 2, "90s", "10.0.0.9", "n1", "<none>", "<none>"]
    pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    pod["status"]["containerStatuses"][0]["ready"] = False
    assert table_for("pods", [pod], now)["rows"][0]["cells"][1:3] == ["0/1", "Completed"]
    pod["metadata"]["deletionTimestamp"] = ts
    assert table_for("pods", [pod], now)["rows"][0]["cells"][2] == "Terminating"


def test_node_and_queue_tables() -> None:
    node = {"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": "true"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1"}}}
    cells = table_for("nodes", [node], 0)["rows"][0]["cells"]
    assert cells[:3] == ["n", "Ready,SchedulingDisabled", "control-plane"] and cells[4] == "v1"
    queue = {"metadata": {"name": "q"}, "spec": {"parent": "root"}}
    table = table_for("queues.scheduling.volcano.sh", [queue], 0, include_object="None")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "PARENT"]
    assert table["rows"] == [{"cells": ["q", "root"]}]


def test_resource_index_covers_the_store() -> None:
    index = ResourceIndex(DEFAULT_RESOURCES)
    assert {r.store_name for r in index.resources} == {info.name for info in DEFAULT_RESOURCES}
    jobs = index.lookup("batch.volcano.sh", "v1alpha1", "jobs")
    assert jobs is not None and jobs.short_names == ("vcjob", "vj") and not jobs.strategic
    pods = index.lookup("", "v1", "pods")
    assert pods is not None and pods.subresources == ("status", "binding", "log") and pods.strategic
    assert index.lookup("", "v1", "jobs") is None


def test_protobuf_bodies_of_typed_clients() -> None:
    from pumice.server.protobuf import UnsupportedMediaType, decode_object

    def field(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 2, len(payload)]) + payload

    meta = field(1, b"pc") + field(2, b"") + field(11, field(1, b"k") + field(2, b"v"))
    value = bytes([2 << 3]) + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"  # int32 -1, sign-extended
    raw = field(1, meta) + value + bytes([3 << 3, 1])
    body = b"k8s\x00" + field(1, field(1, b"scheduling.k8s.io/v1") + field(2, b"PriorityClass")) + field(2, raw)
    assert decode_object(body) == {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                   "metadata": {"name": "pc", "labels": {"k": "v"}}, "value": -1,
                                   "globalDefault": True}
    pod = b"k8s\x00" + field(1, field(1, b"v1") + field(2, b"Pod")) + field(2, b"")
    with pytest.raises(UnsupportedMediaType):
        decode_object(pod)
    with pytest.raises(UnsupportedMediaType):
        decode_object(b"{}")


def test_builtin_tables_for_events_and_priority_classes() -> None:
    event = {"metadata": {"name": "e1", "creationTimestamp": "2026-01-01T00:00:00Z"}, "type": "Warning",
             "reason": "FailedScheduling", "message": "0/3 nodes are available",
             "involvedObject": {"kind": "Pod", "name": "p"}, "lastTimestamp": "2026-01-01T00:00:00Z"}
    table = table_for("events", [event], 1_767_225_600.0 + 30)
    assert [c["name"] for c in table["columnDefinitions"]][:4] == ["Last Seen", "Type", "Reason", "Object"]
    assert table["rows"][0]["cells"][:4] == ["30s", "Warning", "FailedScheduling", "pod/p"]
    pc = {"metadata": {"name": "high"}, "value": 1000}
    assert table_for("priorityclasses.scheduling.k8s.io", [pc], 0)["rows"][0]["cells"][:3] == ["high", 1000, False]


def test_openapi_v2_protobuf_encoding() -> None:
    from pumice.server.openapi import openapi_v2, openapi_v2_protobuf
    from pumice.server.protobuf import _fields

    doc = openapi_v2(ResourceIndex(DEFAULT_RESOURCES))
    fields = dict(_fields(openapi_v2_protobuf(doc)))
    assert fields[1] == b"2.0"
    definitions = [dict(_fields(entry)) for number, entry in _fields(fields[9]) if number == 1]
    names = {d[1].decode() for d in definitions}
    assert names == set(doc["definitions"]) and "sh.volcano.batch.v1alpha1.Job" in names
    job = dict(_fields(next(d[2] for d in definitions if d[1] == b"sh.volcano.batch.v1alpha1.Job")))
    assert dict(_fields(job[22]))[1] == b"object"  # type
    extension = dict(_fields(job[31]))
    assert extension[1] == b"x-kubernetes-group-version-kind"
    assert b'"kind": "Job"' in dict(_fields(extension[2]))[2]
