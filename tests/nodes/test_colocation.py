"""Co-location (``pumice.nodes.colocation``): Volcano's agent publishing oversubscription and evicting offline pods."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.clock import VirtualClock, rfc3339, to_datetime
from pumice.nodes import SimulatedKubelet
from pumice.nodes.colocation import (
    BATCH_CPU,
    BATCH_MEMORY,
    EVICTING_TAINT,
    OVERSUBSCRIPTION_LABEL,
    QOS_LEVEL_ANNOTATION,
    eviction_order,
    oversubscription,
    qos_level,
    should_publish,
    smoothed,
)
from pumice.nodes.usage import USAGE_ANNOTATION
from pumice.store import MemoryStore
from tests.builders import node, pod

GI = 1024**3


def _be(name: str, cpu: int, memory: int = GI, usage: str | None = None, **kw: Any) -> dict[str, Any]:
    """An offline pod asking for batch-cpu (milli) and batch-memory (bytes)."""
    ann = {QOS_LEVEL_ANNOTATION: "BE", **({USAGE_ANNOTATION: usage} if usage else {})}
    main = {"name": "main", "image": "busybox",
            "resources": {"requests": {BATCH_CPU: str(cpu), BATCH_MEMORY: str(memory)},
                          "limits": {BATCH_CPU: str(cpu), BATCH_MEMORY: str(memory)}}}
    return pod(name, namespace="ns", annotations=ann, containers=[main], **kw)


def _online(name: str, cpu: str, memory: str = "1Gi", usage: str | None = None,
            level: str | None = "HLS") -> dict[str, Any]:
    ann = {**({QOS_LEVEL_ANNOTATION: level} if level else {}), **({USAGE_ANNOTATION: usage} if usage else {})}
    return pod(name, namespace="ns", cpu=cpu, memory=memory, annotations=ann)


def test_qos_levels_are_volcanos_numbers() -> None:
    levels = {lv: qos_level(pod("p", annotations={QOS_LEVEL_ANNOTATION: lv})) for lv in ("LC", "HLS", "LS", "BE")}
    assert levels == {"LC": 2, "HLS": 2, "LS": 1, "BE": -1}
    assert qos_level(pod("p")) == 0
    assert qos_level(pod("p", annotations={QOS_LEVEL_ANNOTATION: "gold"})) == 0  # unknown: online, as Volcano


def test_oversubscription_is_idle_times_ratio_truncated() -> None:
    alloc = np.array([[8000, 16 * GI], [4000, 8 * GI], [2000, GI]])
    used = np.array([[3000, 4 * GI], [4500, GI], [999, 0]])
    got = oversubscription(alloc, used, 60)
    assert got.tolist() == [[3000, int(12 * GI * 60 // 100)], [0, int(7 * GI * 60 // 100)], [600, GI * 60 // 100]]


def test_smoothing_weighs_each_sample_twice_the_one_before() -> None:
    # weights 1, 2, 4: (100 + 2*200 + 4*400) / 7 = 300
    assert smoothed(np.array([[100, 7], [200, 7], [400, 7]])).tolist() == [300, 7]
    assert smoothed(np.array([[5, 5]])).tolist() == [5, 5]


def test_publish_only_on_a_move_of_more_than_ten_percent() -> None:
    cur = np.array([[1000, 1000], [1000, 1000], [0, 0], [0, 0]])
    new = np.array([[1100, 1000], [1101, 1000], [0, 0], [1, 0]])
    assert should_publish(cur, new).tolist() == [False, True, False, True]


def test_eviction_order_largest_request_then_newest_and_never_online() -> None:
    def started(p: dict[str, Any], t: float) -> dict[str, Any]:
        p["status"] = {"phase": "Running", "startTime": rfc3339(t)}
        return p

    old = started(_be("old", 1000), 100.0)
    new = started(_be("new", 1000), 200.0)
    big = started(pod("big", namespace="ns", cpu="2", annotations={QOS_LEVEL_ANNOTATION: "BE"}), 50.0)
    critical = started(_be("critical", 1000, priority=2_000_000_000), 300.0)
    online = started(_online("web", "4"), 400.0)
    ls = started(_online("ls", "1", level="LS"), 400.0)
    names = [p["metadata"]["name"] for p in eviction_order([old, online, new, critical, big, ls], "cpu")]
    assert names == ["big", "new", "old"]


# --- the agent in a simulated kubelet ---------------------------------------------------------------------------

class _Node:
    def __init__(self, labels: dict[str, str] | None = None, cpu: str = "10", memory: str = "10Gi") -> None:
        self.clock = VirtualClock()
        self.store = MemoryStore(clock=lambda: to_datetime(self.clock.now()))
        self.store.create("nodes", node("n1", cpu=cpu, memory=memory, capacity=True,
                                        labels={OVERSUBSCRIPTION_LABEL: "true"} if labels is None else labels))
        self.kubelet = SimulatedKubelet(self.store, self.clock)
        self.kubelet.sync()
        self.t0 = self.clock.now()

    def run(self, *pods: dict[str, Any]) -> None:
        for p in pods:
            self.store.create("pods", p)
            self.store.bind("ns", p["metadata"]["name"], "n1")
        self.kubelet.sync()

    def until(self, seconds: float) -> None:
        end = self.t0 + seconds
        while True:
            nxt = self.kubelet.next_wakeup()
            if nxt is None or nxt > end:
                break
            self.clock.advance_to(max(nxt, self.clock.now()))
            self.kubelet.sync()
        self.clock.advance_to(end)
        self.kubelet.sync()

    def status(self) -> dict[str, Any]:
        return self.store.get("nodes", None, "n1")["status"]

    def batch(self) -> tuple[int, int] | None:
        alloc = self.status()["allocatable"]
        return (int(alloc[BATCH_CPU]), int(alloc[BATCH_MEMORY])) if BATCH_CPU in alloc else None

    def pods(self) -> set[str]:
        return {p["metadata"]["name"] for p in self.store.list("pods")[0]}

    def events(self) -> list[tuple[str, str, str]]:
        events = sorted(self.store.list("events")[0], key=lambda e: e["firstTimestamp"])
        return [(e["involvedObject"]["name"], e["reason"], e["message"]) for e in events]


def test_agent_publishes_idle_online_resources_times_sixty_percent() -> None:
    n = _Node()
    n.run(_online("web", "6", "4Gi", usage="0.5"))  # uses 3 cores, 2Gi
    assert n.batch() == (6000, 10 * GI * 60 // 100)  # sampled when the node came: nothing ran yet
    n.until(10)
    assert n.batch() == ((6000 + 2 * 4200) // 3, (6 * GI + 2 * (8 * GI * 60 // 100)) // 3)  # weights 1, 2
    n.until(100)
    assert n.batch()[0] != 4200  # within 10 % of the truth: not written again
    n.until(110)
    # the 12th report is written anyway (every 6th), its last ten samples all with the pod:
    # (10000 - 3000) x 60 % and (10Gi - 2Gi) x 60 %
    assert n.batch() == (4200, 8 * GI * 60 // 100)
    assert n.status()["capacity"][BATCH_CPU] == "4200"
    assert n.status()["allocatable"]["cpu"] == "10"  # online requests keep the node's CPU


def test_a_node_without_the_label_publishes_nothing_and_the_agent_sleeps() -> None:
    n = _Node(labels={})
    n.run(_online("web", "6", usage="0.5"))
    assert n.kubelet.colocation.next_wakeup() is None
    n.until(100)
    assert n.batch() is None


def test_offer_follows_usage_smoothed_and_in_steps_of_more_than_ten_percent() -> None:
    n = _Node()
    n.run(_online("web", "10", "1Gi", usage="cpu=0.5,100s:0.8"))  # 5 cores, then 8 from 100 s
    # samples every 10 s from 0 s: the first before the pod ran (6000), then (10000 - 5000) x 60 % = 3000, and
    # from 100 s (10000 - 8000) x 60 % = 1200; the 6th report (50 s) is written whatever it moved
    n.until(50)
    assert n.batch()[0] == (6000 + 3000 * (2 + 4 + 8 + 16 + 32)) // 63
    n.until(170)  # the 18th: the last ten samples are two of 3000 (80, 90 s), then eight of 1200
    assert n.batch()[0] == (3000 * (1 + 2) + 1200 * (2**10 - 1 - 3)) // (2**10 - 1)
    n.until(230)
    assert n.batch()[0] == 1200  # settled on the new level


def test_pressure_for_a_minute_taints_and_evicts_one_offline_pod_per_sample_newest_first() -> None:
    n = _Node()
    n.run(_online("web", "6", "1Gi", usage="cpu=0.2,100s:1.5"))  # 1.2 cores, then 9 from 100 s (90 % > 80 %)
    n.until(20)
    n.clock.advance_to(n.t0 + 21)
    n.run(_be("be-a", 2000, GI // 2, usage="0.1"))
    n.clock.advance_to(n.t0 + 22)
    n.run(_be("be-b", 2000, GI // 2, usage="0.1"))
    n.until(99)
    assert n.pods() == {"web", "be-a", "be-b"}
    n.until(149)  # 9.4 of 10 cores used from 100 s: at or above 80 % in 5 samples (100 ... 140 s)
    assert n.pods() == {"web", "be-a", "be-b"}
    n.until(150)  # the 6th: a minute of pressure
    assert n.pods() == {"web", "be-a"}  # the newest goes first
    taints = n.store.get("nodes", None, "n1")["spec"]["taints"]
    assert [t["key"] for t in taints] == [EVICTING_TAINT] and taints[0]["effect"] == "NoSchedule"
    n.until(160)  # one per sample while the pressure lasts
    assert n.pods() == {"web"}
    evicted = [(name, reason, msg) for name, reason, msg in n.events() if reason == "Evicted"]
    assert evicted == [("be-b", "Evicted", "Evict offline pod due to cpu resource pressure"),
                       ("be-a", "Evicted", "Evict offline pod due to cpu resource pressure")]
    n.until(1000)
    assert n.pods() == {"web"}  # online pods are never evicted, however high their usage


def test_taint_is_removed_once_usage_is_low_again() -> None:
    n = _Node()
    n.run(_online("web", "9", "1Gi", usage="cpu=0.95,200s:0.1"),
          _be("be", 1000, GI // 4, usage="0.1"))
    n.until(150)
    assert "be" not in n.pods()
    assert EVICTING_TAINT in [t["key"] for t in n.store.get("nodes", None, "n1")["spec"]["taints"]]
    n.until(230)
    assert not n.store.get("nodes", None, "n1")["spec"].get("taints")


def test_removing_the_label_takes_the_batch_resources_back_and_evicts_their_holders() -> None:
    n = _Node()
    n.run(_online("web", "4", usage="0.5"), _be("be", 1000, GI // 4))
    n.until(20)
    assert n.batch() is not None
    n.store.patch("nodes", None, "n1", {"metadata": {"labels": {OVERSUBSCRIPTION_LABEL: None}}})
    n.kubelet.sync()
    n.until(40)
    assert n.batch() is None
    assert n.pods() == {"web"}
    assert ("be", "Evicted", "Evict offline pod due to node overSubscription is turned off") in n.events()


def test_watermark_annotations_override_the_defaults() -> None:
    n = _Node()
    n.store.patch("nodes", None, "n1", {"metadata": {"annotations": {
        "volcano.sh/evicting-cpu-high-watermark": "95", "volcano.sh/evicting-cpu-low-watermark": "20"}}})
    n.run(_online("web", "9", usage="0.9"), _be("be", 500, GI // 4, usage="0.1"))  # 9.05 of 10 cores < 95 %
    n.until(300)
    assert "be" in n.pods()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 8), st.sampled_from(["0.1", "0.5", "1", "1.4",
                                                                             "0.2,40s:1.3", "cpu=1.2,30s:0.1"])),
                min_size=1, max_size=6),
       st.integers(60, 400))
def test_online_pods_are_never_evicted_and_keep_their_requests(pods: list[tuple[bool, int, str]],
                                                              horizon: int) -> None:
    """Whatever online and offline pods run and however their usage moves: co-location evicts offline pods
    only, and never touches the node's CPU and memory (the online pods' requests are never reduced)."""
    n = _Node(cpu="16", memory="32Gi")
    online, offline = set(), set()
    for i, (is_online, size, usage) in enumerate(pods):
        if is_online:
            p = _online(f"on{i}", str(size), "1Gi", usage=usage, level=("LC", "HLS", "LS", None)[i % 4])
            online.add(f"on{i}")
        else:
            p = _be(f"be{i}", size * 1000, GI, usage=usage)
            offline.add(f"be{i}")
        n.run(p)
    n.until(horizon)
    left = n.pods()
    assert online <= left
    evicted = {name for name, reason, _ in n.events() if reason == "Evicted"}
    assert evicted <= offline and not evicted & left
    alloc = n.status()["allocatable"]
    assert (alloc["cpu"], alloc["memory"]) == ("16", "32Gi")
    batch = n.batch()
    assert batch is not None and 0 <= batch[0] <= 16000 * 60 // 100 and 0 <= batch[1] <= 32 * GI * 60 // 100


# --- Volcano's agent configuration (ConfigMap volcano-system/volcano-agent-configuration) ------------------------

def _agent_config(n: _Node, doc: dict[str, Any] | str) -> None:
    import json

    text = doc if isinstance(doc, str) else json.dumps(doc)
    n.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
    n.store.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "volcano-agent-configuration", "namespace": "volcano-system"},
                                  "data": {"colocation-config": text}})


def test_config_selects_nodes_and_sets_types_and_watermarks() -> None:
    from pumice.nodes.agent_config import parse_agent_config

    cfg = parse_agent_config('{"globalConfig": {"overSubscriptionConfig": {"overSubscriptionTypes": "cpu"},'
                             ' "evictingConfig": {"evictingCPUHighWatermark": 90}},'
                             ' "nodesConfig": [{"selector": {"matchLabels": {"pool": "a"}},'
                             '   "overSubscriptionConfig": {"enable": false}},'
                             '  {"selector": {"matchLabels": {"pool": "a", "gen": "2"}},'
                             '   "evictingConfig": {"evictingCPULowWatermark": 50}}]}')
    plain = cfg.for_node(node("x"))
    assert (plain.oversubscription, plain.cpu, plain.memory, plain.cpu_high, plain.cpu_low) == (True, True, False,
                                                                                                  90, 30)
    assert not cfg.for_node(node("a", labels={"pool": "a"})).oversubscription
    last = cfg.for_node(node("a2", labels={"pool": "a", "gen": "2"}))  # the last match wins, over the global
    assert (last.oversubscription, last.cpu_low, last.cpu_high) == (True, 50, 90)


def test_memory_off_by_config_publishes_no_batch_memory() -> None:
    n = _Node()
    _agent_config(n, {"globalConfig": {"overSubscriptionConfig": {"overSubscriptionTypes": "cpu"}}})
    n.run(_online("web", "4", usage="0.5"))
    n.until(110)
    assert n.batch() == ((10000 - 2000) * 60 // 100, 0)


def test_config_turning_oversubscription_off_takes_it_back() -> None:
    n = _Node()
    n.run(_online("web", "4", usage="0.5"), _be("be", 1000, GI // 4))
    n.until(20)
    assert n.batch() is not None
    _agent_config(n, {"globalConfig": {"overSubscriptionConfig": {"enable": False}}})
    n.until(40)
    assert n.batch() is None and n.pods() == {"web"}


def test_a_broken_config_keeps_the_defaults(caplog: Any) -> None:
    n = _Node()
    _agent_config(n, {"globalConfig": {"evictingConfig": {"evictingCPUHighWatermark": 20,
                                                          "evictingCPULowWatermark": 30}}})
    n.run(_online("web", "4", usage="0.5"))
    n.until(20)
    assert n.batch() is not None  # still published with the defaults
    assert "low watermark is higher than high watermark" in caplog.text


# --- the scheduler's side: offline pods fit on the batch resources and take nothing from online pods -----------

@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), max_size=4), st.lists(st.integers(1, 3000), max_size=5),
       st.integers(0, 6000), st.integers(1, 4000))
def test_offline_pods_never_reduce_what_online_pods_can_request(online: list[int], offline: list[int],
                                                                published: int, asked: int) -> None:
    """On a node running any online pods (CPU requests) and offline pods (batch-cpu requests), a new online pod
    asking for exactly the CPU the online pods leave is placed there; a new offline pod is placed only if its
    batch-cpu fits in what is published minus what the offline pods already hold."""
    from pumice.scheduler import run_session
    from tests.builders import podgroup, queue

    n1 = node("n1", cpu="16", memory="64Gi")
    n1["status"]["allocatable"][BATCH_CPU] = str(published)
    objs: list[dict[str, Any]] = [n1, queue("default", weight=1)]

    def grouped(p: dict[str, Any], name: str, running: bool) -> None:
        p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = name
        objs.append(podgroup(name, namespace="ns", phase="Running" if running else None))
        if running:
            p["spec"]["nodeName"] = "n1"
            p["status"] = {"phase": "Running"}
        objs.append(p)

    for i, cpu in enumerate(online):
        grouped(_online(f"on{i}", str(cpu), "1Gi"), f"on{i}", True)
    for i, cpu in enumerate(offline):
        grouped(_be(f"be{i}", cpu, 0), f"be{i}", True)
    left = 16 - sum(online)
    held = sum(offline)
    if left > 0:
        grouped(_online("new-online", str(left), "1Gi"), "new-online", False)
    grouped(_be("new-offline", asked, 0), "new-offline", False)
    binds = run_session(objs).binds
    if left > 0:
        assert binds.get("ns/new-online") == "n1"
    fits = held + asked <= published
    assert ("ns/new-offline" in binds) == fits
