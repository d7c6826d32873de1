"""network-topology-aware: HyperNode gradients for hard-topology jobs, HyperNode binpacking, and the
capabilities it offers the placement engine and topology allocate."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from pumice.scheduler.framework.placement import GroupTermsOffer
from pumice.scheduler.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from pumice.scheduler.topology import topology_of
from pumice.scheduler.topology.context import PURPOSE_ALLOCATE, HyperNodeSearchShortcuts, SearchRequest
from pumice.scheduler.topology.subjobs import Topology
from tests.builders import hypernode, hypernode_member, node, node_member, pod, podgroup, queue
from tests.scheduler.plugins.support import job, session

OBJECTS = [
    *(node(f"n{i}", cpu="16", memory="64Gi", gpus=8) for i in range(4)), queue("default"),
    hypernode("leaf-a", 1, [node_member("n0"), node_member("n1")]),
    hypernode("leaf-b", 1, [node_member("n2"), node_member("n3")]),
    hypernode("spine", 2, [hypernode_member("leaf-a"), hypernode_member("leaf-b")]),
    podgroup("busy", queue="default", phase="Running"),
    pod("busy-0", group="busy", cpu="1", gpus=4, node="n0", phase="Running"),
    podgroup("train", queue="default", min_member=2, topology={"mode": "hard", "highestTierAllowed": 1}),
    *(pod(f"train-{i}", group="train", cpu="1", gpus=4) for i in range(2)),
]


def gradients(objs: list[dict[str, object]], tier: int, gpus: int) -> list[list[str]]:
    ssn = session(objs, "network-topology-aware")
    need = np.zeros(ssn.space.size)
    need[ssn.space.index["nvidia.com/gpu"]] = gpus * 1000
    request = SearchRequest(Topology(True, tier), "", need)
    found = ssn.hypernode_gradients(request, topology_of(ssn).tree.top, PURPOSE_ALLOCATE)
    return [[h.name for h in g] for g in found]


def test_gradients_are_the_allowed_hypernodes_with_room_by_tier() -> None:
    assert gradients(OBJECTS, 1, 8) == [["leaf-a", "leaf-b"]]
    assert gradients(OBJECTS, 2, 8) == [["leaf-a", "leaf-b"], ["spine"]]
    assert gradients(OBJECTS, 1, 14) == [["leaf-b"]]  # leaf-a has 12 GPUs free
    assert gradients(OBJECTS, 1, 20) == []


def test_hypernode_order_packs_the_partly_used_one() -> None:
    ssn = session(OBJECTS, "network-topology-aware")
    ctx = topology_of(ssn)
    sj = next(iter(ctx.job(job(ssn, "train")).subjobs.values()))
    scores = ssn.hypernode_scores(sj, [ctx.tree.infos["leaf-a"], ctx.tree.infos["leaf-b"]])
    assert scores["leaf-a"] > scores["leaf-b"]


def test_it_offers_group_terms_and_search_shortcuts() -> None:
    plugin = session(OBJECTS, "network-topology-aware").plugins["network-topology-aware"]
    assert isinstance(plugin, NetworkTopologyAwarePlugin)
    assert isinstance(plugin, GroupTermsOffer) and isinstance(plugin, HyperNodeSearchShortcuts)


def test_negative_weights_count_as_one_and_are_said(caplog: pytest.LogCaptureFixture) -> None:
    args = {"weight": -3, "hypernode.binpack.cpu": -1, "hypernode.binpack.normal-pod.fading": -0.5}
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        ssn = session(OBJECTS, {"name": "network-topology-aware", "arguments": args})
    plugin = ssn.plugins["network-topology-aware"]
    assert isinstance(plugin, NetworkTopologyAwarePlugin)
    assert (plugin.weight, plugin.resource_weights["cpu"], plugin.fading) == (1, 1, 0.8)
    assert "plugin network-topology-aware: argument weight: -3 is negative; using 1" in caplog.text
