"""``pumice up`` with the numa-aware plugin: a Volcano Job with ``topologyPolicy: single-numa-node`` runs on
simulated nodes that declare NUMA, each pod pinned to CPUs of one NUMA node, reported in the Numatopology."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pumice.api.numa import CPUSET_ANNOTATION, parse_cpuset
from pumice.cli.up import ControlPlane
from pumice.server import free_port
from tests.runtime.support import wait_for

NUMATOPOLOGIES = "numatopologies.nodeinfo.volcano.sh"
CONF = {"actions": "enqueue, allocate, backfill",
        "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]},
                  {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"},
                               {"name": "numa-aware"}]}]}


def _job() -> dict[str, Any]:
    res = {"cpu": "3", "memory": "1Gi"}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "pinned", "namespace": "default"},
            "spec": {"schedulerName": "volcano", "minAvailable": 2, "queue": "default", "tasks": [{
                "name": "w", "replicas": 2, "topologyPolicy": "single-numa-node",
                "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 3600"],
                    "resources": {"requests": dict(res), "limits": dict(res)}}]}}}]}}


def _numa_node(plane: ControlPlane, store: Any) -> None:
    """Node ``n0`` of 2 NUMA nodes x 4 CPUs (static CPU manager, single-numa-node), once its kubelet published it."""
    res = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "annotations": {
        "pumice.io/numa-nodes": "2", "pumice.io/cpu-manager-policy": "static",
        "pumice.io/topology-manager-policy": "single-numa-node"}},
        "status": {"capacity": res, "allocatable": res}})
    plane._wake.set()
    wait_for(lambda: store.list(NUMATOPOLOGIES)[0])


def test_up_pins_a_single_numa_node_job(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(yaml.safe_dump(CONF))
    with ControlPlane(tmp_path / "data", port=free_port(), config=conf) as plane:
        store = plane._parts.store  # type: ignore[union-attr]
        _numa_node(plane, store)
        store.create("jobs.batch.volcano.sh", _job())
        plane._wake.set()

        def running() -> list[dict[str, Any]]:
            pods = store.list("pods", "default")[0]
            return pods if len(pods) == 2 and all((p.get("status") or {}).get("phase") == "Running"
                                                  for p in pods) else []

        pods = wait_for(running)
        sets = [parse_cpuset(p["metadata"]["annotations"][CPUSET_ANNOTATION]) for p in pods]
        assert all(len(s) == 3 and len({c // 4 for c in s}) == 1 for s in sets)
        assert not sets[0] & sets[1]
        assert {c // 4 for c in sets[0]} != {c // 4 for c in sets[1]}  # 3+3 do not fit one NUMA node of 4

        def reported() -> dict[str, Any]:
            spec = store.get(NUMATOPOLOGIES, None, "n0")["spec"]
            return spec if len(spec.get("podAllocations") or []) == 2 else {}

        spec = wait_for(reported)
        assert parse_cpuset(spec["numares"]["cpu"]["allocatable"]) == set(range(8)) - sets[0] - sets[1]


def test_numa_aware_added_by_a_reread_configuration_sees_the_topologies(tmp_path: Path) -> None:
    """The plugin turned on in a running control plane (its configuration file edited) reads the Numatopologies
    from then on: the objects it needs are watched when the configuration names it, not only at start."""
    import os

    conf = tmp_path / "volcano-scheduler.conf"
    without = {**CONF, "tiers": [CONF["tiers"][0], {"plugins": CONF["tiers"][1]["plugins"][:-1]}]}
    conf.write_text(yaml.safe_dump(without))
    with ControlPlane(tmp_path / "data", port=free_port(), config=conf) as plane:
        store = plane._parts.store  # type: ignore[union-attr]
        _numa_node(plane, store)
        conf.write_text(yaml.safe_dump(CONF))
        stat = conf.stat()
        os.utime(conf, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
        scheduler = plane._parts.cluster.scheduler  # type: ignore[union-attr]
        plane._schedule_wake.set()
        wait_for(lambda: NUMATOPOLOGIES in scheduler.informers)
        store.create("jobs.batch.volcano.sh", _job())
        plane._wake.set()

        def placed() -> list[dict[str, Any]]:
            pods = store.list("pods", "default")[0]
            return pods if len(pods) == 2 and all((p.get("spec") or {}).get("nodeName") for p in pods) else []

        sets = [parse_cpuset(p["metadata"]["annotations"][CPUSET_ANNOTATION]) for p in wait_for(placed)]
        assert all(len(s) == 3 and len({c // 4 for c in s}) == 1 for s in sets) and not sets[0] & sets[1]
