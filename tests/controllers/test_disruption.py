"""PodDisruptionBudget status kept by the disruption controller, and budgets respected by the scheduler in
an embedded cluster (the budget's status and the scheduler's own count agree)."""

from __future__ import annotations

from pumice.runtime import Cluster
from pumice.scheduler import load_conf
from tests.builders import node, pdb, pod, podgroup, priority_class

from .workloads import deployment, run

PDBS = "poddisruptionbudgets.policy"


def test_status_follows_the_covered_pods() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), deployment(replicas=3, cpu="1"),
             pdb("web", match={"app": "web"}, min_available=2)])
    run(c, 10)
    status = c.store.get(PDBS, "default", "web")["status"]
    assert (status["expectedPods"], status["currentHealthy"], status["desiredHealthy"],
            status["disruptionsAllowed"]) == (3, 3, 2, 1)
    c.store.patch("deployments.apps", "default", "web", {"spec": {"replicas": 1}})
    run(c, 10)
    status = c.store.get(PDBS, "default", "web")["status"]
    assert (status["expectedPods"], status["disruptionsAllowed"]) == (1, 0)


def test_v1beta1_budgets_apply_and_get_a_status() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), deployment(replicas=4, cpu="1"),
             pdb("web", match={"app": "web"}, max_unavailable="50%", api_version="policy/v1beta1")])
    run(c, 10)
    assert c.store.get(PDBS, "default", "web")["status"]["disruptionsAllowed"] == 2


CONF = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: pdb
- plugins:
  - name: predicates
  - name: proportion
"""


def test_preemption_in_a_running_cluster_keeps_the_budget() -> None:
    """Four low-priority pods fill the node; a budget keeps three; four high-priority pods wait. Over many
    cycles only one low pod is ever evicted."""
    c = Cluster(conf=load_conf(CONF))
    objects = [node("n1", cpu="4", memory="8Gi"), priority_class("high", 1000), priority_class("low", 1),
               pdb("keep", match={"app": "lo"}, min_available=3)]
    for i in range(4):
        objects += [podgroup(f"lo{i}", queue="default", priority_class="low"),
                    pod(f"lo{i}", group=f"lo{i}", cpu="1", labels={"app": "lo"})]
        objects[-1]["spec"]["priorityClassName"] = "low"  # the priority admission fills spec.priority
    c.apply(objects)
    run(c, 5)
    assert all(c.store.get("pods", "default", f"lo{i}")["spec"].get("nodeName") for i in range(4))
    high = []
    for i in range(4):
        high += [podgroup(f"hi{i}", queue="default", priority_class="high"),
                 pod(f"hi{i}", group=f"hi{i}", cpu="1")]
        high[-1]["spec"]["priorityClassName"] = "high"
    c.apply(high)
    run(c, 60)
    remaining = [i for i in range(4) if _alive(c, f"lo{i}")]
    assert len(remaining) == 3
    assert c.store.get(PDBS, "default", "keep")["status"]["disruptionsAllowed"] == 0


def _alive(c: Cluster, name: str) -> bool:
    items, _ = c.store.list("pods", "default")
    return any(p["metadata"]["name"] == name and not p["metadata"].get("deletionTimestamp") for p in items)
