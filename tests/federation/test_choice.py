"""Jobs land where the cluster-choice policy says: hardware, region, topology, gang fit, cost, load, affinity."""

from __future__ import annotations

import json
from collections.abc import Callable

from pumice.federation import names
from pumice.sim.world import FederatedWorld, MemberSpec

from .builders import cluster_of, host_job, hypernodes, nodes, phase, vcjob

REGION = names.REGION_LABEL


def _decision(w: FederatedWorld, name: str) -> dict:
    return json.loads(host_job(w, name)["metadata"]["annotations"][names.DECISION])


def _verdicts(w: FederatedWorld, name: str) -> dict[str, dict]:
    return {v["cluster"]: v for v in _decision(w, name)["clusters"]}


def test_gpu_model_requirement(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("east", nodes("e", 4, model="A100"), cost={"nvidia.com/gpu": 1}),
                    MemberSpec("west", nodes("w", 4, model="H100"), cost={"nvidia.com/gpu": 5})])
    w.apply([vcjob("h100-job", 2, node_selector={names.GPU_MODEL_LABEL: "H100"}), vcjob("any-job", 2)])
    w.run_for(10)
    assert cluster_of(w, "h100-job") == "west"  # the only member with H100s, though dearer
    assert cluster_of(w, "any-job") == "east"  # cheapest
    assert phase(w, "h100-job") == "Running"
    east = _verdicts(w, "h100-job")["east"]
    assert east["kept"] is False and east["plugin"] == "hardware"
    assert f"{names.GPU_MODEL_LABEL}=H100" in east["reason"]


def test_region_preference_beats_cost(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("us", nodes("u", 4), labels={REGION: "us-east"}, cost={"nvidia.com/gpu": 1}),
                    MemberSpec("eu", nodes("e", 4), labels={REGION: "eu-west"}, cost={"nvidia.com/gpu": 4})])
    w.apply([vcjob("near-data", 1, annotations={names.REGION_AFFINITY: "eu-west,us-east"}),
             vcjob("anywhere", 1)])
    w.run_for(10)
    assert cluster_of(w, "near-data") == "eu"
    assert cluster_of(w, "anywhere") == "us"
    scores = _verdicts(w, "near-data")
    assert scores["eu"]["scores"]["locality"] > scores["us"]["scores"]["locality"]


def test_gang_that_fits_only_one_members_leaf_tier(make_world: Callable[..., FederatedWorld]) -> None:
    members = []
    for name, leaf, price in (("small-leaves", 2, 1), ("mid-leaves", 4, 2), ("big-leaves", 8, 3)):
        ns = nodes(name[:3], 8)
        members.append(MemberSpec(name, ns, hypernodes(name, [n["metadata"]["name"] for n in ns], leaf),
                                  cost={"nvidia.com/gpu": price}))
    w = make_world(members)
    w.apply([vcjob("ring", 6, topology={"mode": "hard", "highestTierAllowed": 1})])
    w.run_for(10)
    assert cluster_of(w, "ring") == "big-leaves"  # the only one with a tier-1 block of 6 free nodes
    verdicts = _verdicts(w, "ring")
    assert verdicts["small-leaves"]["plugin"] == "network-topology"
    assert "tier <= 1" in verdicts["small-leaves"]["reason"]
    assert _decision(w, "ring")["reason"].endswith("(HyperNode big-leaves-leaf0, tier 1)")
    # the member's own scheduler kept the gang inside that leaf
    pods, _ = w.clusters["big-leaves"].store.list("pods", "default")
    assert len({p["spec"]["nodeName"] for p in pods}) == 6


def test_tightest_tier_preferred_over_cost(make_world: Callable[..., FederatedWorld]) -> None:
    members = []
    for name, leaf, price in (("cheap-wide", 2, 1), ("dear-tight", 4, 9)):
        ns = nodes(name[:4], 8)
        members.append(MemberSpec(name, ns, hypernodes(name, [n["metadata"]["name"] for n in ns], leaf),
                                  cost={"nvidia.com/gpu": price}))
    w = make_world(members)
    w.apply([vcjob("ring", 3, topology={"mode": "hard", "highestTierAllowed": 2}), vcjob("plain", 3)])
    w.run_for(10)
    assert cluster_of(w, "ring") == "dear-tight"  # tier 1 there, tier 2 only in cheap-wide
    assert cluster_of(w, "plain") == "cheap-wide"  # no topology: the cheaper one
    v = _verdicts(w, "ring")
    assert v["dear-tight"]["scores"]["network-topology"] == 100.0
    assert v["cheap-wide"]["scores"]["network-topology"] == 0.0


def test_whole_gang_fit_not_totals(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("fragmented", nodes("f", 4), cost={"nvidia.com/gpu": 1}),
                    MemberSpec("whole", nodes("w", 2), cost={"nvidia.com/gpu": 9})])
    # the fragmented member's own users hold half of every node's GPUs
    local = vcjob("local", 4, gpu=4, duration=None)
    w.clusters["fragmented"].apply([local])
    w.run_for(5)
    w.apply([vcjob("gang", 2, gpu=8)])  # 16 GPUs: the fragmented member has 16 free, but never 8 on one node
    w.run_for(10)
    assert cluster_of(w, "gang") == "whole"
    reason = _verdicts(w, "gang")["fragmented"]
    assert reason["plugin"] == "gang" and "0 fit" in reason["reason"]


def test_cheapest_fitting_member_then_next(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("cheap", nodes("c", 2), cost={"nvidia.com/gpu": "0.5"}),
                    MemberSpec("mid", nodes("m", 2), cost={"nvidia.com/gpu": "1.5"}),
                    MemberSpec("dear", nodes("d", 2), cost={"nvidia.com/gpu": "4"})])
    w.apply([vcjob(f"j{i}", 2) for i in range(3)])
    w.run_for(10)
    assert [cluster_of(w, f"j{i}") for i in range(3)] == ["cheap", "mid", "dear"]


def test_cluster_selector_affinity_and_exclusion(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 2), labels={"env": "prod", REGION: "r1"}),
                    MemberSpec("b", nodes("b", 2), labels={"env": "prod", REGION: "r2"}),
                    MemberSpec("c", nodes("c", 2), labels={"env": "dev", REGION: "r1"})])
    w.apply([
        vcjob("sel", 1, annotations={names.CLUSTER_SELECTOR: "env=prod,topology.kubernetes.io/region!=r1"}),
        vcjob("aff", 1, annotations={names.CLUSTER_AFFINITY: json.dumps(
            {"clusterNames": ["a", "c"], "exclude": ["a"]})}),
        vcjob("pref", 1, annotations={names.CLUSTER_AFFINITY: json.dumps(
            {"preferred": [{"weight": 10, "labelSelector": {"matchLabels": {"env": "dev"}}}]})}),
        vcjob("bad", 1, annotations={names.CLUSTER_AFFINITY: "{clusterNames: oops"}),
    ])
    w.run_for(10)
    assert cluster_of(w, "sel") == "b"
    assert cluster_of(w, "aff") == "c"
    assert cluster_of(w, "pref") == "c"
    assert cluster_of(w, "bad") is None
    state = host_job(w, "bad")["status"]["state"]
    assert state["reason"] == "InvalidFederationAnnotation" and names.CLUSTER_AFFINITY in state["message"]


def test_member_taints_and_tolerations(make_world: Callable[..., FederatedWorld]) -> None:
    taint = {"key": "dedicated", "value": "research", "effect": "NoSchedule"}
    w = make_world([MemberSpec("research", nodes("r", 2), taints=[taint], cost={"nvidia.com/gpu": 1}),
                    MemberSpec("shared", nodes("s", 2), cost={"nvidia.com/gpu": 2})])
    tolerate = json.dumps([{"key": "dedicated", "operator": "Equal", "value": "research", "effect": "NoSchedule"}])
    w.apply([vcjob("plain", 1), vcjob("researcher", 1, annotations={names.CLUSTER_TOLERATIONS: tolerate})])
    w.run_for(10)
    assert cluster_of(w, "plain") == "shared"
    assert cluster_of(w, "researcher") == "research"
    assert "dedicated=research:NoSchedule" in _verdicts(w, "plain")["research"]["reason"]


def test_load_balance_between_equal_members(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 4)), MemberSpec("b", nodes("b", 4))])
    w.apply([vcjob(f"j{i}", 1) for i in range(6)])
    w.run_for(10)
    placed = [cluster_of(w, f"j{i}") for i in range(6)]
    assert placed.count("a") == placed.count("b") == 3


def test_no_member_fits_waits_with_every_reason(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 2)), MemberSpec("b", nodes("b", 3, model="H100"))])
    w.apply([vcjob("huge", 4)])
    w.run_for(10)
    assert cluster_of(w, "huge") is None
    state = host_job(w, "huge")["status"]["state"]
    assert state["phase"] == "Pending" and state["reason"] == "NoClusterFits"
    assert "a: task worker: 4 pods" in state["message"] and "b: task worker: 4 pods" in state["message"]
    explained = w.federation.explain("default", "huge")
    assert {v["cluster"]: v["kept"] for v in explained["clusters"]} == {"a": False, "b": False}


def test_spread_group_goes_to_every_region_before_any_twice(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec(f"m-{r}", nodes(r, 4), labels={REGION: r}, cost={"nvidia.com/gpu": price})
                    for r, price in (("us", 1), ("eu", 2), ("ap", 3))])
    w.apply([vcjob(f"replica-{i}", 1, annotations={names.SPREAD_GROUP: "serving"}) for i in range(3)])
    w.run_for(10)
    assert sorted(str(cluster_of(w, f"replica-{i}")) for i in range(3)) == ["m-ap", "m-eu", "m-us"]
    w.apply([vcjob("replica-3", 1, annotations={names.SPREAD_GROUP: "serving"}), vcjob("batch", 1)])
    w.run_for(10)
    assert cluster_of(w, "replica-3") == "m-us"  # every region has one: then the cheapest
    assert cluster_of(w, "batch") == "m-us"  # no group: the cheapest


def test_zone_preference(make_world: Callable[..., FederatedWorld]) -> None:
    zone = names.ZONE_LABEL
    w = make_world([MemberSpec("a", nodes("a", 4), labels={REGION: "eu", zone: "eu-1a"}, cost={"nvidia.com/gpu": 1}),
                    MemberSpec("b", nodes("b", 4), labels={REGION: "eu", zone: "eu-1b"}, cost={"nvidia.com/gpu": 2})])
    w.apply([vcjob("near", 1, annotations={names.ZONE_AFFINITY: "eu-1b"}), vcjob("far", 1)])
    w.run_for(10)
    assert (cluster_of(w, "near"), cluster_of(w, "far")) == ("b", "a")
