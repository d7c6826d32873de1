"""One scheduling session on synthetic GPU clusters: how long, how many pods placed per second.

    python benchmarks/bench_session.py            # the full table (about a minute)
    python benchmarks/bench_session.py --quick    # the smallest row only

Each row runs in its own process so that its peak memory is its own. Nodes: 32 CPU, 256Gi,
8 GPUs. Pods: gang jobs of 8-64 pods (minMember = replicas) in four weighted queues, with the
default (shipped) Volcano configuration.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from typing import Any

SIZES = [(1000, 10_000), (1000, 50_000), (5000, 10_000), (5000, 50_000), (10_000, 10_000), (10_000, 50_000)]
#: (cpu, memory, GPUs) per pod; a job's pods share one. On average 2.25 CPU, 15Gi, 0.5 GPU, so
#: 50,000 pods fit in 5,000 nodes (about 70% of CPU, 62% of GPUs) and overflow 1,000 nodes.
SHAPES = [("1", "4Gi", "0"), ("2", "16Gi", "1"), ("4", "32Gi", "1"), ("2", "8Gi", "0")]


def cluster(nodes: int, pods: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = []
    for q, weight in (("q-research", 1), ("q-prod", 2), ("q-batch", 1), ("q-dev", 1)):
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
                     "spec": {"weight": weight}, "status": {"state": "Open"}})
    alloc = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
    for i in range(nodes):
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}"},
                     "status": {"allocatable": alloc, "capacity": alloc}})
    made = j = 0
    queues = ["q-research", "q-prod", "q-batch", "q-dev"]
    while made < pods:
        size = min(rng.randint(8, 64), pods - made)
        cpu, mem, gpu = rng.choice(SHAPES)
        name = f"job-{j:05d}"
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "bench"},
                     "spec": {"minMember": size, "queue": queues[j % 4]}, "status": {"phase": "Inqueue"}})
        for k in range(size):
            objs.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-worker-{k}", "namespace": "bench",
                             "annotations": {"scheduling.k8s.io/group-name": name}},
                "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "resources": {
                    "requests": {"cpu": cpu, "memory": mem, **({"nvidia.com/gpu": gpu} if gpu != "0" else {})}}}]},
                "status": {"phase": "Pending"},
            })
        made += size
        j += 1
    return objs


def run_one(nodes: int, pods: int) -> dict[str, Any]:
    from pumice.scheduler import build_cluster_state, run_session

    objs = cluster(nodes, pods)
    t0 = time.perf_counter()
    state = build_cluster_state(objs)
    t1 = time.perf_counter()
    outcome = run_session(state)
    t2 = time.perf_counter()
    placed = len(outcome.binds)
    return {
        "nodes": nodes, "pods": pods, "snapshot_s": t1 - t0, "session_s": t2 - t1, "placed": placed,
        "pods_per_s": placed / (t2 - t1) if t2 > t1 else 0.0,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only the smallest row")
    parser.add_argument("--one", nargs=2, type=int, metavar=("NODES", "PODS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one)))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="pumice: one scheduling session (default Volcano conf)")
    for col in ("nodes", "pending pods", "placed", "snapshot s", "session s", "pods placed/s", "peak MiB"):
        table.add_column(col, justify="right")
    for nodes, pods in SIZES[:1] if args.quick else SIZES:
        out = subprocess.run([sys.executable, __file__, "--one", str(nodes), str(pods)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        table.add_row(f"{nodes:,}", f"{pods:,}", f"{r['placed']:,}", f"{r['snapshot_s']:.2f}",
                      f"{r['session_s']:.2f}", f"{r['pods_per_s']:,.0f}", f"{r['peak_mib']:.0f}")
    Console().print(table)


if __name__ == "__main__":
    main()
