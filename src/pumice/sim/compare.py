"""``pumice sim --trace openb --compare binpack,fragmentation,...``: placement policies side by side on
the same arrivals, as FGD's evaluation measures them (Weng et al., ATC'23).

Pods of the trace arrive one after the other (the trace's order, then drawn from it at random with a
fixed seed once ``--inflate`` asks for more than the trace holds) and never leave, until the GPUs they
asked for reach ``inflate`` x the cluster's GPU capacity. Each arrival is one scheduling session (the
scheduler's own code on a live cache, as ``pumice run`` keeps it); a pod no node can take fails and is
dropped. At each arrived workload (GPU asked so far, % of capacity) the *unallocated GPU* fraction is
1 - allocated / capacity: past 100 % arrived, what is left unallocated is what fragmentation wasted.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pumice.scheduler import load_conf, run_session
from pumice.scheduler.gpus import GPU_MILLI, NVIDIA_GPU
from pumice.scheduler.live import LiveCache

from .errors import ScenarioError
from .trace import GPU_MODEL_LABEL, NODE_COLUMNS, NODE_FILES, POD_COLUMNS, _rows, openb_node, openb_pod

__all__ = ["POLICIES", "PolicyResult", "compare_policies", "policy_conf"]

_TIER0 = "- plugins:\n  - name: priority\n  - name: gang\n"
_DEVICES = "  - name: predicates\n  - name: deviceshare\n"
#: The policies ``--compare`` knows: volcano-scheduler.conf texts (pods arrive in Inqueue PodGroups).
POLICIES: dict[str, str] = {
    # Volcano's binpack plugin weighing GPUs (whole and shares) above cpu and memory; GPUs first fit
    "binpack": "actions: allocate\ntiers:\n" + _TIER0 + "- plugins:\n" + _DEVICES
    + "  - name: binpack\n    arguments:\n      binpack.weight: 10\n"
    + f"      binpack.resources: {NVIDIA_GPU}, {GPU_MILLI}\n"
    + f"      binpack.resources.{NVIDIA_GPU}: 5\n      binpack.resources.{GPU_MILLI}: 5\n",
    # the fragmentation plugin alone orders nodes; GPUs best fit
    "fragmentation": "actions: allocate\ntiers:\n" + _TIER0 + "- plugins:\n" + _DEVICES
    + "  - name: fragmentation\n",
    # Volcano's shipped node order (least requested, balanced: spreads)
    "default": "actions: allocate\ntiers:\n" + _TIER0 + "- plugins:\n" + _DEVICES + "  - name: nodeorder\n",
}
#: Arrived workload (% of the cluster's GPU capacity) at which the table reports.
PERCENTILES = (50, 60, 70, 80, 90, 95, 100, 105, 110, 120, 130)


def policy_conf(name: str) -> str:
    if name not in POLICIES:
        raise ScenarioError("--compare", name, f"unknown policy (known: {', '.join(POLICIES)})")
    return POLICIES[name]


@dataclass
class PolicyResult:
    name: str
    capacity_gpu: float
    #: Per arrival: arrived GPU (% of capacity) and unallocated GPU fraction (of capacity) after it.
    arrived: list[float] = field(default_factory=list)
    unallocated: list[float] = field(default_factory=list)
    pods: int = 0
    placed: int = 0
    failed: int = 0
    failed_gpu: int = 0
    asked_gpu: float = 0.0
    allocated_gpu: float = 0.0
    seconds: float = 0.0

    def unallocated_at(self, pct: float) -> float | None:
        """Unallocated GPU fraction when the arrived workload first reached ``pct`` % (None: never)."""
        arrived = np.asarray(self.arrived)
        i = int(np.searchsorted(arrived, pct))
        return None if i >= len(arrived) else float(self.unallocated[i])

    @property
    def allocation_rate(self) -> float:
        """GPU allocated / GPU asked by the pods that arrived."""
        return self.allocated_gpu / self.asked_gpu if self.asked_gpu else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.name, "pods": self.pods, "placed": self.placed, "failed": self.failed,
            "failed_gpu_pods": self.failed_gpu, "capacity_gpu": self.capacity_gpu / 1000,
            "asked_gpu": self.asked_gpu / 1000, "allocated_gpu": self.allocated_gpu / 1000,
            "allocation_rate": self.allocation_rate, "seconds": self.seconds,
            "unallocated_at": {str(p): self.unallocated_at(p) for p in PERCENTILES},
        }


def _gpu_milli(requests: dict[str, str]) -> float:
    if NVIDIA_GPU in requests:
        return 1000.0 * int(requests[NVIDIA_GPU])
    return float(int(requests.get(GPU_MILLI, "0")))


def load_arrivals(directory: Path, pods: str, nodes: str, limit: int | None, inflate: float,
                  seed: int, node_limit: int | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float]:
    """(nodes, pod specs in arrival order, GPU capacity in milli), read in place from the trace's CSVs."""
    if inflate <= 0:
        raise ScenarioError("--inflate", "", f"must be positive, got {inflate:g}")
    if nodes not in NODE_FILES:
        raise ScenarioError(str(directory), "nodes", f"use one of {', '.join(NODE_FILES)}")
    node_path = directory / NODE_FILES[nodes]
    node_objs = [openb_node(r, str(node_path), i + 2) for i, r in enumerate(_rows(node_path, NODE_COLUMNS))]
    node_objs = node_objs[:node_limit] if node_limit is not None else node_objs
    models = {n["metadata"]["labels"].get(GPU_MODEL_LABEL) for n in node_objs}
    pod_path = directory / f"openb_pod_list_{pods}.csv"
    entries = [openb_pod(r, str(pod_path), i + 2, "default", "default")
               for i, r in enumerate(_rows(pod_path, POD_COLUMNS))]
    entries.sort(key=lambda e: e[0])
    # pods asking for a GPU model none of the nodes has would only fail (on a slice of the nodes)
    specs = [p for _, p in entries if _models_present(p, models)][: limit if limit is not None else None]
    if not specs:
        raise ScenarioError(str(pod_path), "", "no pods")
    capacity = sum(1000.0 * int(n["status"]["allocatable"].get(NVIDIA_GPU, "0")) for n in node_objs)
    want = inflate * capacity
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    asked = 0.0
    k = 0
    while asked < want:
        spec = specs[k] if k < len(specs) else rng.choice(specs)
        asked += _gpu_milli(spec["spec"]["containers"][0]["resources"]["requests"])
        out.append({**spec, "name": f"{spec['name']}-{k}"})
        k += 1
        if k > 50 * max(len(specs), 1000):
            break  # a pod list with (almost) no GPU pods never reaches the target
    return node_objs, out, capacity


def _models_present(spec: dict[str, Any], models: set[Any]) -> bool:
    terms = (((spec["spec"].get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    wanted = [v for t in terms for e in t.get("matchExpressions") or [] for v in e.get("values") or []]
    return not wanted or any(m in models for m in wanted)


def _objects(spec: dict[str, Any], k: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PodGroup (Inqueue, created at second ``k``: jobs are taken in arrival order) and the pod."""
    name = spec["name"]
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(k))
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}", "creationTimestamp": created},
             "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Inqueue"}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "uid": f"pod-{name}", "creationTimestamp": created,
                        "annotations": {"scheduling.k8s.io/group-name": name}},
           "spec": spec["spec"], "status": {"phase": "Pending"}}
    return group, pod


def run_policy(name: str, conf_text: str, nodes: list[dict[str, Any]], arrivals: list[dict[str, Any]],
               capacity: float, rate: int = 1, progress: Callable[[int], None] | None = None) -> PolicyResult:
    """Arrivals in order, ``rate`` of them per scheduling session (the pods arriving in one period)."""
    if rate < 1:
        raise ScenarioError("--arrival-rate", "", f"must be at least 1 pod a session, got {rate}")
    conf = load_conf(conf_text, source=f"--compare {name}")
    cache = LiveCache()
    for n in nodes:
        cache.apply("ADDED", n)
    cache.apply("ADDED", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                          "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    result = PolicyResult(name, capacity)
    start = time.perf_counter()
    for first in range(0, len(arrivals), rate):
        batch = [(k, *_objects(spec, k), _gpu_milli(spec["spec"]["containers"][0]["resources"]["requests"]))
                 for k, spec in enumerate(arrivals[first : first + rate], start=first)]
        for _, group, pod, _ in batch:
            cache.apply("ADDED", group)
            cache.apply("ADDED", pod)
        outcome = run_session(cache.state(), conf, revert=True, now=float(first + rate))
        cache.reported()
        for _, group, pod, gpu in batch:
            key = f"default/{pod['metadata']['name']}"
            node = outcome.binds.get(key)
            result.pods += 1
            result.asked_gpu += gpu
            if node is None:
                result.failed += 1
                result.failed_gpu += gpu > 0
                cache.apply("DELETED", pod)
                cache.apply("DELETED", group)
            else:
                result.placed += 1
                result.allocated_gpu += gpu
                meta = {**pod["metadata"], "annotations": {**pod["metadata"]["annotations"],
                                                           **outcome.pod_annotations.get(key, {})}}
                cache.apply("MODIFIED", {**pod, "metadata": meta, "spec": {**pod["spec"], "nodeName": node},
                                         "status": {"phase": "Running"}})
            result.arrived.append(100.0 * result.asked_gpu / capacity if capacity else 0.0)
            result.unallocated.append(1.0 - result.allocated_gpu / capacity if capacity else 0.0)
        if progress is not None:
            progress(first + len(batch))
    result.seconds = time.perf_counter() - start
    return result


def compare_policies(directory: Path, policies: list[str], *, pods: str = "default", nodes: str = "all",
                     limit: int | None = None, inflate: float = 1.3, seed: int = 0, rate: int = 1,
                     node_limit: int | None = None,
                     progress: Callable[[str, int, int], None] | None = None) -> list[PolicyResult]:
    confs = [(p, policy_conf(p)) for p in policies]
    node_objs, arrivals, capacity = load_arrivals(directory, pods, nodes, limit, inflate, seed, node_limit)
    out = []
    for name, text in confs:
        def step(i: int, name: str = name) -> None:
            if progress is not None:
                progress(name, i, len(arrivals))
        out.append(run_policy(name, text, node_objs, arrivals, capacity, rate, step))
    return out


def write_compare_report(results: list[PolicyResult], out: Path, title: str) -> None:
    """``index.html`` with the unallocated-GPU curves (``unallocated.png``) and ``compare.json``."""
    import html
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 4))
    for r in results:
        ax.plot(r.arrived, np.asarray(r.unallocated) * 100, label=r.name)
    ax.set_xlabel("arrived workload (% of cluster GPU capacity)")
    ax.set_ylabel("unallocated GPU (% of capacity)")
    ax.set_xlim(left=min((r.arrived[0] for r in results if r.arrived), default=0))
    ax.axvline(100, color="grey", linewidth=0.6)
    ax.legend()
    ax.set_title("Unallocated GPUs as the workload arrives")
    fig.tight_layout()
    fig.savefig(out / "unallocated.png", dpi=110)
    plt.close(fig)
    data = [r.to_json() for r in results]
    (out / "compare.json").write_text(json.dumps(data, indent=2))
    head = "".join(f"<th>{p}%</th>" for p in PERCENTILES)
    rows = []
    for r in results:
        cells = "".join(f"<td>{'' if (v := r.unallocated_at(p)) is None else f'{v * 100:.1f}%'}</td>"
                        for p in PERCENTILES)
        rows.append(f"<tr><td>{html.escape(r.name)}</td>{cells}<td>{r.allocation_rate * 100:.1f}%</td>"
                    f"<td>{r.failed}</td></tr>")
    (out / "index.html").write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"
        f"<h1>{html.escape(title)}</h1><p>Unallocated GPU (% of capacity) at each arrived workload "
        f"(% of the cluster's GPU capacity); allocation rate = GPU allocated / GPU asked.</p>"
        f"<table border='1' cellpadding='4'><tr><th>policy</th>{head}<th>allocation rate</th>"
        f"<th>pods failed</th></tr>{''.join(rows)}</table>"
        f"<p><img src='unallocated.png' alt='unallocated GPU curves'></p></body></html>")
