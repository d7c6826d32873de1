"""Requests defaulted from limits, as kube-apiserver does for every Pod (issue 19, defect 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pumice.admission import admitted_memory_store, default_pod
from pumice.cli.main import app
from pumice.runtime import Cluster

GPU = "volcano.sh/gpu-number"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110", GPU: "1"}}}


def gpu_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": "volcano",
                     "containers": [{"name": "c", "image": "cuda", "resources": {"limits": {GPU: "1"}}}]}}


def test_a_limit_without_a_request_becomes_the_request() -> None:
    store = admitted_memory_store()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "initContainers": [{"name": "i", "image": "x", "resources": {"limits": {"cpu": "2"}}}],
        "containers": [
            {"name": "a", "image": "x", "resources": {"limits": {"cpu": "1", GPU: "1"}, "requests": {"cpu": "500m"}}},
            {"name": "b", "image": "x", "resources": {"requests": {"memory": "1Gi"}}},
        ]}}
    stored = store.create("pods", pod)
    a, b = stored["spec"]["containers"]
    assert a["resources"]["requests"] == {"cpu": "500m", GPU: "1"}  # only the missing one, the given one kept
    assert b["resources"] == {"requests": {"memory": "1Gi"}}
    assert stored["spec"]["initContainers"][0]["resources"]["requests"] == {"cpu": "2"}
    assert "requests" not in pod["spec"]["containers"][0]["resources"] or \
        pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m"}  # the caller's object untouched


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.dictionaries(st.sampled_from(["cpu", "memory", GPU]), st.sampled_from(["1", "2"])),
                          st.dictionaries(st.sampled_from(["cpu", "memory", GPU]), st.sampled_from(["1", "3"]))),
                max_size=4))
def test_defaulting_only_adds_missing_requests(containers: list[tuple[dict[str, str], dict[str, str]]]) -> None:
    spec = [{"name": f"c{i}", "resources": {"limits": lim, "requests": req}} for i, (lim, req) in enumerate(containers)]
    pod = {"spec": {"containers": json.loads(json.dumps(spec))}}
    default_pod(pod)
    assert [c["resources"]["limits"] for c in pod["spec"]["containers"]] == [lim for lim, _ in containers]
    for (lim, req), out in zip(containers, pod["spec"]["containers"], strict=True):
        assert out["resources"]["requests"] == {**lim, **req}
    assert json.loads(json.dumps(spec)) == spec  # nothing shared was changed


def test_two_pods_asking_a_gpu_in_limits_do_not_share_one_gpu() -> None:
    cluster = Cluster()
    cluster.apply([NODE, gpu_pod("a"), gpu_pod("b")])
    cluster.run_until(cluster.clock.now() + 60)
    phases = sorted((p.get("status") or {}).get("phase", "Pending") for p in cluster.store.list("pods")[0])
    assert phases == ["Pending", "Running"]


def test_pumice_sim_runs_one_limits_only_gpu_pod_per_gpu(tmp_path: Path) -> None:
    pods = [gpu_pod("a"), gpu_pod("b")]
    scenario = {"name": "limits", "cluster": {"nodes": [NODE]}, "timeline": [{"at": 0, "apply": pods}],
                "until": "10m"}
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(scenario))
    result = CliRunner().invoke(app, ["sim", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    started = [p for j in json.loads(result.stdout)["jobs"] for p in j["pods"] if p["start"] is not None]
    assert len(started) == 1


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3),
       st.lists(st.tuples(st.integers(1, 2), st.booleans()), min_size=1, max_size=8))
def test_no_node_runs_more_gpus_than_it_has(gpus_per_node: list[int], pods: list[tuple[int, bool]]) -> None:
    """Whether a pod gives its GPUs in ``limits`` only or in ``requests``, the pods running on a node never ask
    for more GPUs than the node has."""
    cluster = Cluster()
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
              "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110", GPU: str(g)}}}
             for i, g in enumerate(gpus_per_node)]
    manifests = []
    for i, (count, limits_only) in enumerate(pods):
        resources = {"limits": {GPU: str(count)}} if limits_only else {"requests": {GPU: str(count)},
                                                                      "limits": {GPU: str(count)}}
        manifests.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
                          "spec": {"schedulerName": "volcano",
                                   "containers": [{"name": "c", "image": "cuda", "resources": resources}]}})
    cluster.apply([*nodes, *manifests])
    cluster.run_until(cluster.clock.now() + 30)
    used: dict[str, int] = {}
    for pod in cluster.store.list("pods")[0]:
        node = pod["spec"].get("nodeName")
        if node:
            used[node] = used.get(node, 0) + int(pod["spec"]["containers"][0]["resources"]["limits"][GPU])
    for i, g in enumerate(gpus_per_node):
        assert used.get(f"n{i}", 0) <= g
