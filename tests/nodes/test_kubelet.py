"""The simulated kubelet on a virtual clock: start, run, end; deletion; node drain and failure."""

from __future__ import annotations

import pytest

from pumice.clock import VirtualClock
from pumice.nodes import SimulatedKubelet
from pumice.store import MemoryStore, NotFound
from tests.builders import node, pod


def phase(store: MemoryStore, name: str) -> str:
    return store.get("pods", "ns", name).get("status", {}).get("phase", "Pending")


def test_bound_pod_runs_for_its_duration_then_succeeds(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", node("n1", capacity=True))
    kubelet = SimulatedKubelet(store, clock)
    store.create("pods", pod("a", namespace="ns", command=["sh", "-c", "sleep 60"]))
    assert kubelet.sync()  # the node gets its Ready condition
    assert phase(store, "a") == "Pending"  # not bound: nothing to run
    assert kubelet.next_wakeup() is None
    t0 = clock.now()
    store.bind("ns", "a", "n1")
    assert kubelet.sync()
    p = store.get("pods", "ns", "a")
    assert p["status"]["phase"] == "Running"
    assert p["status"]["startTime"] == "2026-01-01T00:00:00Z"
    assert {c["type"]: c["status"] for c in p["status"]["conditions"]}["Ready"] == "True"
    assert p["status"]["containerStatuses"][0]["state"] == {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    assert kubelet.next_wakeup() == t0 + 60
    clock.advance_to(t0 + 59)
    assert not kubelet.sync()
    assert phase(store, "a") == "Running"
    clock.advance_to(t0 + 60)
    assert kubelet.sync()
    p = store.get("pods", "ns", "a")
    assert p["status"]["phase"] == "Succeeded"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert kubelet.next_wakeup() is None
    node_status = store.get("nodes", None, "n1")["status"]
    assert [c["status"] for c in node_status["conditions"] if c["type"] == "Ready"] == ["True"]


@pytest.mark.parametrize(("ann", "code"), [({"pumice.io/fail": "true"}, 1), ({"pumice.io/exit-code": "7"}, 7)])
def test_failing_pods(store: MemoryStore, clock: VirtualClock, ann: dict[str, str], code: int) -> None:
    store.create("nodes", node("n1", capacity=True))
    kubelet = SimulatedKubelet(store, clock)
    store.create("pods", {**pod("f", namespace="ns", annotations={**ann, "pumice.io/duration": "5m"}), "spec": {
        "nodeName": "n1", "containers": [{"name": "main", "image": "x"}]}})
    kubelet.sync()
    assert kubelet.next_wakeup() == clock.now() + 300
    clock.advance_to(clock.now() + 300)
    kubelet.sync()
    p = store.get("pods", "ns", "f")
    assert p["status"]["phase"] == "Failed"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == code


def test_pod_without_duration_runs_until_deleted(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", node("n1", capacity=True))
    kubelet = SimulatedKubelet(store, clock)
    store.create("pods", {**pod("svc", namespace="ns", command=["sh", "-c", "nginx -g daemon off"]),
                          "spec": {"nodeName": "n1", "containers": [{"name": "main", "command": ["nginx"]}]}})
    kubelet.sync()
    assert phase(store, "svc") == "Running"
    assert kubelet.next_wakeup() is None
    assert kubelet.running("n1") == ["ns/svc"]
    store.delete("pods", "ns", "svc")
    kubelet.sync()
    assert kubelet.running() == []


def test_deleted_pod_stops_and_its_timer_is_dropped(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", node("n1", capacity=True))
    kubelet = SimulatedKubelet(store, clock)
    store.create("pods", pod("a", namespace="ns", command=["sh", "-c", "sleep 60"]))
    store.bind("ns", "a", "n1")
    kubelet.sync()
    store.delete("pods", "ns", "a")
    kubelet.sync()
    assert kubelet.next_wakeup() is None
    # a new pod with the same name is a new incarnation with its own clock
    clock.advance_to(clock.now() + 30)
    store.create("pods", pod("a", namespace="ns", command=["sh", "-c", "sleep 60"]))
    store.bind("ns", "a", "n1")
    kubelet.sync()
    assert kubelet.next_wakeup() == clock.now() + 60


def test_pod_bound_before_its_node_exists_starts_when_the_node_appears(store: MemoryStore, clock: VirtualClock) -> None:
    kubelet = SimulatedKubelet(store, clock)
    store.create("pods", {**pod("early", namespace="ns"), "spec": {"nodeName": "late", "containers": [{"name": "m"}]}})
    kubelet.sync()
    assert phase(store, "early") == "Pending"
    store.create("nodes", node("late", capacity=True))
    kubelet.sync()
    assert phase(store, "early") == "Running"


def test_drain_marks_unschedulable_and_evicts(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", node("n1", capacity=True))
    store.create("nodes", node("n2", capacity=True))
    kubelet = SimulatedKubelet(store, clock)
    for name, where in (("a", "n1"), ("b", "n1"), ("c", "n2")):
        store.create("pods", pod(name, namespace="ns", command=["sh", "-c", "sleep 60"]))
        store.bind("ns", name, where)
    kubelet.sync()
    assert kubelet.drain("n1") == 2
    assert store.get("nodes", None, "n1")["spec"]["unschedulable"] is True
    for name in ("a", "b"):
        with pytest.raises(NotFound):
            store.get("pods", "ns", name)
    assert phase(store, "c") == "Running"
    assert kubelet.running() == ["ns/c"]


def test_node_failure_fails_its_pods_and_new_ones(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", node("n1", capacity=True))
    kubelet = SimulatedKubelet(store, clock)
    store.create("pods", pod("a", namespace="ns", command=["sh", "-c", "sleep 60"]))
    store.bind("ns", "a", "n1")
    kubelet.sync()
    assert kubelet.fail("n1") == 1
    ready = [c for c in store.get("nodes", None, "n1")["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "False"
    p = store.get("pods", "ns", "a")
    assert p["status"]["phase"] == "Failed"
    assert p["status"]["reason"] == "NodeFailure"
    assert kubelet.next_wakeup() is None
    store.create("pods", pod("b", namespace="ns", command=["sh", "-c", "sleep 60"]))
    store.bind("ns", "b", "n1")
    kubelet.sync()
    assert phase(store, "b") == "Failed"
    kubelet.recover("n1")
    ready = [c for c in store.get("nodes", None, "n1")["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"
    store.create("pods", pod("c", namespace="ns", command=["sh", "-c", "sleep 60"]))
    store.bind("ns", "c", "n1")
    kubelet.sync()
    assert phase(store, "c") == "Running"


def test_only_its_own_nodes(store: MemoryStore, clock: VirtualClock) -> None:
    store.create("nodes", node("mine", capacity=True))
    store.create("nodes", node("real", capacity=True))
    kubelet = SimulatedKubelet(store, clock, nodes=["mine"])
    store.create("pods", {**pod("x", namespace="ns"), "spec": {"nodeName": "real", "containers": [{"name": "m"}]}})
    kubelet.sync()
    assert kubelet.nodes == ["mine"]
    assert phase(store, "x") == "Pending"
    assert "conditions" not in store.get("nodes", None, "real").get("status", {})


def test_gpus_are_accounted_one_by_one(store: MemoryStore, clock: VirtualClock) -> None:
    n = node("g", gpus=2, capacity=True)
    store.create("nodes", n)
    kubelet = SimulatedKubelet(store, clock)
    kubelet.sync()

    def share(name: str, milli: int, gpu: int) -> None:
        main = {"name": "main", "image": "busybox",
                "resources": {"requests": {"pumice.io/gpu-milli": str(milli)}}}
        annotations = {"volcano.sh/gpu-index": str(gpu)}
        store.create("pods", pod(name, namespace="ns", containers=[main], annotations=annotations))
        store.bind("ns", name, "g")
        kubelet.sync()

    share("a", 600, 0)
    share("b", 400, 0)
    assert kubelet.gpu_used("g") == {0: 1000.0}
    share("c", 100, 0)  # GPU 0 is full: the device plugin refuses it
    c = store.get("pods", "ns", "c")
    assert c["status"]["phase"] == "Failed" and c["status"]["reason"] == "UnexpectedAdmissionError"
    assert "GPU 0 of node g holds 1000 of 1000" in c["status"]["message"]
    share("d", 100, 1)
    assert phase(store, "d") == "Running"
    store.delete("pods", "ns", "a")
    kubelet.sync()
    assert kubelet.gpu_used("g") == {0: 400.0, 1: 100.0}
