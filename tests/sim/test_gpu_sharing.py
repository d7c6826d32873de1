"""GPU sharing end to end in the simulator: deviceshare picks GPUs, the bind carries Volcano's annotations,
the simulated kubelet accounts each GPU and never sees one over-committed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pumice.sim import load_path, run_scenario

SCENARIO = """
cluster:
  nodes:
    - {count: 2, name: gpu, cpu: 32, memory: 128Gi, gpu: 2}
scheduler: |
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: deviceshare}, {name: fragmentation}]
timeline:
  - at: 0
    apply:
%s
"""
POD = """      - apiVersion: v1
        kind: Pod
        metadata: {name: p%d, annotations: {pumice.io/duration: "%d"}}
        spec:
          schedulerName: volcano
          containers: [{name: main, image: x, resources: {requests: {cpu: "1", pumice.io/gpu-milli: "%d"},
                                                              limits: {pumice.io/gpu-milli: "%d"}}}]
"""


def test_shares_run_on_single_gpus(write: Callable[[str, str], Path]) -> None:
    # 12 pods of 300-700 milli on 4 GPUs: node totals would admit pods that no single GPU can hold
    milli = [700, 300, 600, 400, 500, 500, 700, 300, 600, 400, 500, 500]
    text = SCENARIO % "".join(POD % (i, 100 + 10 * i, m, m) for i, m in enumerate(milli))
    result = run_scenario(load_path(write("gpu.yaml", text)))
    pods = {p["metadata"]["name"]: p for p in result.cluster.store.list("pods", None)[0]}
    assert len(pods) == len(milli)
    assert all(p["status"]["phase"] == "Succeeded" for p in pods.values()), {
        n: (p["status"].get("phase"), p["status"].get("message")) for n, p in pods.items()}
    assert all("volcano.sh/gpu-index" in p["metadata"]["annotations"] for p in pods.values())
