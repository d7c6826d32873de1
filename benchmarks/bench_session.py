"""One scheduling session on synthetic GPU clusters: how long, how many pods placed per second.

    python benchmarks/bench_session.py            # the full table (a few minutes)
    python benchmarks/bench_session.py --quick    # the smallest plain and topology rows only
    python benchmarks/bench_session.py --command  # only the whole-command table

The whole-command table runs ``pumice schedule -f FILE`` as a user would (``-o json``, then printing its
tables to a pipe), on a JSON List
written to a temporary file (5,000 nodes, 50,000 pending pods in 2,274 gangs of 8-36, about 22 MB):
reading and validating the objects, the snapshot, the session and the output, with the command's
wall time, CPU time and peak memory (its own process), run as installed (from its bytecode cache).

Each row runs in its own process so that its peak memory is its own. Nodes: 32 CPU, 256Gi,
8 GPUs. Pods: gang jobs of 8-64 pods (minMember = replicas) in four weighted queues, with pumice's
default configuration (Volcano's shipped one with weights that hold under contention: the README).

Topology rows ("fat-tree") run the same pods on a 3-tier fat tree: leaf switches of 16-32 nodes
(tier 1), spines of 8 leaves (tier 2), fabrics of 4 spines (tier 3), discovered from node labels
as Volcano's label discoverer does; half of the jobs are hard-topology gangs
(``networkTopology: {mode: hard, highestTierAllowed: 1 or 2}``), and the configuration adds the
network-topology-aware plugin. "vs plain" is the session time over the plain row's of that size.

"issue 19" rows run the same pods with issue 19's plugins added to the shipped configuration:
nodegroup (nodes in four groups, each queue required to all and preferring its own), resource-strategy-fit
(GPU MostAllocated, sra on GPUs), tdm (a closed revocable zone on 1 node in 16), cdp and resourcequota.

"deviceshare" / "fragmentation" rows (issue 13, smallest size) add deviceshare (every GPU a slot), and
deviceshare with the fragmentation node order, to the shipped configuration's second tier.

The "numa" row (issue 13, smallest size) adds numa-aware: every node publishes a Numatopology (2 NUMA
nodes of 16 CPUs, static CPU manager, single-numa-node), and the pods of every other job are Guaranteed
with ``topologyPolicy: single-numa-node`` (their CPUs searched per candidate node).
The "usage" row (issue 13, smallest size) adds the usage plugin, every node with a fresh reading of
0-95% CPU and memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from typing import Any

SIZES = [(1000, 10_000), (1000, 50_000), (5000, 10_000), (5000, 50_000), (10_000, 10_000), (10_000, 50_000)]
#: Sizes that also get a topology row, printed under the plain one.
TOPOLOGY_SIZES = {(1000, 10_000), (5000, 10_000), (5000, 50_000)}
LEAF_LABEL, SPINE_LABEL, FABRIC_LABEL = "bench.pumice.dev/leaf", "bench.pumice.dev/spine", "bench.pumice.dev/fabric"
DISCOVERY = {"networkTopologyTypes": {"fat-tree": [
    {"nodeLabel": FABRIC_LABEL}, {"nodeLabel": SPINE_LABEL}, {"nodeLabel": LEAF_LABEL},
    {"nodeLabel": "kubernetes.io/hostname"}]}}
#: Volcano's shipped configuration plus the network-topology-aware plugin (as its CI conf has it).
TOPOLOGY_PLUGIN = "  - name: network-topology-aware\n"
#: (cpu, memory, GPUs) per pod; a job's pods share one. On average 2.25 CPU, 15Gi, 0.5 GPU, so
#: 50,000 pods fit in 5,000 nodes (about 70% of CPU, 62% of GPUs) and overflow 1,000 nodes.
#: Issue 19's plugins, appended to the shipped configuration's second tier.
ISSUE19_PLUGINS = """\
  - name: nodegroup
  - name: resource-strategy-fit
    arguments:
      resources:
        nvidia.com/gpu: {type: MostAllocated, weight: 2}
        cpu: {type: LeastAllocated, weight: 1}
      sra: {enable: true, resources: nvidia.com/gpu, weight: 1}
  - name: tdm
    arguments:
      tdm.revocable-zone.rz1: "0:00-0:01"
  - name: cdp
  - name: resourcequota
  - name: pdb
  - name: task-topology
  - name: rescheduling
  - name: extender
"""
#: The issue 19 row's actions: the default ones and the new eviction actions.
ISSUE19_ACTIONS = 'actions: "enqueue, allocate, backfill, shuffle, gangpreempt, gangreclaim"'
#: Sizes that also get an "issue 19" row.
ISSUE19_SIZES = {(1000, 10_000), (5000, 50_000)}
GROUPS = ["ng-0", "ng-1", "ng-2", "ng-3"]
SHAPES = [("1", "4Gi", "0"), ("2", "16Gi", "1"), ("4", "32Gi", "1"), ("2", "8Gi", "0")]


def fat_tree_labels(nodes: int, seed: int = 11) -> list[dict[str, str]]:
    """Per node: its leaf (16-32 nodes), spine (8 leaves) and fabric (4 spines) labels."""
    rng = random.Random(seed)
    out: list[dict[str, str]] = []
    leaf = 0
    while len(out) < nodes:
        size = min(rng.randint(16, 32), nodes - len(out))
        spine, fabric = leaf // 8, leaf // 32
        out += [{LEAF_LABEL: f"leaf-{leaf:03d}", SPINE_LABEL: f"spine-{spine:02d}", FABRIC_LABEL: f"fabric-{fabric}"}
                ] * size
        leaf += 1
    return out


def cluster(nodes: int, pods: int, seed: int = 7, topology: bool = False,
            issue19: bool = False, numa: bool = False) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = []
    for i, (q, weight) in enumerate((("q-research", 1), ("q-prod", 2), ("q-batch", 1), ("q-dev", 1))):
        spec: dict[str, Any] = {"weight": weight}
        if issue19:
            spec["affinity"] = {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": GROUPS,
                                                      "preferredDuringSchedulingIgnoredDuringExecution": [GROUPS[i]]}}
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
                     "spec": spec, "status": {"state": "Open"}})
    alloc = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
    labels = fat_tree_labels(nodes) if topology else [{}] * nodes
    if issue19:
        labels = [{"volcano.sh/nodegroup-name": GROUPS[i % 4],
                   **({"volcano.sh/revocable-zone": "rz1"} if i % 16 == 15 else {})} for i in range(nodes)]
    node_objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}", "labels": dict(labels[i])},
                  "status": {"allocatable": alloc, "capacity": alloc}} for i in range(nodes)]
    objs += node_objs
    if numa:
        from pumice.api.numa import declared_numatopology

        for nd in node_objs:
            nd["metadata"]["annotations"] = {"pumice.io/numa-nodes": "2", "pumice.io/cpu-manager-policy": "static",
                                             "pumice.io/topology-manager-policy": "single-numa-node"}
            objs.append(declared_numatopology(nd))
    if topology:
        from pumice.topology_discovery import discover_hypernodes

        objs += discover_hypernodes(node_objs, DISCOVERY)
    made = j = 0
    queues = ["q-research", "q-prod", "q-batch", "q-dev"]
    while made < pods:
        size = min(rng.randint(8, 64), pods - made)
        cpu, mem, gpu = rng.choice(SHAPES)
        name = f"job-{j:05d}"
        spec: dict[str, Any] = {"minMember": size, "queue": queues[j % 4]}
        if topology and j % 2 == 0:
            spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1 if j % 4 == 0 else 2}
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "bench"},
                     "spec": spec, "status": {"phase": "Inqueue"}})
        pinned = numa and j % 2 == 0
        for k in range(size):
            requests = {"cpu": cpu, "memory": mem, **({"nvidia.com/gpu": gpu} if gpu != "0" else {})}
            objs.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-worker-{k}", "namespace": "bench",
                             "annotations": {"scheduling.k8s.io/group-name": name,
                                             **({"volcano.sh/numa-topology-policy": "single-numa-node"}
                                                if pinned else {})}},
                "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "resources": {
                    "requests": requests, **({"limits": dict(requests)} if pinned else {})}}]},
                "status": {"phase": "Pending"},
            })
        made += size
        j += 1
    return objs


def run_one(nodes: int, pods: int, topology: bool = False, issue19: bool = False, extra: str = "") -> dict[str, Any]:
    from pumice.scheduler import build_cluster_state, load_conf, run_session
    from pumice.scheduler.conf import DEFAULT_CONF

    objs = cluster(nodes, pods, topology=topology, issue19=issue19, numa="numa-aware" in extra.split(","))
    conf = load_conf(DEFAULT_CONF + TOPOLOGY_PLUGIN) if topology else None
    if issue19:
        conf = load_conf((DEFAULT_CONF + ISSUE19_PLUGINS).replace('actions: "enqueue, allocate, backfill"',
                                                                  ISSUE19_ACTIONS))
    if extra:
        conf = load_conf(DEFAULT_CONF + "".join(f"  - name: {p}\n" for p in extra.split(",") if p))
    t0 = time.perf_counter()
    state = build_cluster_state(objs)
    if "usage" in extra.split(","):
        state.node_usage = _readings(state.nodes.names)
    t1 = time.perf_counter()
    outcome = run_session(state, conf)
    t2 = time.perf_counter()
    placed = len(outcome.binds)
    return {
        "nodes": nodes, "pods": pods, "snapshot_s": t1 - t0, "session_s": t2 - t1, "placed": placed,
        "pods_per_s": placed / (t2 - t1) if t2 > t1 else 0.0,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _readings(names: list[str], seed: int = 3) -> Any:
    """A fresh node-metrics reading per node: 0-95% of the benchmark nodes' 32 CPUs and 256Gi."""
    from pumice.node_metrics import NodeMetrics, NodeUsage

    rng = random.Random(seed)
    now = time.time()
    return NodeUsage({n: NodeMetrics(rng.uniform(0, 0.95) * 32000, rng.uniform(0, 0.95) * 256 * 2**30, now, 30.0)
                      for n in names}, 30.0, 1)


#: The whole command's input: (nodes, pods, gang sizes).
COMMAND_SIZE = (5000, 50_000, (8, 36))


def command_objects(nodes: int, pods: int, gang: tuple[int, int], seed: int = 7) -> list[dict[str, Any]]:
    """A dry run's file as Volcano's controllers leave a cluster: queues, nodes, PodGroups and their
    pending pods (with the labels and annotations of a Volcano Job's pods)."""
    rng = random.Random(seed)
    objs = cluster(nodes, 0)
    queues = ["q-research", "q-prod", "q-batch", "q-dev"]
    made = j = 0
    while made < pods:
        size = min(rng.randint(*gang), pods - made)
        cpu, mem, gpu = rng.choice(SHAPES)
        name = f"job-{j:05d}"
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "bench"},
                     "spec": {"minMember": size, "queue": queues[j % 4],
                              "minResources": {"cpu": str(int(cpu) * size)}},
                     "status": {"phase": "Inqueue"}})
        requests = {"cpu": cpu, "memory": mem, **({"nvidia.com/gpu": gpu} if gpu != "0" else {})}
        for k in range(size):
            objs.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-worker-{k}", "namespace": "bench",
                             "annotations": {"scheduling.k8s.io/group-name": name,
                                             "volcano.sh/task-spec": "worker", "volcano.sh/task-index": str(k)}},
                "spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [
                    {"name": "main", "image": "train:1.0", "resources": {"requests": requests}}]},
                "status": {"phase": "Pending"},
            })
        made += size
        j += 1
    return objs


def run_command() -> list[dict[str, Any]]:
    """``pumice schedule -f`` on the file in a child process, once with ``-o json`` and once printing its
    tables (to a pipe): wall, CPU (user + system), peak MiB, each."""
    import tempfile
    from pathlib import Path

    nodes, pods, gang = COMMAND_SIZE
    objs = command_objects(nodes, pods, gang)
    gangs = sum(1 for o in objs if o["kind"] == "PodGroup")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
        size_mb = path.stat().st_size / 1e6
        del objs
        # the child's own peak (VmHWM): ru_maxrss of a child starts from its parent's, which built the objects
        code = ("import sys\nfrom pumice.cli.main import app\nsys.argv = ['pumice'] + sys.argv[1:]\ntry:\n"
                "    app()\nfinally:\n    print([line for line in open('/proc/self/status') "
                "if line.startswith('VmHWM')][0].split()[1], file=sys.stderr)")
        # as installed: from the bytecode cache (pip compiles it), written here before the clock runs
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-c", "import pumice.cli.main, pumice.cli.schedule"], env=env, check=True)
        for output in ("json", "tables"):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", code, "schedule", "-f", str(path),
                                  *(["-o", "json"] if output == "json" else [])],
                                 capture_output=True, text=True, check=True, env=env)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if output == "json":
                placed = len(json.loads(out.stdout)["binds"])
            else:  # the title of the binds table: "Binds (N)"
                title = next(line for line in out.stdout.splitlines() if line.startswith("Binds ("))
                placed = int(title[len("Binds ("):-1])
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            peak_kib = int(out.stderr.strip().splitlines()[-1])
            rows.append({"output": output, "nodes": nodes, "pods": pods, "gangs": gangs, "mb": size_mb,
                         "placed": placed, "wall_s": wall, "cpu_s": cpu, "peak_mib": peak_kib / 1024})
    return rows


def command_table() -> Any:
    from rich.table import Table

    rows = json.loads(subprocess.run([sys.executable, __file__, "--command-one"], capture_output=True, text=True,
                                     check=True).stdout.strip().splitlines()[-1])
    table = Table(title="pumice schedule -f FILE [-o json]: the whole command (read, validate, snapshot, session, "
                        "output)")
    table.add_column("output")
    for col in ("nodes", "pending pods", "gangs", "file MB", "placed", "wall s", "CPU s", "peak MiB"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["output"], f"{r['nodes']:,}", f"{r['pods']:,}", f"{r['gangs']:,}", f"{r['mb']:.1f}",
                      f"{r['placed']:,}", f"{r['wall_s']:.2f}", f"{r['cpu_s']:.2f}", f"{r['peak_mib']:.0f}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only the smallest row")
    parser.add_argument("--one", nargs=2, type=int, metavar=("NODES", "PODS"), help=argparse.SUPPRESS)
    parser.add_argument("--topology", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--command", action="store_true", help="only the whole-command table")
    parser.add_argument("--command-one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--issue19", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--extra", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one, topology=args.topology, issue19=args.issue19, extra=args.extra)))
        return
    if args.command_one:
        print(json.dumps(run_command()))
        return
    from rich.console import Console
    from rich.table import Table

    if args.command:
        Console(width=max(Console().width, 110)).print(command_table())
        return

    table = Table(title="pumice: one scheduling session (default conf; fat-tree rows add topology, "
                        "issue 19 rows its plugins)")
    for col in ("nodes", "pending pods", "variant", "placed", "snapshot s", "session s", "vs plain",
                "pods placed/s", "peak MiB"):
        table.add_column(col, justify="right")
    for nodes, pods in SIZES[:1] if args.quick else SIZES:
        plain_s = None
        variants = ["-", *(["fat-tree"] if (nodes, pods) in TOPOLOGY_SIZES else []),
                    *(["issue 19"] if (nodes, pods) in ISSUE19_SIZES else []),
                    *(["deviceshare", "fragmentation", "numa", "usage"] if (nodes, pods) == SIZES[0] else [])]
        for variant in variants:
            flag = {"-": [], "fat-tree": ["--topology"], "issue 19": ["--issue19"],
                    "deviceshare": ["--extra", "deviceshare"],
                    "fragmentation": ["--extra", "deviceshare,fragmentation"],
                    "numa": ["--extra", "numa-aware"],
                    "usage": ["--extra", "usage"]}[variant]
            cmd = [sys.executable, __file__, "--one", str(nodes), str(pods), *flag]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            ratio = f"{r['session_s'] / plain_s:.2f}x" if variant != "-" and plain_s else "-"
            plain_s = plain_s or r["session_s"]
            table.add_row(f"{nodes:,}", f"{pods:,}", variant, f"{r['placed']:,}",
                          f"{r['snapshot_s']:.2f}", f"{r['session_s']:.2f}", ratio, f"{r['pods_per_s']:,.0f}",
                          f"{r['peak_mib']:.0f}")
    console = Console(width=max(Console().width, 110))
    console.print(table)
    if not args.quick:
        console.print(command_table())


if __name__ == "__main__":
    main()
