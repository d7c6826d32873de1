"""The one-fabric promise over random clusters (issue 11 item 1, issue 19 defect 1).

Random HyperNode trees (members by exact name, regex and label; 1-3 tiers), nodes made unusable in
every way a predicate refuses one (taint, cordon, NotReady, node selector, required node affinity,
full, pod count), random hard and soft jobs. Checked with an independent model of the tree:

- every hard gang that is placed lies inside one HyperNode of a tier it allows;
- a lone hard job is placed (at least ``minAvailable`` pods) whenever one HyperNode of an allowed
  tier holds ``minAvailable`` of its pods on usable nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.runtime.schedconf import live_default_conf
from pumice.scheduler import run_session
from tests.builders import Obj, node, pod, podgroup, queue

ZONE_OK, DISK = "example.com/zone-ok", "example.com/disk"
UNUSABLE = ("taint", "cordon", "notready", "selector", "affinity", "full", "podcount")


@dataclass
class Cluster:
    objects: list[Obj]
    #: HyperNode -> (tier, its nodes), as the generator built it (the scheduler's tree is not asked)
    hypernodes: dict[str, tuple[int, set[str]]]
    #: node -> free CPUs (0 when unusable) and free pod slots
    free_cpu: dict[str, int] = field(default_factory=dict)
    free_pods: dict[str, int] = field(default_factory=dict)


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    tiers = draw(st.integers(1, 3))
    groups = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))  # tier-1 HyperNodes and their sizes
    objs: list[Obj] = [queue("default", weight=1, state="Open")]
    hns: dict[str, tuple[int, set[str]]] = {}
    cl = Cluster(objs, hns)
    tier1: list[str] = []
    for g, size in enumerate(groups):
        names = [f"r{g}-n{i}" for i in range(size)]
        for name in names:
            cpu = draw(st.sampled_from([4, 8]))
            why = draw(st.sampled_from((None, None, None, *UNUSABLE)))
            labels = {"rack": f"r{g}"}
            if why != "selector":
                labels[DISK] = "ssd"
            if why != "affinity":
                labels[ZONE_OK] = "yes"
            n = node(name, cpu=str(cpu), memory="64Gi", pods="1" if why == "podcount" else "110", labels=labels,
                     taints=[{"key": "maintenance", "value": "x", "effect": "NoSchedule"}] if why == "taint" else None)
            if why == "cordon":
                n["spec"] = {"unschedulable": True}
            if why == "notready":
                n["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
            objs.append(n)
            if why in ("full", "podcount"):  # a running pod of another job: all the CPUs, or the one pod slot
                objs.append(podgroup(f"fill-{name}", queue="default", phase="Running"))
                objs.append(pod(f"fill-{name}", group=f"fill-{name}", cpu=str(cpu) if why == "full" else None,
                                node=name, phase="Running"))
            cl.free_cpu[name] = cpu if why in (None, "podcount") else 0
            cl.free_pods[name] = 0 if why == "podcount" else 110
        kind = draw(st.sampled_from(["exact", "regex", "label"]))
        if kind == "exact":
            members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in names]
        elif kind == "regex":
            members = [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^r{g}-n[0-9]+$"}}}]
        else:
            members = [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": f"r{g}"}}}}]
        objs.append(_hypernode(f"h1-{g}", 1, members))
        hns[f"h1-{g}"] = (1, set(names))
        tier1.append(f"h1-{g}")
    below = tier1
    for tier in range(2, tiers + 1):  # each higher tier groups the one below in runs of 1-3
        cuts = draw(st.lists(st.integers(1, 3), min_size=len(below), max_size=len(below)))
        level: list[str] = []
        i = 0
        while i < len(below):
            part = below[i:i + cuts[i]]
            name = f"h{tier}-{len(level)}"
            objs.append(_hypernode(name, tier, [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}}
                                                for c in part]))
            hns[name] = (tier, set().union(*(hns[c][1] for c in part)))
            level.append(name)
            i += len(part)
        below = level
    # Volcano's virtual cluster top: every node, one tier above the highest (a job allowing that tier
    # is not bound by the tree)
    hns["<cluster-top>"] = (tiers + 1, set(cl.free_cpu))
    return cl


def _hypernode(name: str, tier: int, members: list[Obj]) -> Obj:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": members}}


@dataclass
class Job:
    name: str
    replicas: int
    min_available: int
    cpu: int
    mode: str
    tier: int


@st.composite
def jobs(draw: st.DrawFn, name: str) -> Job:
    replicas = draw(st.integers(1, 6))
    return Job(name, replicas, draw(st.integers(1, replicas)), draw(st.sampled_from([1, 2, 4])),
               draw(st.sampled_from(["hard", "hard", "soft"])), draw(st.integers(1, 3)))


def job_objects(job: Job) -> list[Obj]:
    out: list[Obj] = [podgroup(job.name, min_member=job.min_available, queue="default", phase="Inqueue",
                               min_resources={"cpu": str(job.cpu * job.min_available)},
                               topology={"mode": job.mode, "highestTierAllowed": job.tier})]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE_OK, "operator": "In", "values": ["yes"]}]}]}}}
    for i in range(job.replicas):
        p = pod(f"{job.name}-{i}", group=job.name, cpu=str(job.cpu), phase="Pending")
        p["spec"]["nodeSelector"] = {DISK: "ssd"}
        p["spec"]["affinity"] = affinity
        out.append(p)
    return out


def inside_one_allowed(cl: Cluster, nodes: set[str], tier: int) -> bool:
    return any(t <= tier and nodes <= members for t, members in cl.hypernodes.values())


def holds(cl: Cluster, members: set[str], job: Job) -> int:
    """How many of the job's pods the usable nodes of a HyperNode hold."""
    return sum(min(cl.free_cpu[n] // job.cpu, cl.free_pods[n]) for n in members)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cl=clusters(), js=st.lists(jobs("j"), min_size=1, max_size=4))
def test_every_placed_hard_gang_lies_in_one_allowed_hypernode(cl: Cluster, js: list[Job]) -> None:
    named = [Job(f"j{i}", j.replicas, j.min_available, j.cpu, j.mode, j.tier) for i, j in enumerate(js)]
    objects = [*cl.objects, *(o for j in named for o in job_objects(j))]
    out = run_session(objects, live_default_conf())
    for job in named:
        placed = {node for key, node in out.binds.items() if key.startswith(f"default/{job.name}-")}
        assert not placed or len(placed) <= sum(1 for n in placed if cl.free_cpu[n] > 0), "unusable node used"
        if job.mode == "hard" and placed:
            assert inside_one_allowed(cl, placed, job.tier), (job, placed)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cl=clusters(), job=jobs("j0"))
def test_a_hard_job_that_fits_one_allowed_hypernode_runs(cl: Cluster, job: Job) -> None:
    job.mode = "hard"
    out = run_session([*cl.objects, *job_objects(job)], live_default_conf())
    placed = [node for key, node in out.binds.items() if key.startswith("default/j0-")]
    fits = any(t <= job.tier and holds(cl, members, job) >= job.min_available for t, members in cl.hypernodes.values())
    reason = next(j.reason for j in out.jobs if j.key == "default/j0")
    if fits:
        assert len(placed) >= job.min_available, (job, reason)
        assert inside_one_allowed(cl, set(placed), job.tier), (job, placed)
    else:
        assert placed == [], (job, placed)


def fits_empty(cl: Cluster, job: Job) -> bool:
    """Whether the gang fits the cluster with no other job: in one allowed HyperNode if hard."""
    if job.mode == "hard":
        return any(t <= job.tier and holds(cl, members, job) >= job.min_available
                   for t, members in cl.hypernodes.values())
    return sum(min(cl.free_cpu[n] // job.cpu, cl.free_pods[n]) for n in cl.free_cpu) >= job.min_available


# --- the same invariant in the simulator, with arrivals and completions --------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cl=clusters(), js=st.lists(jobs("j"), min_size=1, max_size=5),
       times=st.lists(st.tuples(st.integers(0, 120), st.integers(10, 90)), min_size=5, max_size=5))
def test_simulated_hard_gangs_stay_in_one_allowed_hypernode(tmp_path_factory: Any, cl: Cluster, js: list[Job],
                                                           times: list[tuple[int, int]]) -> None:
    """Gangs arrive and finish over time (the simulator's default configuration): each hard gang
    runs inside one HyperNode of an allowed tier, and every gang runs at some point (only gangs
    that fit the empty cluster are submitted)."""
    import yaml

    from pumice.sim import load_scenario, run_scenario

    nodes = [o for o in cl.objects if o["kind"] == "Node"]
    notready = [n["metadata"]["name"] for n in nodes if n["status"].get("conditions")]
    timeline: list[Obj] = [{"at": 0, "apply": [o for o in cl.objects if o["kind"] not in ("Node",)]}]
    timeline += [{"at": 0, "fail": name} for name in notready]
    named: list[Job] = []
    for i, (job, (at, seconds)) in enumerate(zip(js, times, strict=False)):
        job = Job(f"j{i}", job.replicas, job.replicas, job.cpu, job.mode, job.tier)  # whole gangs
        if not fits_empty(cl, job):
            continue  # admitted, it would hold its minResources in enqueue for ever (Volcano's rule)
        named.append(job)
        objs = job_objects(job)
        objs[0]["status"] = {"phase": "Pending"}
        for p in objs[1:]:
            p["metadata"].setdefault("annotations", {})["pumice.io/duration"] = str(seconds)
        timeline.append({"at": at + 1, "apply": objs})
    path = tmp_path_factory.mktemp("sim") / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "hard-topology", "cluster": {"nodes": nodes}, "timeline": timeline,
                                    "until": "30m"}, sort_keys=False))
    result = run_scenario(load_scenario(path))
    pods = [p for p in result.recorder.pods.values() if p.name.startswith("j")]
    for job in named:
        placed = {p.node for p in pods if p.name.rsplit("-", 1)[0] == job.name and p.node}
        if job.mode == "hard" and placed:
            assert inside_one_allowed(cl, placed, job.tier), (job, placed)
        assert len(placed) > 0, (job, "never ran")
