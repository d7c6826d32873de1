"""Queues sharing a cluster: preempt, reclaim, proportion and capacity over one or many sessions.

Objects are wire-format dicts, as the store hands them to the scheduler; between sessions the
tests play the cluster: bound pods start running, evicted pods go away (their job controller
recreates them as pending pods).
"""

from __future__ import annotations

from collections import Counter

from pumice.scheduler import load_conf, run_session
from tests.builders import Obj, node, pod, podgroup, priority_class, queue

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
        node("n1", cpu="5", memory="5Gi"), node("n2", cpu="5", memory="5Gi"),
        priority_class("low", 10), priority_class("high", 1000),
        queue("q"),
        podgroup("low", namespace="ns", queue="q", min_member=1, priority_class="low", phase="Running"),
        podgroup("gang", namespace="ns", queue="q", min_member=2, priority_class="high", phase="Running"),
        # per node: two 1-cpu pods Volcano evicts first (lowest task priority), one 3-cpu pod
        pod("low-a-0", namespace="ns", group="low", cpu="1", memory="1Gi", node="n1", phase="Running", priority=1),
        pod("low-a-1", namespace="ns", group="low", cpu="1", memory="1Gi", node="n1", phase="Running", priority=1),
        pod("low-b-0", namespace="ns", group="low", cpu="3", memory="3Gi", node="n1", phase="Running", priority=5),
        pod("low-c-0", namespace="ns", group="low", cpu="1", memory="1Gi", node="n2", phase="Running", priority=1,
            labels=None if second_node_preemptable else {"volcano.sh/preemptable": "false"}),
        pod("low-c-1", namespace="ns", group="low", cpu="1", memory="1Gi", node="n2", phase="Running", priority=1,
            labels=None if second_node_preemptable else {"volcano.sh/preemptable": "false"}),
        pod("low-d-0", namespace="ns", group="low", cpu="3", memory="3Gi", node="n2", phase="Running", priority=5,
            labels=None if second_node_preemptable else {"volcano.sh/preemptable": "false"}),
        pod("gang-w-0", namespace="ns", group="gang", cpu="3", memory="3Gi", phase="Pending"),
        pod("gang-w-1", namespace="ns", group="gang", cpu="3", memory="3Gi", phase="Pending"),
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
        node("n1", cpu="4", memory="4Gi"), node("n2", cpu="4", memory="4Gi"), node("n3", cpu="4", memory="4Gi"),
        queue("qa", weight=1), queue("qb", weight=2),
        podgroup("ja", namespace="ns", queue="qa", min_member=1, phase="Running"),
    ]
    # qa arrived first and holds the whole cluster; both queues want all of it. qb runs
    # single-pod jobs: reclaim only serves jobs below their gang minimum (starving ones).
    objects += [pod(f"ja-t-{i}", namespace="ns", group="ja", cpu="1", memory="1Gi", node=f"n{i // 4 + 1}",
                    phase="Running") for i in range(12)]
    for i in range(12):
        objects += [podgroup(f"jb{i}", namespace="ns", queue="qb", min_member=1, phase="Inqueue"),
                    pod(f"jb{i}-t-0", namespace="ns", group=f"jb{i}", cpu="1", memory="1Gi", phase="Pending")]
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
        node("n1", cpu="4", memory="4Gi"), node("n2", cpu="4", memory="4Gi"), node("n3", cpu="4", memory="4Gi"),
        queue("idle", deserved=half), queue("busy", deserved=half),
        podgroup("borrower", namespace="ns", queue="busy", min_member=1, phase="Running"),
    ]
    # the idle queue had nothing to run: busy borrowed the whole cluster
    objects += [pod(f"borrower-t-{i}", namespace="ns", group="borrower", cpu="1", memory="1Gi", node=f"n{i // 4 + 1}",
                    phase="Running") for i in range(12)]
    conf = load_conf(CAPACITY_CONF)
    out = run_session(objects, conf)
    assert out.evictions == []  # nobody asks for it back yet
    objects += [podgroup("owner", namespace="ns", queue="idle", min_member=6, phase="Inqueue")]
    objects += [pod(f"owner-t-{i}", namespace="ns", group="owner", cpu="1", memory="1Gi",
                    phase="Pending") for i in range(6)]
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
        node("n1", cpu="8", memory="8Gi"),
        queue("root"), queue("eng", parent="root"), queue("dev", parent="eng"),
        podgroup("misplaced", namespace="ns", queue="eng", min_member=1, phase="Inqueue"),
        podgroup("fine", namespace="ns", queue="dev", min_member=1, phase="Inqueue"),
        pod("misplaced-t-0", namespace="ns", group="misplaced", cpu="1", memory="1Gi", phase="Pending"),
        pod("fine-t-0", namespace="ns", group="fine", cpu="1", memory="1Gi", phase="Pending"),
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
    best_effort_victim = pod("be-low-0", namespace="ns", group="low", cpu="0", memory="0Gi", node="n1", phase="Running")
    best_effort_victim["spec"]["containers"][0]["resources"] = {}
    preemptor = pod("be-high-0", namespace="ns", group="high", cpu="0", memory="0Gi", phase="Pending")
    preemptor["spec"]["containers"][0]["resources"] = {}
    objects = [full, priority_class("low", 10), priority_class("high", 1000), queue("q"),
               podgroup("low", namespace="ns", queue="q", min_member=0, priority_class="low", phase="Running"),
               podgroup("high", namespace="ns", queue="q", min_member=1, priority_class="high", phase="Inqueue"),
               best_effort_victim, preemptor]
    out = run_session(objects, load_conf(PREEMPT_CONF))
    assert out.evictions == ["ns/be-low-0"]
    assert out.pipelined == {"ns/be-high-0": "n1"}


def test_preempt_evicts_the_pod_an_anti_affinity_forbids() -> None:
    def anti(p: Obj) -> Obj:
        p["metadata"].setdefault("labels", {})["app"] = "solo"
        p["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        return p

    n1 = node("n1", cpu="2", memory="2Gi")
    n1["metadata"]["labels"] = {"kubernetes.io/hostname": "n1"}
    objects = [n1, priority_class("low", 10), priority_class("high", 1000), queue("q"),
               podgroup("a", namespace="ns", queue="q", min_member=0, priority_class="low", phase="Running"),
               podgroup("b", namespace="ns", queue="q", min_member=0, priority_class="low", phase="Running"),
               podgroup("h", namespace="ns", queue="q", min_member=1, priority_class="high", phase="Inqueue"),
               pod("a-t-0", namespace="ns", group="a", cpu="1", memory="1Gi", node="n1", phase="Running"),
               anti(pod("b-t-0", namespace="ns", group="b", cpu="1", memory="1Gi", node="n1", phase="Running")),
               anti(pod("h-t-0", namespace="ns", group="h", cpu="1", memory="1Gi", phase="Pending"))]
    conf = load_conf(PREEMPT_CONF.replace("  - name: conformance", "  - name: conformance\n  - name: predicates"))
    out = run_session(objects, conf)
    # evicting a-t-0 frees the cpu, but only evicting b-t-0 lets the preemptor run there
    assert out.evictions == ["ns/b-t-0"]


def test_closed_queue_reclaims_nothing() -> None:
    objects: list[Obj] = [
        node("n1", cpu="2", memory="2Gi"), queue("q1"),
        {**queue("q2"), "status": {"state": "Closed"}},
        podgroup("j1", namespace="ns", queue="q1", min_member=1, phase="Running"),
        podgroup("j2", namespace="ns", queue="q2", min_member=1, phase="Inqueue"),
        pod("j1-t-0", namespace="ns", group="j1", cpu="1", memory="1Gi", node="n1", phase="Running"),
        pod("j1-t-1", namespace="ns", group="j1", cpu="1", memory="1Gi", node="n1", phase="Running"),
        pod("j2-t-0", namespace="ns", group="j2", cpu="1", memory="1Gi", phase="Pending"),
    ]
    for conf in (PROPORTION_CONF, CAPACITY_CONF):
        out = run_session(objects, load_conf(conf))
        assert out.evictions == [] and out.pipelined == {}


def test_topology_aware_preemption_compares_candidate_nodes() -> None:
    objects = [
        node("n1", cpu="2", memory="2Gi"), node("n2", cpu="2", memory="2Gi"),
        priority_class("low", 10), priority_class("high", 1000), queue("q"),
        podgroup("low", namespace="ns", queue="q", min_member=1, priority_class="low", phase="Running"),
        podgroup("high", namespace="ns", queue="q", min_member=1, priority_class="high", phase="Inqueue"),
        pod("low-a-0", namespace="ns", group="low", cpu="1", memory="1Gi", node="n1", phase="Running"),
        pod("low-a-1", namespace="ns", group="low", cpu="1", memory="1Gi", node="n1", phase="Running"),
        pod("low-b-0", namespace="ns", group="low", cpu="2", memory="2Gi", node="n2", phase="Running"),
        pod("high-t-0", namespace="ns", group="high", cpu="2", memory="2Gi", phase="Pending"),
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
