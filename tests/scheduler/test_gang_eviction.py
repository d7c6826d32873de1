"""gangpreempt and gangreclaim: whole-gang room inside one HyperNode domain, victims bundle by bundle."""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from pumice.scheduler import load_conf, run_session
from pumice.scheduler.outcome import SessionOutcome
from tests.builders import hypernode, node, node_member, pdb, pod, podgroup, priority_class, queue
from tests.scheduler.plugins.support import conf_text

PLUGINS = ("priority", "gang", "conformance", "predicates", "network-topology-aware", "pdb")


def low_job(name: str, nodes: list[str], per_node: int, min_member: int, queue_name: str = "default",
            labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A running low-priority gang of ``per_node`` 1-CPU pods on each of ``nodes``."""
    out = [podgroup(name, queue=queue_name, priority_class="low", phase="Running", min_member=min_member)]
    i = 0
    for n in nodes:
        for _ in range(per_node):
            out.append(pod(f"{name}-{i}", group=name, cpu="1", node=n, phase="Running", priority=1, labels=labels))
            i += 1
    return out


def gang(name: str, size: int, queue_name: str = "default",
         topology: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [podgroup(name, queue=queue_name, priority_class="high", min_member=size, phase="Inqueue",
                     topology=topology),
            *[pod(f"{name}-{i}", group=name, cpu="1", priority=100) for i in range(size)]]


def base(nodes: int = 2, cpu: str = "4") -> list[dict[str, Any]]:
    return [*[node(f"n{i}", cpu=cpu) for i in range(nodes)], queue("default"),
            priority_class("high", 100), priority_class("low", 1)]


def run(objects: list[dict[str, Any]], action: str = "gangpreempt", **arguments: Any) -> SessionOutcome:
    text = conf_text(*PLUGINS, actions=action)
    if arguments:
        text += f"configurations:\n- name: {action}\n  arguments: {arguments!r}\n".replace("'", '"').replace(
            "True", "true").replace("False", "false")
    return run_session(objects, load_conf(text))


def test_a_gang_takes_the_safe_surplus_of_a_lower_priority_gang() -> None:
    # lo runs 8 pods with minMember 4: its safe bundle is the four that may go without breaking it;
    # hi needs 3, and bundles go whole (Volcano)
    outcome = run([*base(), *low_job("lo", ["n0", "n1"], 4, 4), *gang("hi", 3)])
    assert len(outcome.evictions) == 4
    assert sorted(outcome.pipelined) == ["default/hi-0", "default/hi-1", "default/hi-2"]


def test_no_room_for_the_whole_gang_means_no_eviction() -> None:
    # hi needs 9 CPUs of 8: nothing is evicted for a gang that cannot fit whole
    assert run([*base(), *low_job("lo", ["n0", "n1"], 4, 4), *gang("hi", 9)]).evictions == []


def test_a_whole_bundle_breaks_a_gang_only_when_allowed() -> None:
    objects = [*base(), *low_job("lo", ["n0", "n1"], 4, 8), *gang("hi", 3)]  # lo has no surplus
    assert run(objects, allowWholeBundle=False).evictions == []
    evicted = run(objects).evictions
    assert len(evicted) == 8  # the whole gang in the domain (the cluster): no partial gang left


def test_victims_stay_in_one_hypernode_domain() -> None:
    objects = [*base(4), hypernode("hn-a", 1, [node_member("n0"), node_member("n1")]),
               hypernode("hn-b", 1, [node_member("n2"), node_member("n3")]),
               *low_job("lo", ["n0", "n1", "n2", "n3"], 4, 16),
               *gang("hi", 6, topology={"mode": "hard", "highestTierAllowed": 1})]
    outcome = run(objects)
    evicted = set(outcome.evictions)
    on = {f"default/lo-{i}": f"n{i // 4}" for i in range(16)}
    nodes = {on[v] for v in evicted}
    assert nodes in ({"n0", "n1"}, {"n2", "n3"})  # one tier-1 domain, all of lo in it
    assert len(evicted) == 8
    assert {outcome.pipelined[f"default/hi-{i}"] for i in range(6)} <= nodes


def test_same_queue_and_priority_rules_of_gangpreempt() -> None:
    same_priority = [*base(), *low_job("lo", ["n0", "n1"], 4, 4), *gang("hi", 3)]
    same_priority[5]["spec"]["priorityClassName"] = "high"  # lo as important as hi: no victim
    assert run(same_priority).evictions == []
    other_queue = [*base(), queue("q2"), *low_job("lo", ["n0", "n1"], 4, 4, queue_name="q2"), *gang("hi", 3)]
    assert run(other_queue).evictions == []


def test_gangreclaim_takes_from_other_reclaimable_queues() -> None:
    objects = [*base(), queue("q1", weight=1), queue("q2", weight=1),
               *low_job("lo", ["n0", "n1"], 4, 4, queue_name="q1"), *gang("g", 3, queue_name="q2")]
    outcome = run_session(objects, load_conf(conf_text("priority", "gang", "conformance", "predicates", "proportion",
                                                       actions="gangreclaim")))
    assert len(outcome.evictions) == 4
    objects[5] = queue("q1", weight=1, reclaimable=False)  # q1 refuses
    assert run_session(objects, load_conf(conf_text("priority", "gang", "conformance", "predicates", "proportion",
                                                    actions="gangreclaim"))).evictions == []


def test_gangreclaim_under_capacity_takes_only_what_a_queue_holds_beyond_its_deserved() -> None:
    """capacity's UnifiedEvictableFn: q1 runs 8 CPUs; it gives back only what it holds beyond its deserved
    share, and never goes below its guarantee."""
    def objects(**q1: Any) -> list[dict[str, Any]]:
        return [*base(), queue("q1", **q1), queue("q2", deserved={"cpu": "4"}),
                *low_job("lo", ["n0", "n1"], 4, 4, queue_name="q1"), *gang("g", 3, queue_name="q2")]

    conf = load_conf(conf_text("priority", "gang", "conformance", "predicates", "capacity", actions="gangreclaim"))
    over = run_session(objects(deserved={"cpu": "4"}), conf)
    assert len(over.evictions) == 4 and len(over.pipelined) == 3  # the safe surplus: 4 pods above deserved
    assert run_session(objects(deserved={"cpu": "8"}), conf).evictions == []  # within its deserved
    # above deserved, but a guarantee of 7 CPUs lets one pod go: not room for the gang, nothing is evicted
    assert run_session(objects(deserved={"cpu": "4"}, guarantee={"resource": {"cpu": "7"}}), conf).evictions == []


def test_budgets_hold_in_gang_actions() -> None:
    objects = [*base(), *low_job("lo", ["n0", "n1"], 4, 4, labels={"app": "lo"}), *gang("hi", 3),
               pdb("keep", match={"app": "lo"}, min_available=6)]
    assert run(objects).evictions == []  # two may go, the gang needs three


@settings(max_examples=50, deadline=None)
@given(
    hypernodes=st.integers(1, 3), per_hn=st.integers(1, 2), cpu=st.integers(2, 4),
    jobs=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(0, 5)), min_size=1, max_size=4),
    size=st.integers(1, 8), hard=st.booleans(), whole=st.booleans(),
)
def test_no_partial_gang_and_one_domain(hypernodes: int, per_hn: int, cpu: int,
                                        jobs: list[tuple[int, int, int]], size: int, hard: bool, whole: bool) -> None:
    """Whatever gangpreempt evicts lies inside one tier-1 HyperNode (or the cluster without topology),
    every victim job keeps its minAvailable or loses all it ran in that domain, and something is
    evicted only for a gang that then fits whole."""
    n = hypernodes * per_hn
    objects: list[dict[str, Any]] = [*base(n, str(cpu))]
    domain_of = {}
    for h in range(hypernodes):
        names = [f"n{h * per_hn + k}" for k in range(per_hn)]
        objects.append(hypernode(f"hn{h}", 1, [node_member(x) for x in names]))
        domain_of.update({x: h for x in names})
    free = {f"n{i}": cpu for i in range(n)}
    placed: dict[str, tuple[str, str]] = {}  # pod key -> (job, node)
    for j, (count, min_member, start) in enumerate(jobs):
        name = f"lo{j}"
        objects.append(podgroup(name, queue="default", priority_class="low", phase="Running",
                                min_member=min(min_member, count)))
        for i in range(count):
            where = next((x for k in range(n) if free[x := f"n{(start + i + k) % n}"] > 0), None)
            if where is None:
                break
            free[where] -= 1
            objects.append(pod(f"{name}-{i}", group=name, cpu="1", node=where, phase="Running", priority=1))
            placed[f"default/{name}-{i}"] = (name, where)
    objects += gang("hi", size, topology={"mode": "hard", "highestTierAllowed": 1} if hard else None)
    outcome = run(objects, allowWholeBundle=whole)
    evicted = set(outcome.evictions)
    event("evicted" if evicted else "nothing evicted")
    if not evicted:
        return
    assert all(key in placed for key in evicted)
    domains = {domain_of[placed[k][1]] for k in evicted}
    if hard:
        assert len(domains) == 1
    gang_nodes = {outcome.pipelined.get(f"default/hi-{i}") for i in range(size)}
    assert None not in gang_nodes  # the whole gang got its room
    if hard:
        assert {domain_of[x] for x in gang_nodes if x is not None} == domains
    scope = {x for x, h in domain_of.items() if h in domains} if hard else set(domain_of)
    for j, (count, min_member, _) in enumerate(jobs):
        name = f"lo{j}"
        mine = [k for k, (job, _) in placed.items() if job == name]
        lost = [k for k in mine if k in evicted]
        if not lost:
            continue
        left = len(mine) - len(lost)
        in_scope = [k for k in mine if placed[k][1] in scope]
        assert left >= min(min_member, count) or set(in_scope) <= evicted, (name, left, min_member)
        if not whole and len(mine) >= min(min_member, count):  # a gang that held: never broken without whole
            assert left >= min(min_member, count)


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(1, 3), cpu=st.integers(2, 6),
    queues=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 4), st.integers(1, 8), st.integers(1, 8)),
                    min_size=1, max_size=3),
    size=st.integers(1, 6), whole=st.booleans(),
)
def test_gangreclaim_under_capacity_keeps_guarantees_and_deserved(nodes: int, cpu: int,
                                                                  queues: list[tuple[int, int, int, int]],
                                                                  size: int, whole: bool) -> None:
    """Random queues (deserved, guarantee) running gangs on random clusters, a gang of another queue starving:
    whatever gangreclaim with capacity evicts leaves every victim queue at or above its guarantee and takes
    from a queue only what it holds beyond its deserved share (one CPU per pod; the share as capacity counts
    it: at most what the others' guarantees leave of the cluster, at least the queue's own guarantee)."""
    objects: list[dict[str, Any]] = [*base(nodes, str(cpu)), queue("starved", deserved={"cpu": str(nodes * cpu)})]
    free = {f"n{i}": cpu for i in range(nodes)}
    held: dict[str, int] = {}
    names = [f"n{i}" for i in range(nodes)]
    for q, (deserved, guarantee, pods, min_member) in enumerate(queues):
        qname = f"q{q}"
        objects.append(queue(qname, deserved={"cpu": str(deserved)}, guarantee={"resource": {"cpu": str(guarantee)}}))
        objects.append(podgroup(f"lo{q}", queue=qname, priority_class="low", phase="Running",
                                min_member=min(min_member, pods)))
        for i in range(pods):
            where = next((x for x in names if free[x] > 0), None)
            if where is None:
                break
            free[where] -= 1
            held[qname] = held.get(qname, 0) + 1
            objects.append(pod(f"lo{q}-{i}", group=f"lo{q}", cpu="1", node=where, phase="Running", priority=1))
    objects += gang("g", size, queue_name="starved")
    text = conf_text("priority", "gang", "conformance", "predicates", "capacity", actions="gangreclaim")
    if not whole:
        text += "configurations:\n- name: gangreclaim\n  arguments: {allowWholeBundle: false}\n"
    conf = load_conf(text)
    evicted = run_session(objects, conf).evictions
    event("evicted" if evicted else "nothing evicted")
    lost: dict[str, int] = {}
    for key in evicted:
        q = int(key.split("/lo", 1)[1].split("-", 1)[0])
        lost[f"q{q}"] = lost.get(f"q{q}", 0) + 1
    guarantees = sum(g for _, g, _, _ in queues)
    for q, (deserved, guarantee, _, _) in enumerate(queues):
        qname = f"q{q}"
        if not lost.get(qname):
            continue
        share = max(min(deserved, nodes * cpu - (guarantees - guarantee)), guarantee)
        left = held[qname] - lost[qname]
        assert left >= guarantee, (qname, held[qname], lost[qname], guarantee)
        assert left >= min(share, held[qname]), (qname, held[qname], lost[qname], share)
