"""pdb: preempt, reclaim and shuffle never take a PodDisruptionBudget below what it must keep."""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from pumice.api.disruption import budget_status
from pumice.scheduler import load_conf, run_session
from pumice.store import MemoryStore
from tests.builders import node, pdb, pod, podgroup, priority_class, queue
from tests.scheduler.plugins.support import conf_text, session, task

PREEMPT = "enqueue, allocate, preempt"


def web(n: int, *, node_name: str = "n1", labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """``n`` running low-priority pods of job ``lo``, 1 CPU each, labelled app=web."""
    return [pod(f"web-{i}", group="lo", cpu="1", node=node_name, phase="Running", priority=10,
                labels=labels if labels is not None else {"app": "web"}) for i in range(n)]


def crowded(*budgets: dict[str, Any], preemptors: int = 2) -> list[dict[str, Any]]:
    """A full 4-CPU node of four ``web`` pods; ``preemptors`` high-priority one-pod jobs of 1 CPU wait."""
    objects = [node("n1", cpu="4"), queue("default"), priority_class("high", 1000), priority_class("low", 10),
               podgroup("lo", queue="default", priority_class="low", phase="Running"), *web(4), *budgets]
    for i in range(preemptors):
        objects += [podgroup(f"hi{i}", queue="default", priority_class="high"),
                    pod(f"hi{i}-0", group=f"hi{i}", cpu="1", priority=1000)]
    return objects


def evictions(objects: list[dict[str, Any]], *plugins: str, actions: str = PREEMPT) -> list[str]:
    conf = load_conf(conf_text(*plugins, actions=actions))
    return run_session(objects, conf).evictions


def test_without_a_budget_each_preemptor_takes_a_victim() -> None:
    assert len(evictions(crowded(), "priority", "gang", "pdb")) == 2


def test_a_budget_allows_only_its_disruptions_in_one_session() -> None:
    # minAvailable 3 of 4 healthy: one disruption, although two preemptors each need a victim
    assert len(evictions(crowded(pdb("keep3", match={"app": "web"}, min_available=3)), "priority", "gang", "pdb")) == 1
    assert evictions(crowded(pdb("keep4", match={"app": "web"}, min_available=4)), "priority", "gang", "pdb") == []
    # maxUnavailable and percentages (of the four covered pods): 50% keeps 2, so two may go
    assert len(evictions(crowded(pdb("half", match={"app": "web"}, max_unavailable="50%")),
                         "priority", "gang", "pdb")) == 2
    assert len(evictions(crowded(pdb("most", match={"app": "web"}, min_available="75%")),
                         "priority", "gang", "pdb")) == 1


def test_the_reported_status_caps_the_allowance() -> None:
    # the disruption controller says 0 (e.g. a pod is not Ready to it): nothing goes
    budget = pdb("keep1", match={"app": "web"}, min_available=1, allowed=0)
    assert evictions(crowded(budget), "priority", "gang", "pdb") == []


def test_budgets_of_other_namespaces_or_labels_do_not_cover() -> None:
    assert len(evictions(crowded(pdb("other", namespace="team", match={"app": "web"}, min_available=4),
                                 pdb("db", match={"app": "db"}, min_available=4)), "priority", "gang", "pdb")) == 2
    # an empty selector covers nothing (Volcano's plugin, policy/v1beta1)
    assert len(evictions(crowded(pdb("all", match={}, min_available=4)), "priority", "gang", "pdb")) == 2


def test_the_filter_walks_candidates_in_order_and_spares_disrupted_pods() -> None:
    budget = pdb("keep2", match={"app": "web"}, min_available=2)
    budget["status"] = {"disruptedPods": {"web-0": "2024-01-01T00:00:00Z"}}
    ssn = session(crowded(budget), "priority", "pdb", actions=PREEMPT)
    pods = [task(ssn, f"web-{i}") for i in range(4)]
    # web-0's eviction is already admitted: it is not healthy and costs nothing; of the three healthy, one may go
    assert ssn.preemptable(task(ssn, "hi0-0"), pods) == pods[:2]


def test_reclaim_respects_budgets() -> None:
    objects = [node("n1", cpu="4"), queue("q1", weight=1), queue("q2", weight=1),
               podgroup("lo", queue="q1", phase="Running"), *web(4),
               pdb("keep3", match={"app": "web"}, min_available=3)]
    for i in range(2):
        objects += [podgroup(f"r{i}", queue="q2"), pod(f"r{i}-0", group=f"r{i}", cpu="1")]
    assert len(evictions(objects, "gang", "proportion", "pdb", actions="enqueue, reclaim")) == 1
    objects.pop(-5)  # the budget
    assert len(evictions(objects, "gang", "proportion", actions="enqueue, reclaim")) == 2


def test_disruption_status_is_the_disruption_controllers() -> None:
    pods = [*web(3), pod("web-x", cpu="1", phase="Pending", labels={"app": "web"}),
            pod("web-done", cpu="1", phase="Succeeded", labels={"app": "web"})]
    status = budget_status(pdb("b", match={"app": "web"}, min_available=2), pods)
    assert (status.expected_pods, status.current_healthy, status.desired_healthy, status.disruptions_allowed) == \
        (4, 3, 2, 1)
    not_ready = web(1)[0] | {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}
    assert budget_status(pdb("b", match={"app": "web"}, min_available=1), [not_ready]).disruptions_allowed == 0
    # maxUnavailable counts the pending pod as unavailable already
    assert budget_status(pdb("b", match={"app": "web"}, max_unavailable=1), pods).disruptions_allowed == 0
    assert budget_status(pdb("b", match={"app": "web"}, max_unavailable=1), web(3)).disruptions_allowed == 1


def test_budgets_are_stored_under_policy_v1_and_v1beta1() -> None:
    store = MemoryStore()
    store.create("poddisruptionbudgets.policy", pdb("a", match={"app": "web"}, min_available=1))
    store.create("poddisruptionbudgets.policy",
                 pdb("b", match={"app": "web"}, max_unavailable="25%", api_version="policy/v1beta1"))
    items, _ = store.list("poddisruptionbudgets.policy")
    assert sorted(o["metadata"]["name"] for o in items) == ["a", "b"]


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(1, 3),
    running=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["web", "db", ""])), min_size=1, max_size=9),
    budgets=st.lists(st.tuples(st.sampled_from(["web", "db"]), st.one_of(st.integers(0, 5),
                                                                         st.sampled_from(["50%", "80%"])),
                               st.booleans()), max_size=2),
    preemptors=st.integers(1, 6),
    reclaim=st.booleans(),
)
def test_no_eviction_takes_a_budget_below_its_minimum(nodes: int, running: list[tuple[int, str]],
                                                       budgets: list[tuple[str, int | str, bool]],
                                                       preemptors: int, reclaim: bool) -> None:
    """Whatever preempt or reclaim decide, each budget loses at most the disruptions it allowed at open."""
    objects: list[dict[str, Any]] = [node(f"n{i}", cpu="2") for i in range(nodes)]
    objects += [queue("q1", weight=1), queue("q2", weight=1), priority_class("high", 1000),
                priority_class("low", 10), podgroup("lo", queue="q1", priority_class="low", phase="Running")]
    pods = []
    for i, (n, app) in enumerate(running):
        pods.append(pod(f"p{i}", group="lo", cpu="1", node=f"n{n % nodes}", phase="Running", priority=10,
                        labels={"app": app} if app else None))
    objects += pods
    limits = []
    for j, (app, amount, as_max) in enumerate(budgets):
        b = pdb(f"b{j}", match={"app": app}, **({"max_unavailable": amount} if as_max else {"min_available": amount}))
        limits.append((app, budget_status(b, pods).disruptions_allowed))
        objects.append(b)
    queue_name = "q2" if reclaim else "q1"
    for i in range(preemptors):
        objects += [podgroup(f"hi{i}", queue=queue_name, priority_class="high"),
                    pod(f"hi{i}-0", group=f"hi{i}", cpu="1", priority=1000)]
    actions = "enqueue, reclaim" if reclaim else PREEMPT
    evicted = set(evictions(objects, "priority", "gang", "proportion", "pdb", actions=actions))
    event("evicted" if evicted else "nothing evicted")
    for app, allowed in limits:
        lost = sum(1 for p in pods if (p["metadata"].get("labels") or {}).get("app") == app
                   and f"default/{p['metadata']['name']}" in evicted)
        assert lost <= allowed
