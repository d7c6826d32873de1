"""Network-topology-aware scheduling: HyperNode tree, hard topology gangs, SubJobs, scoring.

The scenario: several InfiniBand fabrics in one cluster, nodes labelled with their fabric, one
tier-1 HyperNode per fabric (labelMatch) under a tier-2 spine. A PodGroup with
``networkTopology: {mode: hard, highestTierAllowed: 1}`` must land inside one fabric.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pumice.scheduler import build_cluster_state, load_conf, run_session
from pumice.scheduler.topology import CLUSTER_TOP, HyperNodeTree
from tests.builders import hypernode, node, pod, podgroup, queue

CONF = load_conf("""
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: priority
- plugins:
  - name: predicates
  - name: network-topology-aware
""")

FABRIC_LABEL = "example.com/ib-cluster"


QUEUE = queue("default", weight=1, state="Open")
#: GPU nodes, and the pods and PodGroups of the tests (namespace ``ml``, 8 CPUs and 64Gi a pod).
GPU_NODE: dict[str, Any] = {"cpu": "64", "memory": "512Gi", "capacity": True}
ML_POD: dict[str, Any] = {"namespace": "ml", "cpu": "8", "memory": "64Gi"}
ML_GROUP: dict[str, Any] = {"namespace": "ml", "queue": "default", "phase": "Inqueue"}


def fabrics(names: tuple[str, ...] = ("fabric-a", "fabric-b", "fabric-c"), per: int = 4) -> list[dict[str, Any]]:
    """Nodes labelled with their IB fabric, a tier-1 HyperNode per fabric, a tier-2 spine."""
    objs: list[dict[str, Any]] = [QUEUE]
    for f in names:
        objs += [node(f"{f}-n{i}", gpus=8, labels={FABRIC_LABEL: f}, **GPU_NODE) for i in range(per)]
        objs.append(hypernode(f, 1, [{"type": "Node", "selector": {"labelMatch": {
            "matchLabels": {FABRIC_LABEL: f}}}}], tier_name="ib-cluster"))
    objs.append(hypernode("spine", 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": f}}}
                                       for f in names], tier_name="spine"))
    return objs


def gang(name: str, size: int, tier: int | None = 1, min_member: int | None = None,
         mode: str = "hard") -> list[dict[str, Any]]:
    topology = None if tier is None else {"mode": mode, "highestTierAllowed": tier}
    objs = [podgroup(name, min_member=size if min_member is None else min_member, topology=topology, **ML_GROUP)]
    objs += [pod(f"{name}-worker-{i}", group=name, gpus=8, phase="Pending", **ML_POD) for i in range(size)]
    return objs


def fabric_of(node_name: str) -> str:
    return node_name.rsplit("-n", 1)[0]


def job_reason(outcome: Any, key: str) -> str:
    return next(j.reason for j in outcome.jobs if j.key == key)


# --- the HyperNode tree ----------------------------------------------------------------------------
def test_tree_members_tiers_and_lca() -> None:
    objs = [
        node("a-0", gpus=8, labels={"rack": "a"}, **GPU_NODE), node("a-1", gpus=8, labels={"rack": "a"}, **GPU_NODE),
        node("b-0", gpus=8, **GPU_NODE), node("b-1", gpus=8, **GPU_NODE), node("x", gpus=8, **GPU_NODE),
        hypernode("ra", 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "a"}}}}]),
        hypernode("rb", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "^b-[0-9]+$"}}}],
                  tier_name="rack"),
        hypernode("rx", 1, [{"type": "Node", "selector": {"exactMatch": {"name": "x"}}},
                            {"type": "Node", "selector": {"exactMatch": {"name": "gone"}}}]),
        hypernode("sp", 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": "ra"}}},
                            {"type": "HyperNode", "selector": {"exactMatch": {"name": "rb"}}}]),
    ]
    state = build_cluster_state(objs)
    tree = HyperNodeTree.build(state.hypernodes, state.nodes)
    idx = state.nodes.index
    assert tree.ready
    assert list(tree.infos["ra"].nodes) == [idx["a-0"], idx["a-1"]]
    assert list(tree.infos["rb"].nodes) == [idx["b-0"], idx["b-1"]]
    assert list(tree.infos["rx"].nodes) == [idx["x"]]
    assert len(tree.infos["sp"].nodes) == 4
    assert tree.infos["ra"].parent == "sp" and tree.infos["sp"].children == ["ra", "rb"]
    assert tree.tiers == [1, 2] and tree.tier_names == {"rack": 1}
    top = tree.infos[CLUSTER_TOP]
    assert top.tier == 3 and top.children == ["rx", "sp"] and len(top.nodes) == 5
    assert tree.lca("ra", "rb") == "sp"
    assert tree.lca("ra", "rx") == CLUSTER_TOP
    assert tree.lca("", "rb") == "rb"
    assert tree.lowest_hypernode_of_node(idx["b-1"]) == "rb"
    assert tree.hypernode_of_nodes(np.array([idx["a-0"], idx["b-0"]])) == "sp"


def test_two_parents_make_the_tree_unready_and_topology_jobs_wait() -> None:
    objs = [
        QUEUE, node("n0", gpus=8, **GPU_NODE), node("n1", gpus=8, **GPU_NODE),
        hypernode("leaf", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n"}}}]),
        hypernode("p1", 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf"}}}]),
        hypernode("p2", 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf"}}}]),
        *gang("job", 1),
    ]
    state = build_cluster_state(objs)
    assert not HyperNodeTree.build(state.hypernodes, state.nodes).ready
    out = run_session(objs, CONF)
    assert out.binds == {}
    assert "not ready" in job_reason(out, "ml/job")


# --- one fabric per gang -----------------------------------------------------------------------
def test_gang_lands_in_one_fabric_preferring_the_fullest() -> None:
    objs = [*fabrics(), podgroup("busy", min_member=1, **ML_GROUP),
            pod("busy-0", group="busy", gpus=8, node="fabric-b-n0", phase="Running", **ML_POD), *gang("train", 3)]
    out = run_session(objs, CONF)
    assert len(out.binds) == 3
    assert {fabric_of(n) for n in out.binds.values()} == {"fabric-b"}  # HyperNode binpack
    assert run_session(objs, CONF).binds == out.binds  # reproducible


def test_ties_between_fabrics_go_to_the_lowest_name() -> None:
    out = run_session(fabrics() + gang("train", 4), CONF)
    assert {fabric_of(n) for n in out.binds.values()} == {"fabric-a"}


def test_gang_fitting_no_fabric_stays_pending_and_says_so() -> None:
    objs = [*fabrics(), podgroup("busy", min_member=1, **ML_GROUP),
            pod("busy-0", group="busy", gpus=8, node="fabric-b-n0", phase="Running", **ML_POD), *gang("big", 5)]
    out = run_session(objs, CONF)
    assert out.binds == {}
    assert job_reason(out, "ml/big") == "no tier-1 HyperNode has 40 free GPUs; best has 32 (fabric-a)"
    # the same gang may span fabrics under the spine when tier 2 is allowed
    wide = run_session(fabrics() + gang("big", 5, tier=2), CONF)
    assert len(wide.binds) == 5


def test_tier_name_bounds_like_the_tier() -> None:
    objs = [*fabrics(),
            podgroup("big", min_member=5, topology={"mode": "hard", "highestTierName": "ib-cluster"}, **ML_GROUP)]
    objs += [pod(f"big-worker-{i}", group="big", gpus=8, phase="Pending", **ML_POD) for i in range(5)]
    assert run_session(objs, CONF).binds == {}
    objs[-6] = podgroup("big", min_member=5, topology={"mode": "hard", "highestTierName": "spine"}, **ML_GROUP)
    assert len(run_session(objs, CONF).binds) == 5


def test_new_pods_of_a_running_job_stay_in_its_fabric() -> None:
    objs = [*fabrics(),
            podgroup("elastic", min_member=2, topology={"mode": "hard", "highestTierAllowed": 1}, **ML_GROUP),
            pod("elastic-worker-0", group="elastic", gpus=8, node="fabric-c-n0", phase="Running", **ML_POD),
            pod("elastic-worker-1", group="elastic", gpus=8, node="fabric-c-n1", phase="Running", **ML_POD),
            pod("elastic-worker-2", group="elastic", gpus=8, phase="Pending", **ML_POD),
            pod("elastic-worker-3", group="elastic", gpus=8, phase="Pending", **ML_POD)]
    out = run_session(objs, CONF)
    assert len(out.binds) == 2
    assert {fabric_of(n) for n in out.binds.values()} == {"fabric-c"}


def test_soft_topology_packs_but_may_span() -> None:
    objs = fabrics(per=2) + gang("soft", 3, tier=1, mode="soft")
    out = run_session(objs, CONF)
    assert len(out.binds) == 3
    counts = sorted(sum(1 for n in out.binds.values() if fabric_of(n) == f) for f in ("fabric-a", "fabric-b"))
    assert counts == [1, 2]


# --- SubJobs ------------------------------------------------------------------------------------
def test_each_subgroup_lands_in_one_fabric() -> None:
    objs = fabrics()
    for f in ("fabric-a", "fabric-b", "fabric-c"):  # two nodes of every fabric are taken
        objs += [podgroup(f"busy-{f}", min_member=1, **ML_GROUP),
                 pod(f"busy-{f}-0", group=f"busy-{f}", gpus=8, node=f"{f}-n0", phase="Running", **ML_POD),
                 podgroup(f"busy2-{f}", min_member=1, **ML_GROUP),
                 pod(f"busy2-{f}-0", group=f"busy2-{f}", gpus=8, node=f"{f}-n1", phase="Running", **ML_POD)]
    policy = [{"name": "replica", "subGroupSize": 2, "minSubGroups": 2, "matchLabelKeys": ["replica"],
               "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}]
    objs.append(podgroup("pp", min_member=4, topology={"mode": "hard", "highestTierAllowed": 2}, sub_groups=policy,
                         **ML_GROUP))
    objs += [pod(f"pp-{r}-{i}", group="pp", gpus=8, phase="Pending", labels={"replica": str(r)}, **ML_POD)
             for r in range(2) for i in range(2)]
    out = run_session(objs, CONF)
    assert len(out.binds) == 4
    for r in range(2):
        assert len({fabric_of(out.binds[f"ml/pp-{r}-{i}"]) for i in range(2)}) == 1
    assert fabric_of(out.binds["ml/pp-0-0"]) != fabric_of(out.binds["ml/pp-1-0"])


# --- node order ---------------------------------------------------------------------------------
def test_pods_without_topology_fill_used_hypernodes_first() -> None:
    objs = [*fabrics(), podgroup("busy", min_member=1, **ML_GROUP),
            pod("busy-0", group="busy", gpus=4, node="fabric-c-n2", phase="Running", **ML_POD)]
    objs += [podgroup("single", min_member=1, **ML_GROUP),
             pod("single-0", group="single", gpus=2, phase="Pending", **ML_POD)]
    out = run_session(objs, CONF)
    assert fabric_of(out.binds["ml/single-0"]) == "fabric-c"


@pytest.mark.parametrize(("size", "expected"), [(3, [0, 1, 2]), (5, [1, 2, 2])])
def test_topology_pods_follow_the_allocated_hypernode(size: int, expected: list[int]) -> None:
    """Inside the spine, each pod goes next to the gang's earlier pods: fabrics fill one by one."""
    out = run_session(fabrics(per=2) + gang("g", size, tier=2), CONF)
    per = sorted(sum(1 for n in out.binds.values() if fabric_of(n) == f)
                 for f in ("fabric-a", "fabric-b", "fabric-c"))
    assert per == expected


def test_gradients_follow_the_design_doc_example() -> None:
    """HN0..HN3 tier 1 under HN4 {HN0, HN1} and HN5 {HN2, HN3}: candidates by tier, lowest first."""
    from pumice.scheduler import open_session
    from pumice.scheduler.topology.context import PURPOSE_ALLOCATE, SearchRequest, topology_of
    from pumice.scheduler.topology.subjobs import Topology

    objs: list[dict[str, Any]] = [QUEUE]
    for h in range(4):
        objs += [node(f"hn{h}-n0", gpus=8, **GPU_NODE)]
        objs.append(hypernode(f"HN{h}", 1, [{"type": "Node", "selector": {"exactMatch": {"name": f"hn{h}-n0"}}}]))
    for name, kids in (("HN4", ("HN0", "HN1")), ("HN5", ("HN2", "HN3"))):
        objs.append(hypernode(name, 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": k}}}
                                        for k in kids]))
    ssn = open_session(build_cluster_state(objs), CONF)
    tree = topology_of(ssn).tree
    none = np.zeros(ssn.space.size)

    def names(req: SearchRequest, root: str) -> list[list[str]]:
        return [[h.name for h in g] for g in ssn.hypernode_gradients(req, tree.infos[root], PURPOSE_ALLOCATE)]

    job = SearchRequest(Topology(True, 2), "", none)
    assert names(job, CLUSTER_TOP) == [["HN0", "HN1", "HN2", "HN3"], ["HN4", "HN5"]]
    sub = SearchRequest(Topology(True, 1), "", none)
    assert names(sub, CLUSTER_TOP) == [["HN0", "HN1", "HN2", "HN3"]]
    assert names(sub, "HN4") == [["HN0", "HN1"]]
    # once part of the job runs in HN2, only HN2's allowed ancestor (HN5) is searched
    assert names(SearchRequest(Topology(True, 2), "HN2", none), CLUSTER_TOP) == [["HN2", "HN3"], ["HN5"]]
    # a job needing more than any HyperNode has idle is not offered it
    gpus = np.zeros(ssn.space.size)
    gpus[ssn.space.index["nvidia.com/gpu"]] = 16000
    assert names(SearchRequest(Topology(True, 2), "", gpus), CLUSTER_TOP) == [["HN4", "HN5"]]
    assert names(SearchRequest(None, "", none), "HN4") == [["HN4"]]


def test_tree_is_kept_while_nodes_and_hypernodes_are_unchanged() -> None:
    from pumice.scheduler.framework.session import Session
    from pumice.scheduler.topology.context import topology_of

    state = build_cluster_state(fabrics())
    first = topology_of(Session(state, CONF)).tree
    assert topology_of(Session(state, CONF)).tree is first
    state.hypernodes = list(state.hypernodes[:-1])  # the spine is gone
    second = topology_of(Session(state, CONF)).tree
    assert second is not first and "spine" not in second.infos


# --- exact shortcuts: the same decisions as Volcano's exhaustive search ---------------------------
def _random_cluster(seed: int) -> list[dict[str, Any]]:
    """Leaves of 1-5 nodes under spines under fabrics (discovered from labels), mixed gangs: hard
    tier 1/2/3, soft, SubGroup policies, pods already running, taints."""
    import random

    from pumice.topology_discovery import discover_hypernodes

    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [QUEUE]
    nodes: list[dict[str, Any]] = []
    per_spine = rng.choice([2, 3])
    leaf = 0
    while len(nodes) < rng.randint(8, 40):
        for _ in range(rng.randint(1, 5)):
            labels = {"leaf": f"l{leaf}", "spine": f"s{leaf // per_spine}", "fabric": f"f{leaf // per_spine // 2}"}
            n = node(f"n{len(nodes):03d}", gpus=rng.choice([0, 4, 8]), labels=labels, **GPU_NODE)
            n["status"]["allocatable"]["cpu"] = n["status"]["capacity"]["cpu"] = rng.choice(["8", "16", "32"])
            if rng.random() < 0.1:
                n["spec"] = {"taints": [{"key": "t", "value": "x", "effect": "NoSchedule"}]}
            nodes.append(n)
        leaf += 1
    objs += nodes
    objs += discover_hypernodes(nodes, {"fabric": 3, "spine": 2, "leaf": 1})
    for j in range(rng.randint(2, 10)):
        size = rng.randint(1, 8)
        r = rng.random()
        topology = ({"mode": "hard", "highestTierAllowed": rng.choice([1, 1, 2, 3])} if r < 0.5
                    else {"mode": "soft"} if r < 0.6 else None)
        policy = None
        if 0.6 <= r < 0.7:
            topology = {"mode": "hard", "highestTierAllowed": 2}
            policy = [{"name": "rep", "subGroupSize": 2, "matchLabelKeys": ["rep"],
                       "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}]
        objs.append(podgroup(f"j{j}", min_member=size if rng.random() < 0.7 else rng.randint(1, size),
                             topology=topology, sub_groups=policy, **ML_GROUP))
        gpus, running = rng.choice([0, 1, 4]), rng.random() < 0.2
        for k in range(size):
            on = rng.choice(nodes)["metadata"]["name"] if running and k < size // 2 else ""
            p = pod(f"j{j}-{k}", group=f"j{j}", gpus=gpus, node=on or None, phase="Running" if on else "Pending",
                    labels={"rep": str(k // 2)}, **ML_POD)
            p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = rng.choice(["1", "2", "4"])
            objs.append(p)
    return objs


def test_shortcuts_decide_as_the_exhaustive_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dry runs in score order, kept dry runs, and ladders over HyperNode-binpacked normal pods
    must give exactly the binds and reasons of trying every candidate and scoring every pod."""
    from pumice.scheduler.framework import placement
    from pumice.scheduler.topology import allocate

    conf = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
""")

    def decide(seed: int) -> tuple[dict[str, str], dict[str, str]]:
        out = run_session(_random_cluster(seed), conf)
        return out.binds, {j.key: j.reason for j in out.jobs}

    seeds = range(60)
    fast = [decide(s) for s in seeds]
    with monkeypatch.context() as m:
        m.setattr(allocate, "_bounds", lambda *a: None)
        m.setattr(allocate, "_ties_only_at_max", lambda ssn: False)
        m.setattr(placement._Ladder, "pick", lambda self: None)
        m.setattr(placement._TermLadder, "pick", lambda self: None)
        slow = [decide(s) for s in seeds]
    assert sum(len(b) for b, _ in fast) > 300
    for seed, f, s in zip(seeds, fast, slow, strict=True):
        assert f == s, f"seed {seed}"


def test_a_ladder_never_answers_past_its_depth() -> None:
    """Two gangs of one shape, binpack: the second goes where the first went (its ladder had run
    out of levels for that node: continuing it would have sent the second gang elsewhere)."""
    conf = load_conf("""
actions: "allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: binpack
""")
    objs: list[dict[str, Any]] = [QUEUE, *(node(n, gpus=8, **GPU_NODE) for n in ("n0", "n1", "n2"))]
    for j in range(2):
        objs += gang(f"j{j}", 4, tier=None)
        for p in objs[-4:]:
            p["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1", "memory": "1Gi"}
    assert set(run_session(objs, conf).binds.values()) == {"n0"}
