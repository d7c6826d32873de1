"""The simulated kubelet's CPU manager: whole CPUs pinned on nodes that declare NUMA, refused when the
topology manager policy cannot be met, freed when pods end, published as the node's Numatopology."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.api.numa import (
    CPU_MANAGER_ANNOTATION,
    CPUSET_ANNOTATION,
    NUMA_NODES_ANNOTATION,
    TOPOLOGY_MANAGER_ANNOTATION,
    parse_cpuset,
)
from pumice.clock import VirtualClock, to_datetime
from pumice.nodes import SimulatedKubelet
from pumice.nodes.cpumanager import NUMATOPOLOGIES
from pumice.store import MemoryStore
from tests.builders import node, pod


def numa_node(name: str, policy: str = "single-numa-node", cpu_manager: str = "static") -> dict[str, Any]:
    obj = node(name, cpu="8", memory="64Gi", capacity=True)
    obj["metadata"]["annotations"] = {NUMA_NODES_ANNOTATION: "2", CPU_MANAGER_ANNOTATION: cpu_manager,
                                      TOPOLOGY_MANAGER_ANNOTATION: policy}
    return obj


def pinned(name: str, cpus: int, seconds: int = 60, cpuset: str | None = None) -> dict[str, Any]:
    limits = {"cpu": str(cpus), "memory": "1Gi"}
    main = {"name": "main", "image": "busybox", "command": ["sh", "-c", f"sleep {seconds}"],
            "resources": {"requests": dict(limits), "limits": dict(limits)}}
    notes = {CPUSET_ANNOTATION: cpuset} if cpuset else None
    return pod(name, namespace="ns", containers=[main], annotations=notes)


def status(store: MemoryStore, name: str) -> dict[str, Any]:
    return dict(store.get("pods", "ns", name).get("status") or {})


def free(store: MemoryStore, node_name: str) -> frozenset[int]:
    return parse_cpuset(store.get(NUMATOPOLOGIES, None, node_name)["spec"]["numares"]["cpu"]["allocatable"])


def test_node_publishes_its_topology_and_pods_get_and_return_cpus(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", numa_node("n"))
    kubelet = SimulatedKubelet(store, clock)
    kubelet.sync()
    topo = store.get(NUMATOPOLOGIES, None, "n")["spec"]
    assert topo["policies"] == {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"}
    assert topo["cpuDetail"]["5"] == {"numa": 1, "socket": 1, "core": 5}
    assert free(store, "n") == set(range(8))
    store.create("pods", pinned("a", 3, cpuset="4-6"))  # the scheduler's choice is honoured
    store.bind("ns", "a", "n")
    store.create("pods", pinned("b", 3, seconds=120))  # none sent: the kubelet chooses, on one NUMA node
    store.bind("ns", "b", "n")
    kubelet.sync()
    assert status(store, "a")["phase"] == "Running" and status(store, "b")["phase"] == "Running"
    held = kubelet.cpus.held("n")
    assert held["ns/a"] == {4, 5, 6}
    assert len(held["ns/b"]) == 3 and len({c // 4 for c in held["ns/b"]}) == 1 and not held["ns/b"] & held["ns/a"]
    assert free(store, "n") == set(range(8)) - held["ns/a"] - held["ns/b"]
    allocs = store.get(NUMATOPOLOGIES, None, "n")["spec"]["podAllocations"]
    assert {a["name"] for a in allocs} == {"a", "b"}
    # a third pod of 2 CPUs: one CPU is left on each NUMA node; the topology manager refuses it
    store.create("pods", pinned("c", 2))
    store.bind("ns", "c", "n")
    kubelet.sync()
    assert status(store, "c")["phase"] == "Failed"
    assert status(store, "c")["reason"] == "TopologyAffinityError"
    clock.advance_to(clock.now() + 60)
    kubelet.sync()
    assert status(store, "a")["phase"] == "Succeeded"
    assert free(store, "n") == set(range(8)) - held["ns/b"]


def test_taken_cpus_sent_by_the_scheduler_are_not_reused(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", numa_node("n", policy="best-effort"))
    kubelet = SimulatedKubelet(store, clock)
    store.create("pods", pinned("a", 2, cpuset="0-1"))
    store.bind("ns", "a", "n")
    kubelet.sync()
    store.create("pods", pinned("b", 2, cpuset="1-2"))  # CPU 1 is a's: the kubelet picks others
    store.bind("ns", "b", "n")
    kubelet.sync()
    held = kubelet.cpus.held("n")
    assert held["ns/a"] == {0, 1} and len(held["ns/b"]) == 2 and not held["ns/a"] & held["ns/b"]


def test_nodes_without_static_cpu_manager_pin_nothing(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", numa_node("n", cpu_manager="none"))
    kubelet = SimulatedKubelet(store, clock)
    store.create("pods", pinned("a", 6))
    store.bind("ns", "a", "n")
    kubelet.sync()
    assert status(store, "a")["phase"] == "Running"
    assert kubelet.cpus.held("n") == {}
    assert free(store, "n") == set(range(8))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 4), st.sampled_from(["single-numa-node",
                                                                                     "restricted", "best-effort"])),
                min_size=1, max_size=10))
def test_no_cpu_is_held_by_two_running_pods(pods: list[tuple[int, int, str]]) -> None:
    clock = VirtualClock()
    store = MemoryStore(clock=lambda: to_datetime(clock.now()))
    for policy in ("single-numa-node", "restricted", "best-effort"):
        store.create("nodes", numa_node(policy, policy=policy))
    kubelet = SimulatedKubelet(store, clock)
    for i, (cpus, minutes, policy) in enumerate(pods):
        store.create("pods", pinned(f"p{i}", cpus, seconds=60 * minutes))
        store.bind("ns", f"p{i}", policy)
        clock.advance_to(clock.now() + 30)
        kubelet.sync()
        for name in ("single-numa-node", "restricted", "best-effort"):
            held = kubelet.cpus.held(name)
            running = {k for k in kubelet.running(name)}
            assert set(held) <= running
            taken = [c for cpus_ in held.values() for c in cpus_]
            assert len(taken) == len(set(taken)), f"a CPU of {name} held twice: {held}"
            assert free(store, name) == set(range(8)) - set(taken)
            if name == "single-numa-node":
                assert all(len({c // 4 for c in cpus_}) == 1 for cpus_ in held.values())
