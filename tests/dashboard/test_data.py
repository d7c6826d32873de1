"""The dashboard's aggregations and manifest submission, over a plain MemoryStore (no HTTP, no cluster)."""

from __future__ import annotations

import time

import pytest

from pumice.dashboard import ApplyError, StoreMirror, apply_manifest, pages
from pumice.store import MemoryStore, StoreError

from .live import SEED

PODS = "pods"
PGS = "podgroups.scheduling.volcano.sh"


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    apply_manifest(s, SEED, "seed")
    for q in ("root", "default"):
        spec = {"weight": 1} if q == "root" else {"weight": 1, "parent": "root"}
        s.create("queues.scheduling.volcano.sh", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                                  "metadata": {"name": q}, "spec": spec})
    return s


def _run(store: MemoryStore, name: str, node: str, phase: str = "Running") -> None:
    store.bind("default", name, node)
    store.patch(PODS, "default", name, {"status": {"phase": phase}}, subresource="status")


def test_resources_and_requests() -> None:
    assert pages.parse_resources({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "2", "amd.com/gpu": 1,
                                 "example.com/foo": "3", "bad": "x"}) == {"cpu": 0.5, "memory": 2**30, "gpu": 3}
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}},
                                   {"resources": {"requests": {"cpu": "2"}}}],
                    "initContainers": [{"resources": {"requests": {"cpu": "4", "memory": "1Mi"}}}]}}
    assert pages.pod_requests(pod) == {"cpu": 4.0, "memory": 2**20, "pods": 1.0}


def test_overview_counts_and_usage(store: MemoryStore) -> None:
    out = pages.overview(store)
    assert out["jobs"]["total"] == 2 and out["alert"] == "Jobs Pending"
    memory = 4 * 256 * 2**30 + 128 * 2**30
    assert out["cluster"]["allocatable"] == {"cpu": 192, "memory": memory, "gpu": 32, "pods": 550}
    assert out["cluster"]["used"]["gpu"] == 0
    _run(store, "train-llm-0", "gpu-0")
    _run(store, "train-llm-1", "gpu-1")
    store.patch(PGS, "default", "train-llm", {"status": {"phase": "Running"}}, subresource="status")
    out = pages.overview(store)
    assert out["alert"] == "Jobs Running"
    assert out["pods"]["running"] == 2
    assert out["cluster"]["used"]["gpu"] == 8 and out["cluster"]["used"]["cpu"] == 16
    assert out["jobs"]["byPhase"] == {"Pending": 1, "Running": 1}
    store.patch(PGS, "default", "train-llm", {"status": {"phase": "Completed"}}, subresource="status")
    for i in range(2):
        store.patch(PODS, "default", f"train-llm-{i}", {"status": {"phase": "Succeeded"}}, subresource="status")
    out = pages.overview(store)
    assert out["completionRate"] == 0.5 and out["cluster"]["used"]["gpu"] == 0
    assert [q["name"] for q in out["queues"]] == ["root", "default", "research"]


def test_queue_tree_limits_and_allocation(store: MemoryStore) -> None:
    _run(store, "train-llm-0", "gpu-0")
    roots = pages.queues(store)["items"]
    assert [r["name"] for r in roots] == ["root"]
    children = {c["name"]: c for c in roots[0]["children"]}
    research = children["research"]
    assert research["depth"] == 1 and research["leaf"]
    assert research["allocated"]["gpu"] == 4  # no status.allocated yet: computed from running pods
    assert research["limit"]["gpu"] == 16 and research["limitSource"]["gpu"] == "capability"
    assert research["deserved"]["gpu"] == 8
    assert children["default"]["limitSource"]["cpu"] == "cluster"
    assert roots[0]["allocated"]["gpu"] == 4  # a parent sums its children
    store.patch("queues.scheduling.volcano.sh", None, "research",
                {"status": {"allocated": {"cpu": "8", "nvidia.com/gpu": "4"}}}, subresource="status")
    research = next(c for c in pages.queues(store)["items"][0]["children"] if c["name"] == "research")
    assert research["allocated"]["cpu"] == 8  # the scheduler's word wins when written


def test_topology_tree_gpus(store: MemoryStore) -> None:
    _run(store, "train-llm-0", "gpu-0")
    _run(store, "train-llm-1", "gpu-3")
    out = pages.topology(store)
    assert [h["name"] for h in out["items"]] == ["spine-0"]
    spine = out["items"][0]
    assert spine["tier"] == 2 and spine["nodeCount"] == 4
    assert spine["used"]["gpu"] == 8 and spine["free"]["gpu"] == 24
    racks = {h["name"]: h for h in spine["children"]}
    assert [n["name"] for n in racks["rack-0"]["nodes"]] == ["gpu-0", "gpu-1"]
    assert [n["name"] for n in racks["rack-1"]["nodes"]] == ["gpu-2", "gpu-3"]  # labelMatch members
    assert racks["rack-1"]["free"]["gpu"] == 12
    assert [n["name"] for n in out["unassigned"]] == ["cpu-0"]
    assert out["tiers"] == [1, 2]
    nodes = {n["name"]: n for n in pages.nodes(store)["items"]}
    assert nodes["gpu-3"]["hyperNode"] == "rack-1" and nodes["gpu-3"]["used"]["gpu"] == 4
    assert nodes["cpu-0"]["hyperNode"] is None


def test_job_detail_pending_reason_and_events(store: MemoryStore) -> None:
    store.patch(PGS, "default", "too-big", {"status": {"phase": "Inqueue", "conditions": [
        {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
         "message": "2/2 tasks in gang unschedulable: 0/5 nodes are unavailable: 5 Insufficient nvidia.com/gpu."}]}},
        subresource="status")
    store.create("events", {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
                            "involvedObject": {"kind": "PodGroup", "name": "too-big", "namespace": "default"},
                            "reason": "Unschedulable", "message": "not enough GPUs", "type": "Warning"})
    out = pages.job_detail(store, "default", "too-big")  # kind=Job falls back to the PodGroup
    assert out is not None
    assert out["job"]["kind"] == "PodGroup" and out["job"]["phase"] == "Inqueue"
    assert "Insufficient nvidia.com/gpu" in out["pendingReason"]
    assert [p["name"] for p in out["pods"]] == ["too-big-0", "too-big-1"]
    assert out["events"][0]["reason"] == "Unschedulable"
    assert out["podGroup"]["conditions"][0]["type"] == "Unschedulable"
    assert "kind: PodGroup" in out["yaml"]
    assert pages.job_detail(store, "default", "nope") is None
    rows = {r["name"]: r for r in pages.podgroups(store)["items"]}
    assert "Insufficient" in rows["too-big"]["pendingReason"]


def test_volcano_job_rows() -> None:
    store = MemoryStore()
    created = apply_manifest(store, """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vj}
spec:
  tasks:
  - name: worker
    replicas: 2
    template: {spec: {containers: [{name: c, image: x}]}}
""")
    assert created == [{"kind": "Job", "namespace": "default", "name": "vj", "resource": "jobs.batch.volcano.sh"}]
    job = store.get("jobs.batch.volcano.sh", "default", "vj")
    assert job["spec"]["queue"] == "default" and job["spec"]["minAvailable"] == 2  # API defaults applied
    uid = job["metadata"]["uid"]
    store.create(PGS, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": f"vj-{uid}", "namespace": "default",
                                    "ownerReferences": [{"kind": "Job", "name": "vj", "uid": uid}]},
                       "spec": {"minMember": 2}})
    rows = pages.jobs(store)["items"]
    assert len(rows) == 1 and rows[0]["kind"] == "Job" and rows[0]["podGroup"] == f"vj-{uid}"
    detail = pages.job_detail(store, "default", "vj")
    assert detail is not None and detail["tasks"][0]["name"] == "worker" and detail["tasks"][0]["replicas"] == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("kind: [oops", "manifest"),
        ("", "no objects"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: "
         "{requests: {cpu: 1x}}}]}", "invalid quantity"),
        ("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}", "not served"),
    ],
)
def test_apply_errors_are_one_line(text: str, needle: str) -> None:
    store = MemoryStore()
    with pytest.raises(ApplyError) as info:
        apply_manifest(store, text)
    message = str(info.value)
    assert needle in message and "\n" not in message
    assert store.list("pods")[0] == []


def test_apply_stops_at_the_first_store_error() -> None:
    store = MemoryStore()
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec: {containers: [{name: c, image: x}]}"
    apply_manifest(store, pod % "a")
    with pytest.raises(ApplyError) as info:
        apply_manifest(store, "\n---\n".join([pod % "b", pod % "a", pod % "c"]))
    assert "already exists" in str(info.value) and info.value.code == 409
    assert [c["name"] for c in info.value.created] == ["b"]
    assert sorted(p["metadata"]["name"] for p in store.list("pods")[0]) == ["a", "b"]


def test_mirror_follows_the_store(store: MemoryStore) -> None:
    mirror = StoreMirror(store, pages.RESOURCES, idle=0)
    try:
        assert pages.overview(mirror) == pages.overview(store)
        _run(store, "train-llm-0", "gpu-0")
        store.delete(PODS, "default", "too-big-1")
        store.create("hypernodes.topology.volcano.sh", {
            "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "extra"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "cpu-0"}}}]}})
        for view in (pages.overview, pages.pods, pages.topology, pages.queues, pages.nodes):
            assert view(mirror) == view(store), view.__name__
        assert pages.job_detail(mirror, "default", "too-big") == pages.job_detail(store, "default", "too-big")
    finally:
        mirror.close()
    assert pages.pods(mirror) == pages.pods(store)  # closed: straight to the store


def test_mirror_closes_its_watches_when_nobody_looks(store: MemoryStore) -> None:
    now = [0.0]
    mirror = StoreMirror(store, (PODS,), idle=0.05, clock=lambda: now[0])
    try:
        assert len(mirror.list(PODS)[0]) == 4 and mirror.started
        now[0] = 1.0
        deadline = time.monotonic() + 5
        while mirror.started:
            assert time.monotonic() < deadline, "the idle timer did not fire"
            time.sleep(0.02)
        store.delete(PODS, "default", "too-big-0")
        assert len(mirror.list(PODS)[0]) == 3 and mirror.started  # starts over
        with pytest.raises(StoreError):
            StoreMirror(store, ("widgets",)).list("widgets")
    finally:
        mirror.close()


def test_jobs_list_jobflows_with_their_steps() -> None:
    s = MemoryStore()
    s.create("jobflows.flow.volcano.sh", {
        "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
        "metadata": {"name": "pipe", "namespace": "default"},
        "spec": {"jobRetainPolicy": "delete", "flows": [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}]},
        "status": {"state": {"phase": "Running"}}})
    s.create("jobs.batch.volcano.sh", {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {
            "name": "pipe-a", "namespace": "default",
            "ownerReferences": [{"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "name": "pipe",
                                 "uid": "x", "controller": True}]},
        "spec": {"tasks": [{"name": "t", "replicas": 1}]}, "status": {"state": {"phase": "Completed"}}})
    out = pages.jobs(s)
    (flow,) = out["flows"]
    assert (flow["name"], flow["phase"], flow["retainPolicy"]) == ("pipe", "Running", "delete")
    assert flow["steps"] == [
        {"template": "a", "dependsOn": [], "job": "pipe-a", "phase": "Completed"},
        {"template": "b", "dependsOn": ["a"], "job": None, "phase": "Waiting"}]
    assert out["items"][0]["flow"] == "pipe"


def test_pages_answer_for_quantities_beyond_a_float() -> None:
    """A quantity too large for a float (``1e400``) is skipped as unreadable, and sums past a float's limit show the
    largest float: the topology, nodes and overview pages answer instead of failing (the API server fuzz test found
    the topology page answering 500)."""
    assert pages.parse_resources({"cpu": "1e400", "memory": "1Gi"}) == {"memory": 2**30}
    store = MemoryStore()
    for name, cpu in (("huge", "1e400"), ("big-a", "1e308"), ("big-b", "1e308")):
        store.create("nodes", {"metadata": {"name": name, "labels": {"rack": "r1"}},
                               "status": {"allocatable": {"cpu": cpu, "pods": "110"},
                                          "conditions": [{"type": "Ready", "status": "True"}]}})
    store.create("hypernodes.topology.volcano.sh", {
        "metadata": {"name": "r1"}, "spec": {"tier": 1, "members": [
            {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r1"}}}}]}})
    out = pages.topology(store)
    assert out["items"][0]["allocatable"]["cpu"] == pytest.approx(1.7976931348623157e308)
    pages.nodes(store)
    pages.overview(store)
