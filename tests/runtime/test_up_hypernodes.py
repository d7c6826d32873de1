"""``pumice up`` runs the HyperNode controller: discovery from node labels and node counts, live."""

from __future__ import annotations

from pathlib import Path

import yaml

from pumice.cli.up import ControlPlane
from pumice.server import free_port
from pumice.topology_discovery import load_discovery_config
from tests.runtime.support import wait_for

HYPERNODES = "hypernodes.topology.volcano.sh"
RACK = "example.com/rack"


def test_up_discovers_hypernodes_as_nodes_come_and_go(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-controller.conf"
    conf.write_text(yaml.safe_dump({"networkTopologyDiscovery": [{"source": "label", "enabled": True, "config": {
        "networkTopologyTypes": {"racks": [{"nodeLabel": RACK}, {"nodeLabel": "kubernetes.io/hostname"}]}}}]}))
    with ControlPlane(tmp_path / "data", port=free_port(), discovery=load_discovery_config(conf)) as plane:
        store = plane._parts.store  # type: ignore[union-attr]
        for i, rack in enumerate(["a", "a", "b"]):
            res = {"cpu": "8", "pods": "110"}
            store.create("nodes", {"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": f"n{i}", "labels": {RACK: rack}},
                                   "status": {"capacity": res, "allocatable": res}})
        plane._wake.set()

        def counts() -> dict[str, int]:
            return {h["metadata"]["labels"][RACK]: (h.get("status") or {}).get("nodeCount")
                    for h in store.list(HYPERNODES)[0]}

        def state() -> object:
            controller = plane._parts.hypernodes  # type: ignore[union-attr]
            return {"hypernodes": store.list(HYPERNODES)[0], "nodes": [n["metadata"] for n in store.list("nodes")[0]],
                    "step errors": plane.step_errors, "driver alive": plane._driver.is_alive(),
                    "controller": {k: v for k, v in vars(controller).items() if k not in ("store", "clock")}}

        wait_for(lambda: counts() == {"a": 2, "b": 1}, state=state)
        store.delete("nodes", None, "n2")
        plane._wake.set()
        wait_for(lambda: counts() == {"a": 2}, state=state)
