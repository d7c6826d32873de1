"""Queues sharing a cluster: preempt, reclaim, proportion and capacity over one or many sessions.

Objects are wire-format dicts, as the store hands them to the scheduler; between sessions the
tests play the cluster: bound pods start running, evicted pods go away (their job controller
recreates them as pending pods).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pumice.scheduler import load_conf, run_session

Obj = dict[str, Any]

PREEMPT_CONF = """
actions: "preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
"""

PROPORTION_CONF = """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: proportion
  - name: predicates
"""

CAPACITY_CONF = """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: capacity
  - name: predicates
"""

HIERARCHY_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: capacity
    enableHierarchy: true
  - name: predicates
"""


def node(name: str, cpu: int) -> Obj:
    return {"kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{cpu}Gi", "pods": "110"}}}


def pod(name: str, group: str, cpu: int, on: str = "", priority: int | None = None,
        preemptable: bool = True) -> Obj:
    spec: Obj = {"schedulerName": "volcano", "containers": [
        {"name": "main", "resources": {"requests": {"cpu": str(cpu), "memory": f"{cpu}Gi"}}}]}
    if on:
        spec["nodeName"] = on
    if priority is not None:
        spec["priority"] = priority
    labels = {} if preemptable else {"volcano.sh/preemptable": "false"}
    return {"kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"ns-{name}", "labels": labels,
                         "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": spec, "status": {"phase": "Running" if on else "Pending"}}


def group(name: str, queue: str, min_member: int, priority_class: str = "", phase: str = "Running") -> Obj:
    spec: Obj = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "ns"}, "spec": spec,
            "status": {"phase": phase}}


def queue(name: str, weight: int = 1, parent: str = "", deserved: Obj | None = None) -> Obj:
    spec: Obj = {"weight": weight}
    if parent:
        spec["parent"] = parent
    if deserved:
        spec["deserved"] = deserved
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec, "status": {"state": "Open"}}


def priority_class(name: str, value: int) -> Obj:
    return {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def play(objects: list[Obj], binds: dict[str, str], evictions: list[str]) -> list[Obj]:
    """The cluster between two sessions: binds run, evicted pods come back pending."""
    out = []
    for o in objects:
        if o["kind"] == "Pod":
            key = f"ns/{o['metadata']['name']}"
            if key in evictions:
                o = {**o, "spec": {k: v for k, v in o["spec"].items() if k != "nodeName"},
                     "status": {"phase": "Pending"}}
            elif key in binds:
                o = {**o, "spec": {**o["spec"], "nodeName": binds[key]}, "status": {"phase": "Running"}}
        out.append(o)
    return out


def running_by_group(objects: list[Obj]) -> Counter[str]:
    return Counter(o["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for o in objects
                   if o["kind"] == "Pod" and o["status"]["phase"] == "Running")


# --- (a) preempt: a gang as a whole, with the fewest victims --------------------------------------
def _gang_cluster(second_node_preemptable: bool) -> list[Obj]:
    return [
        node("n1", 5), node("n2", 5),
        priority_class("low", 10), priority_class("high", 1000),
        queue("q"),
        group("low", "q", 1, "low"),
        group("gang", "q", 2, "high"),
        # per node: two 1-cpu pods Volcano evicts first (lowest task priority), one 3-cpu pod
        pod("low-a-0", "low", 1, "n1", priority=1), pod("low-a-1", "low", 1, "n1", priority=1),
        pod("low-b-0", "low", 3, "n1", priority=5),
        pod("low-c-0", "low", 1, "n2", priority=1, preemptable=second_node_preemptable),
        pod("low-c-1", "low", 1, "n2", priority=1, preemptable=second_node_preemptable),
        pod("low-d-0", "low", 3, "n2", priority=5, preemptable=second_node_preemptable),
        pod("gang-w-0", "gang", 3), pod("gang-w-1", "gang", 3),
    ]


def test_gang_preempts_with_the_fewest_victims() -> None:
    out = run_session(_gang_cluster(True), load_conf(PREEMPT_CONF))
    # Volcano evicts all six pods (the small ones first, then the big one, on each node);
    # the one 3-cpu pod per node frees the same room.
    assert sorted(out.evictions) == ["ns/low-b-0", "ns/low-d-0"]
    assert out.pipelined == {"ns/gang-w-0": "n1", "ns/gang-w-1": "n2"}
    assert out.binds == {}


def test_gang_preempts_all_or_nothing() -> None:
    out = run_session(_gang_cluster(False), load_conf(PREEMPT_CONF))
    # only one member could get room: the gang would not be pipelined, so nothing is evicted
    assert out.evictions == []
    assert out.pipelined == {}


# --- (b) proportion: weights 1 and 2 converge to a 1:2 share -------------------------------------
def test_weighted_queues_converge_to_their_shares() -> None:
    objects: list[Obj] = [
        node("n1", 4), node("n2", 4), node("n3", 4),
        queue("qa", weight=1), queue("qb", weight=2),
        group("ja", "qa", 1),
    ]
    # qa arrived first and holds the whole cluster; both queues want all of it. qb runs
    # single-pod jobs: reclaim only serves jobs below their gang minimum (starving ones).
    objects += [pod(f"ja-t-{i}", "ja", 1, f"n{i // 4 + 1}") for i in range(12)]
    for i in range(12):
        objects += [group(f"jb{i}", "qb", 1, phase="Inqueue"), pod(f"jb{i}-t-0", f"jb{i}", 1)]
    conf = load_conf(PROPORTION_CONF)
    history = []
    for _ in range(6):
        out = run_session(objects, conf)
        objects = play(objects, out.binds, out.evictions)
        running = running_by_group(objects)
        history.append((running["ja"], sum(n for g, n in running.items() if g.startswith("jb"))))
    assert history[-1] == (4, 8)  # weights 1:2 of 12 cpus
    assert history[-2] == history[-1]  # stable: no more evictions once the shares are met
    assert history[0][1] == 0 and history[1][1] == 8  # reclaim, then the freed room is bound


# --- (c) capacity: an idle queue takes back what another queue borrowed --------------------------
def test_reclaim_brings_back_borrowed_resources() -> None:
    half = {"cpu": "6", "memory": "6Gi"}
    objects: list[Obj] = [
        node("n1", 4), node("n2", 4), node("n3", 4),
        queue("idle", deserved=half), queue("busy", deserved=half),
        group("borrower", "busy", 1),
    ]
    # the idle queue had nothing to run: busy borrowed the whole cluster
    objects += [pod(f"borrower-t-{i}", "borrower", 1, f"n{i // 4 + 1}") for i in range(12)]
    conf = load_conf(CAPACITY_CONF)
    out = run_session(objects, conf)
    assert out.evictions == []  # nobody asks for it back yet
    objects += [group("owner", "idle", 6, phase="Inqueue")]
    objects += [pod(f"owner-t-{i}", "owner", 1) for i in range(6)]
    out = run_session(objects, conf)
    # the gang gets its room as a whole: six evictions, six pipelined members, nothing bound yet
    assert len(out.evictions) == 6 and len(out.pipelined) == 6 and out.binds == {}
    objects = play(objects, out.binds, out.evictions)
    out = run_session(objects, conf)
    assert len(out.binds) == 6 and out.evictions == []
    objects = play(objects, out.binds, out.evictions)
    final = running_by_group(objects)
    assert (final["owner"], final["borrower"]) == (6, 6)
    out = run_session(objects, conf)
    assert out.evictions == [] and out.binds == {}  # borrower stays at its deserved share


# --- hierarchy: a job in a parent queue is refused alone ------------------------------------------
def test_job_in_a_parent_queue_does_not_block_the_others() -> None:
    objects: list[Obj] = [
        node("n1", 8),
        queue("root"), queue("eng", parent="root"), queue("dev", parent="eng"),
        group("misplaced", "eng", 1, phase="Inqueue"), group("fine", "dev", 1, phase="Inqueue"),
        pod("misplaced-t-0", "misplaced", 1), pod("fine-t-0", "fine", 1),
    ]
    out = run_session(objects, load_conf(HIERARCHY_CONF))
    assert out.binds == {"ns/fine-t-0": "n1"}  # Volcano would bind nothing at all
    reasons = {j.key: j.reason for j in out.jobs}
    assert "not a leaf queue" in reasons["ns/misplaced"]


# --- Volcano behaviours the actions keep (from Volcano's own preempt/reclaim tests) ---------------
def test_preempt_frees_a_pod_slot_for_a_best_effort_pod() -> None:
    # Volcano counts a pod slot in every task's request: the node's only slot must be freed
    full = {"kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "12", "memory": "12Gi", "pods": "1"}}}
    best_effort_victim = pod("be-low-0", "low", 0, "n1")
    best_effort_victim["spec"]["containers"][0]["resources"] = {}
    preemptor = pod("be-high-0", "high", 0)
    preemptor["spec"]["containers"][0]["resources"] = {}
    objects = [full, priority_class("low", 10), priority_class("high", 1000), queue("q"),
               group("low", "q", 0, "low"), group("high", "q", 1, "high", phase="Inqueue"),
               best_effort_victim, preemptor]
    out = run_session(objects, load_conf(PREEMPT_CONF))
    assert out.evictions == ["ns/be-low-0"]
    assert out.pipelined == {"ns/be-high-0": "n1"}


def test_preempt_evicts_the_pod_an_anti_affinity_forbids() -> None:
    def anti(p: Obj) -> Obj:
        p["metadata"]["labels"]["app"] = "solo"
        p["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        return p

    n1 = node("n1", 2)
    n1["metadata"]["labels"] = {"kubernetes.io/hostname": "n1"}
    objects = [n1, priority_class("low", 10), priority_class("high", 1000), queue("q"),
               group("a", "q", 0, "low"), group("b", "q", 0, "low"), group("h", "q", 1, "high", phase="Inqueue"),
               pod("a-t-0", "a", 1, "n1"), anti(pod("b-t-0", "b", 1, "n1")), anti(pod("h-t-0", "h", 1))]
    conf = load_conf(PREEMPT_CONF.replace("  - name: conformance", "  - name: conformance\n  - name: predicates"))
    out = run_session(objects, conf)
    # evicting a-t-0 frees the cpu, but only evicting b-t-0 lets the preemptor run there
    assert out.evictions == ["ns/b-t-0"]


def test_closed_queue_reclaims_nothing() -> None:
    objects: list[Obj] = [
        node("n1", 2), queue("q1"),
        {**queue("q2"), "status": {"state": "Closed"}},
        group("j1", "q1", 1), group("j2", "q2", 1, phase="Inqueue"),
        pod("j1-t-0", "j1", 1, "n1"), pod("j1-t-1", "j1", 1, "n1"), pod("j2-t-0", "j2", 1),
    ]
    for conf in (PROPORTION_CONF, CAPACITY_CONF):
        out = run_session(objects, load_conf(conf))
        assert out.evictions == [] and out.pipelined == {}


def test_topology_aware_preemption_compares_candidate_nodes() -> None:
    objects = [
        node("n1", 2), node("n2", 2),
        priority_class("low", 10), priority_class("high", 1000), queue("q"),
        group("low", "q", 1, "low"), group("high", "q", 1, "high", phase="Inqueue"),
        pod("low-a-0", "low", 1, "n1"), pod("low-a-1", "low", 1, "n1"), pod("low-b-0", "low", 2, "n2"),
        pod("high-t-0", "high", 2),
    ]
    out = run_session(objects, load_conf(PREEMPT_CONF))
    assert sorted(out.evictions) == ["ns/low-a-0", "ns/low-a-1"]  # the first node that works
    compare = PREEMPT_CONF + """
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
    minCandidateNodesAbsolute: 2
"""
    out = run_session(objects, load_conf(compare))
    assert out.evictions == ["ns/low-b-0"] and out.pipelined == {"ns/high-t-0": "n2"}
