"""Units of the federation: configuration checks, job demand, gang and topology fit, global queue math."""

from __future__ import annotations

import numpy as np
import pytest

from pumice.federation import names
from pumice.federation.capacity import MemberCapacity
from pumice.federation.config import FederationConfigError, default_config, parse_config
from pumice.federation.demand import demand_of
from pumice.federation.fit import fit_gang, fit_topology, spread_gang
from pumice.federation.queues import GlobalQueues, amounts
from pumice.scheduler.resources import ResourceSpace

from .builders import hypernodes, nodes, queue, task, vcjob


@pytest.mark.parametrize(("text", "message"), [
    ("colour: red\n", "colour: unknown key"),
    ("gracePeriod: 1m\nleaseDuration: 55s\n", "gracePeriod: must be at least 1.2 x leaseDuration"),
    ("dispatchPeriod: soon\n", "dispatchPeriod: not a duration"),
    ("redispatch: sometimes\n", "redispatch: 'sometimes' is not one of failover, none"),
    ("tiers:\n- plugins:\n  - name: cost\n  - name: cost\n", "configured twice"),
    ("tiers:\n- plugins:\n  - name: cost\n    enableFilter: maybe\n", "enableFilter: expected true or false"),
    ("tiers:\n- plugins:\n  - name: locality\n    arguments: {spreadBy: planet}\n", "is not region, zone or"),
    ("tiers:\n- plugins:\n  - name: cost\n    arguments: {cheap: true}\n", "unknown argument 'cheap'"),
    ("split: {maxParts: 0}\n", "split.maxParts: must be a positive integer"),
])
def test_config_errors_name_the_field(text: str, message: str) -> None:
    with pytest.raises(FederationConfigError) as err:
        cfg = parse_config(text, source="fed.yaml")
        from pumice.federation.choice import ClusterChooser

        ClusterChooser(cfg)  # plugin arguments are checked when the plugins are built
    assert str(err.value).startswith("fed.yaml: ") and message in str(err.value)


def test_default_config() -> None:
    cfg = default_config()
    assert [[p.name for p in tier] for tier in cfg.tiers] == [
        ["clusteraffinity", "tainttoleration", "hardware", "gang", "network-topology", "locality"],
        ["cost"], ["loadbalance"]]
    assert cfg.grace_period > cfg.lease_duration > cfg.probe_period


def test_demand_reads_the_gang_as_volcano() -> None:
    job = vcjob("j", tasks=[task("ps", 2, gpu=0, cpu=2), task("worker", 4)], min_available=4)
    job["spec"]["tasks"][1]["minAvailable"] = 3
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
    d = demand_of(job)
    assert {t.name: t.gang for t in d.tasks} == {"ps": 1, "worker": 3}  # worker's own 3 first, then 1 ps
    assert d.gang_total == {"cpu": 2000 + 3 * 4000, "memory": 3 * 8 * 2**30, "nvidia.com/gpu": 3 * 8000}
    assert d.total["nvidia.com/gpu"] == 4 * 8000 and d.tasks[0].request == {"cpu": 2000.0}  # limits as requests


def test_demand_annotations_and_their_errors() -> None:
    d = demand_of(vcjob("j", annotations={
        names.DEPENDS_ON: "a, other/b", names.REGION_AFFINITY: "eu,us", names.SPLIT: "by-task",
        names.CLUSTER_SELECTOR: "env=prod", names.REDISPATCH: "never"}))
    assert d.depends_on == (("default", "a"), ("other", "b")) and d.region_affinity == ("eu", "us")
    assert d.split and not d.redispatch and not d.errors
    assert d.affinity.rejects("x", {"env": "dev"}) and d.affinity.rejects("x", {"env": "prod"}) is None
    bad = demand_of(vcjob("j", annotations={names.SPLIT: "halves", names.CLUSTER_SELECTOR: "env in prod",
                                           names.CLUSTER_TOLERATIONS: "[{operator: Maybe}]"}))
    assert len(bad.errors) == 3 and any(names.SPLIT in e for e in bad.errors)


def _capacity(node_objs: list[dict], hyper: list[dict] | None = None) -> MemberCapacity:
    cap = MemberCapacity(names.GPU_MODEL_LABEL)
    for n in node_objs:
        cap.on_node(None, n)
    for h in hyper or []:
        cap.on_hypernode(None, h)
    cap.refresh()
    return cap


def test_gang_fit_is_per_node_not_totals() -> None:
    cap = _capacity(nodes("n", 4, gpu=8))
    room, pods = cap.free()
    room[:, cap.space.index["nvidia.com/gpu"]] = 4000  # every node half busy: 16 GPUs free in all
    assert not fit_gang(cap, demand_of(vcjob("j", 2, gpu=8)), room, pods).ok
    fit = fit_gang(cap, demand_of(vcjob("j", 4, gpu=4)), room, pods)
    assert fit.ok and fit.placement is not None and sorted(fit.placement.nodes.tolist()) == [0, 1, 2, 3]


def test_topology_fit_prefers_the_lowest_tier_and_tightest_block() -> None:
    ns = nodes("n", 8)
    cap = _capacity(ns, hypernodes("h", [n["metadata"]["name"] for n in ns], 4))
    room, pods = cap.free()
    room[0, cap.space.index["nvidia.com/gpu"]] = 0  # leaf0 has one busy node: 3 free there, 4 in leaf1
    fit = fit_topology(cap, demand_of(vcjob("j", 3, topology={"highestTierAllowed": 1})), room, pods, 1)
    assert fit.ok and fit.placement is not None and fit.placement.hypernode == "h-leaf0"  # the tightest that fits
    fit = fit_topology(cap, demand_of(vcjob("j", 5, topology={"highestTierAllowed": 2})), room, pods, 2)
    assert fit.ok and fit.placement is not None and fit.placement.tier == 2
    fit = fit_topology(cap, demand_of(vcjob("j", 5, topology={"highestTierAllowed": 1})), room, pods, 1)
    assert not fit.ok and "tier <= 1" in fit.reason


def test_spread_reservation_takes_the_roomiest_nodes() -> None:
    cap = _capacity(nodes("a", 1, gpu=4) + nodes("b", 1, gpu=1))
    room, pods = cap.free()
    held = spread_gang(cap, demand_of(vcjob("j", 2, gpu=1)), room, pods)
    assert held is not None and held.nodes.tolist() == [0, 0]  # the 4-GPU node twice (3 left, then 2 > 1)


def test_proportion_water_filling_and_capability() -> None:
    space = ResourceSpace(["nvidia.com/gpu"])
    total = amounts(space, {"cpu": 64000, "memory": 2.0**40, "nvidia.com/gpu": 64000})
    queues = {q["metadata"]["name"]: q for q in (queue("a", 3), queue("b", 1), queue("c", 1,
                                                 capability={"nvidia.com/gpu": "8"}))}
    want = {n: amounts(space, {"nvidia.com/gpu": 64000, "cpu": 1000}) for n in queues}
    gq = GlobalQueues("proportion", space, total, queues, {}, want)
    gpu = space.index["nvidia.com/gpu"]
    deserved = {n: gq.accounts[n].deserved[gpu] / 1000 for n in queues}
    assert deserved["c"] == 8 and deserved["a"] == pytest.approx(3 * deserved["b"])
    assert deserved["a"] + deserved["b"] + deserved["c"] == pytest.approx(64)
    job = amounts(space, {"nvidia.com/gpu": 16000})
    assert gq.admit("c", job) is not None and gq.admit("a", job) is None
    assert np.isclose(gq.accounts["a"].allocated[gpu], 0)


def test_a_sped_up_member_counts_the_fence_lease_in_real_seconds() -> None:
    """The driver's clock runs 10x (``--time-scale 10``): the lease is counted on the real clock, and the agent's
    wake-up is on the driver's clock and never in its past (which kept a sped-up member's loop spinning)."""
    from pumice.clock import VirtualClock, rfc3339
    from pumice.federation.fence import LEASES, FenceAgent, lease_body
    from pumice.store import MemoryStore

    driver, real = VirtualClock(), VirtualClock()
    store = MemoryStore()
    store.create(LEASES, {**lease_body("fed", rfc3339(real.now()), 20),
                          "metadata": {"name": names.FENCE_NAME, "namespace": names.FENCE_NAMESPACE}})
    job = vcjob("copy", 1)
    job["metadata"]["labels"] = {names.MANAGED_LABEL: "true"}
    store.create("jobs.batch.volcano.sh", job)
    agent = FenceAgent(store, driver, lease_clock=real, scale=10.0)
    assert agent.sync()  # read and acknowledged
    ack = store.get(LEASES, names.FENCE_NAMESPACE, names.FENCE_NAME)["metadata"]["annotations"]
    assert ack[names.FENCE_ACK]
    assert agent.next_wakeup() == driver.now() + 2 * 10  # the next read, 2 real seconds = 20 driver seconds
    driver.advance_to(driver.now() + 1000.0)  # much cluster time, no real time: the lease is still good
    assert agent.next_wakeup() == driver.now() + 2 * 10
    assert not agent.sync() and store.list("jobs.batch.volcano.sh")[0]
    real.advance_to(real.now() + 21.0)  # 21 real seconds without a renewal: fenced
    assert agent.pending() and agent.sync()
    assert store.list("jobs.batch.volcano.sh")[0] == [] and agent.fenced == 1
