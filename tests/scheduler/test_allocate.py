"""allocate: one walk places a plain job (one SubJob at the cluster top) and each SubJob of a
topology job; what it says of pods it skipped is the same on both paths."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.scheduler import load_conf, run_session
from tests.builders import hypernode, node, node_member, pod, podgroup, queue

CONF = load_conf("""
actions: "allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: network-topology-aware
""")


def role(name: str) -> dict[str, str]:
    return {"volcano.sh/task-spec": name}


@pytest.mark.parametrize("topology", [None, {"mode": "hard", "highestTierAllowed": 1}])
def test_a_role_that_fitted_nowhere_is_not_tried_again_and_its_pods_say_why(topology: Any) -> None:
    workers = [pod(f"w-{i}", group="w", cpu="1", annotations=role("worker")) for i in range(3)]
    for w in workers:  # one per node: the second finds none
        w["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    objs = [node("n1", cpu="4"), hypernode("leaf", 1, [node_member("n1")]), queue("default"),
            podgroup("w", queue="default", min_member=1, topology=topology, phase="Inqueue"), *workers]
    out = run_session(objs, CONF)
    assert list(out.binds) == ["default/w-0"]
    reason = "0/1 nodes are unavailable: 1 node(s) didn't have free ports for the requested pod ports."
    if topology is not None:
        reason += " in HyperNode leaf"
    # w-1 found no node; w-2, of the same role, was skipped and says its job's reason: the same
    assert out.pending_pods == {"default/w-1": reason, "default/w-2": reason}
