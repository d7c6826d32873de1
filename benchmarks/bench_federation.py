"""Dispatch decisions per second: 10,000 queued Volcano Jobs over 20 simulated member clusters.

    python benchmarks/bench_federation.py            # the table
    python benchmarks/bench_federation.py --quick    # 2,000 jobs

The host is an in-memory store with Volcano's admission; each member an in-memory store with its nodes (256
nodes of 32 CPU, 256Gi, 8 GPUs in 8 GPU models and 4 regions, HyperNodes of 8-node leaves under one spine) and
prices. The jobs (1-8 pods of 1-8 GPUs, in four weighted queues; a third with a hard tier-1 network topology, a
fifth asking for one GPU model, a fifth with a region preference) are all submitted before the first cycle.

Rows:

* ``choose only``: cluster choice alone for every job (the plugins over the 20 members: the decision itself);
* ``first cycle``: the federation's first dispatch cycle over all 10,000 waiting jobs — global queue order and
  admission, cluster choice, and for each dispatched job the writes (host placement and status, the member's
  namespace, queue and Job, the reservation);
* ``next cycle``: the cycle after, with nothing changed (the waiting jobs are skipped: nothing has room);
* ``after a finish``: the cycle after one member freed capacity (the jobs are evaluated again).

A decision is one job evaluated against every member. Timings are wall-clock on whatever machine runs this.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

from pumice.clock import VirtualClock, to_datetime
from pumice.federation.config import default_config
from pumice.federation.federation import Federation
from pumice.federation.members import StaticConnector
from pumice.runtime import attach_admission, load_admission
from pumice.sim.nodegen import generate_nodes
from pumice.store import MemoryStore

MEMBERS = 20
NODES = 256
LEAF = 8
MODELS = ["A100-40GB", "A100-80GB", "H100", "H200", "L40S", "A10", "V100", "B200"]
REGIONS = ["us-east", "us-west", "eu-west", "ap-south"]
QUEUES = (("research", 3), ("product", 2), ("batch", 1), ("dev", 1))


def member(i: int, clock: VirtualClock) -> tuple[MemoryStore, dict[str, Any]]:
    store = MemoryStore(clock=lambda: to_datetime(clock.now()))
    model = MODELS[i % len(MODELS)]
    nodes = generate_nodes({"name": f"m{i}n", "count": NODES, "cpu": 32, "memory": "256Gi", "gpu": 8,
                            "labels": {"nvidia.com/gpu.product": model}}, "bench", "nodes", set())
    for node in nodes:
        store.create("nodes", node)
    names = [n["metadata"]["name"] for n in nodes]
    leaves = []
    for j in range(0, len(names), LEAF):
        leaves.append(f"m{i}-leaf{j // LEAF}")
        store.create("hypernodes.topology.volcano.sh", {
            "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": leaves[-1]},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}}
                                            for n in names[j:j + LEAF]]}})
    store.create("hypernodes.topology.volcano.sh", {
        "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": f"m{i}-spine"},
        "spec": {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": n}}}
                                        for n in leaves]}})
    cluster = {"apiVersion": "federation.pumice.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": f"m{i}", "labels": {"topology.kubernetes.io/region": REGIONS[i % len(REGIONS)]}},
               "spec": {"kubeconfig": {"file": f"in-process:m{i}"},
                        "cost": {"nvidia.com/gpu": f"{1 + (i * 7) % 10 / 4:.2f}", "cpu": "0.03"}}}
    return store, cluster


def job(k: int, rng: random.Random) -> dict[str, Any]:
    pods, gpus = rng.randint(1, 8), rng.choice([1, 2, 4, 8])
    queue = rng.choices([q for q, _ in QUEUES], weights=[w for _, w in QUEUES])[0]
    pod: dict[str, Any] = {"containers": [{"name": "main", "image": "trainer", "resources": {
        "requests": {"cpu": str(rng.choice([2, 4, 8])), "memory": "16Gi", "nvidia.com/gpu": str(gpus)},
        "limits": {"nvidia.com/gpu": str(gpus)}}}]}
    spec: dict[str, Any] = {"schedulerName": "volcano", "queue": queue, "minAvailable": pods,
                            "tasks": [{"name": "worker", "replicas": pods, "template": {"spec": pod}}]}
    meta: dict[str, Any] = {"name": f"job-{k:05d}", "namespace": "default"}
    roll = rng.random()
    if roll < 0.33:
        spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    elif roll < 0.53:
        pod["nodeSelector"] = {"nvidia.com/gpu.product": rng.choice(MODELS)}
    elif roll < 0.73:
        meta["annotations"] = {"federation.pumice.io/region-affinity": rng.choice(REGIONS)}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": spec}


def build(jobs: int, seed: int = 5) -> tuple[Federation, VirtualClock, dict[str, MemoryStore]]:
    clock = VirtualClock()
    host = MemoryStore(clock=lambda: to_datetime(clock.now()), admission=load_admission())
    attach_admission(host)
    for name, weight in (("root", 1), ("default", 1)):
        host.create("queues.scheduling.volcano.sh", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                                     "metadata": {"name": name},
                                                     "spec": {"weight": weight, **({"parent": "root"}
                                                                                   if name != "root" else {})},
                                                     "status": {"state": "Open"}})
    for name, weight in QUEUES:
        host.create("queues.scheduling.volcano.sh", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                                     "metadata": {"name": name}, "spec": {"weight": weight},
                                                     "status": {"state": "Open"}})
    stores: dict[str, MemoryStore] = {}
    for i in range(MEMBERS):
        store, cluster = member(i, clock)
        stores[f"m{i}"] = store
        host.create("clusters.federation.pumice.io", cluster)
    rng = random.Random(seed)
    for k in range(jobs):
        host.create("jobs.batch.volcano.sh", job(k, rng))
    fed = Federation(host, clock, default_config(), connector=StaticConnector(stores), events=False)
    return fed, clock, stores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 jobs instead of 10,000")
    args = parser.parse_args()
    jobs = 2000 if args.quick else 10_000
    t = time.perf_counter()
    fed, clock, stores = build(jobs)
    setup = time.perf_counter() - t
    # connect the members and read them (not timed: it is the federation starting)
    fed._sync_host()
    fed._sync_members()
    nodes = sum(len(m.capacity.names) for m in fed.members.values())
    rows: list[tuple[str, int, int, float]] = []

    priorities = fed.priorities()
    views = [m.view for m in fed.members.values()]
    demands = [r.demand(priorities) for r in fed.records.values()]
    t = time.perf_counter()
    kept = sum(1 for d in demands if fed.chooser.choose(d, views).ranked)
    rows.append(("choose only", len(demands), kept, time.perf_counter() - t))

    d0 = fed.dispatcher.decisions
    t = time.perf_counter()
    fed.sync()
    first = time.perf_counter() - t
    dispatched = sum(1 for r in fed.records.values() if r.placement.placed)
    rows.append(("first cycle", fed.dispatcher.decisions - d0, dispatched, first))

    clock.advance_to(clock.now() + 1.0)
    d0 = fed.dispatcher.decisions
    waiting = sum(1 for r in fed.records.values() if r.waiting)
    t = time.perf_counter()
    fed.sync()
    rows.append(("next cycle", waiting, sum(1 for r in fed.records.values() if r.placement.placed) - dispatched,
                 time.perf_counter() - t))

    # one member's copies finish: their reservations and capacity come back
    busy = max(fed.members.values(), key=lambda m: len(list(m.capacity.reserved_jobs())))
    for key in list(busy.capacity.reserved_jobs()):
        busy.capacity.release(key)
    clock.advance_to(clock.now() + 1.0)
    before = sum(1 for r in fed.records.values() if r.placement.placed)
    d0 = fed.dispatcher.decisions
    t = time.perf_counter()
    fed.sync()
    rows.append(("after a finish", fed.dispatcher.decisions - d0,
                 sum(1 for r in fed.records.values() if r.placement.placed) - before, time.perf_counter() - t))

    print(f"{jobs:,} queued jobs over {MEMBERS} members ({nodes:,} nodes, {nodes * 8:,} GPUs); "
          f"setup {setup:.1f}s; python {sys.version.split()[0]}")
    print()
    print(f"| {'step':<15} | {'jobs evaluated':>14} | {'dispatched':>10} | {'seconds':>8} | {'decisions/s':>11} |")
    print(f"|{'-' * 17}|{'-' * 16}|{'-' * 12}|{'-' * 10}|{'-' * 13}|")
    for name, evaluated, placed, seconds in rows:
        rate = evaluated / seconds if seconds > 0 else float("inf")
        print(f"| {name:<15} | {evaluated:>14,} | {placed:>10,} | {seconds:>8.2f} | {rate:>11,.0f} |")
    copies = sum(len(s.list("jobs.batch.volcano.sh")[0]) for s in stores.values())
    print()
    print(f"jobs placed in members: {copies:,}; waiting on the host: "
          f"{sum(1 for r in fed.records.values() if r.waiting):,}")


if __name__ == "__main__":
    main()
