"""Room freed by reclaim is used (issue 19 defect 2): the capacity guide's pods variant, and the
same promise over random clusters: after reclaim, capacity that fits a reclaiming queue's pending
pods does not stay idle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.sim import load_scenario, run_scenario

CAPACITY_CONF = """\
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: capacity
  - name: nodeorder
  - name: binpack
"""


def plain_pods(prefix: str, queue: str, cpus: list[int]) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{prefix}-{i}", "annotations": {"scheduling.volcano.sh/queue-name": queue}},
             "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "nginx", "resources": {
                 "requests": {"cpu": str(cpu), "memory": f"{cpu}Gi"}}}]}} for i, cpu in enumerate(cpus)]


def capacity_queue(name: str, cpu: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"reclaimable": True, "deserved": {"cpu": cpu, "memory": f"{cpu}Gi"}}}


def simulate(path: Path, nodes: list[int], deserved1: int, first: list[int], second: list[int]) -> Any:
    total = sum(nodes)
    scenario = {
        "name": "reclaim-room",
        "cluster": {"nodes": [{"name": f"n{i}", "count": 1, "cpu": cpu, "memory": f"{cpu}Gi"}
                              for i, cpu in enumerate(nodes)]},
        "scheduler": CAPACITY_CONF,
        "timeline": [
            {"at": 0, "apply": [capacity_queue("queue1", deserved1), capacity_queue("queue2", total - deserved1)]},
            {"at": 1, "apply": plain_pods("q1pod", "queue1", first)},
            {"at": 60, "apply": plain_pods("q2pod", "queue2", second)},
        ],
        "until": "10m",
    }
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return run_scenario(load_scenario(path))


def running(result: Any, prefix: str) -> list[Any]:
    return [p for p in result.recorder.pods.values() if p.name.startswith(prefix) and p.start is not None
            and p.end is None]


def test_capacity_guide_pods_variant_reclaimed_room_runs_queue2(tmp_path: Path) -> None:
    """Two 4-CPU nodes, queue1 deserves 2 CPU and queue2 6; queue1's 8 pods fill the cluster, queue2's
    8 arrive at 60 s: reclaim evicts 6 of queue1's and 6 of queue2's run (the guide's end state)."""
    result = simulate(tmp_path / "s.yaml", [4, 4], 2, [1] * 8, [1] * 8)
    assert len(running(result, "q1pod")) == 2
    assert len(running(result, "q2pod")) == 6


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(nodes=st.lists(st.integers(2, 8), min_size=1, max_size=3), share=st.floats(0.1, 0.9),
       first=st.lists(st.integers(1, 2), min_size=1, max_size=16),
       second=st.lists(st.integers(1, 2), min_size=1, max_size=12))
def test_room_freed_for_a_reclaiming_queue_is_used(tmp_path: Path, nodes: list[int], share: float,
                                                    first: list[int], second: list[int]) -> None:
    total = sum(nodes)
    deserved1 = max(1, min(total - 1, round(total * share)))
    result = simulate(tmp_path / "s.yaml", nodes, deserved1, first, second)
    store = result.cluster.store

    def admitted(name: str) -> bool:  # its PodGroup passed enqueue (what enqueue holds back is not reclaim's)
        pod = store.get("pods", "default", name)
        group = pod["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name")
        return bool(group) and (store.get("podgroups.scheduling.volcano.sh", "default", group).get("status")
                                or {}).get("phase") == "Inqueue"

    evicted = [p for p in result.recorder.pods.values() if p.name.startswith("q1pod") and p.end is not None]
    waiting = [p for p in result.recorder.pods.values()
               if p.name.startswith("q2pod") and p.start is None and admitted(p.name)]
    if not evicted or not waiting:
        return
    # a node with room for a waiting queue2 pod (by CPU) at the end is capacity left idle
    used: dict[str, float] = {}
    for p in running(result, "q"):
        used[p.node] = used.get(p.node, 0.0) + float(p.vector[0]) / 1000
    smallest = min(float(p.vector[0]) / 1000 for p in waiting)
    for i, cpu in enumerate(nodes):
        name = f"n{i}-0"  # the generator's name: prefix-index
        assert cpu - used.get(name, 0.0) < smallest - 1e-9, (name, cpu, used, [p.name for p in waiting])
