"""conformance: critical system pods are never victims."""

from __future__ import annotations

from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import session, task


def test_critical_pods_are_left_out_of_victims() -> None:
    objects = [
        node("n1"), queue("default"),
        podgroup("sys", namespace="kube-system", queue="default", phase="Running"),
        podgroup("app", queue="default", phase="Running"),
        pod("dns", namespace="kube-system", group="sys", cpu="1", node="n1", phase="Running"),
        pod("agent", group="app", cpu="1", node="n1", phase="Running", priority=0),
        pod("web", group="app", cpu="1", node="n1", phase="Running"),
    ]
    objects[-2]["spec"]["priorityClassName"] = "system-node-critical"
    ssn = session(objects, "conformance", actions="preempt")
    dns, agent, web = task(ssn, "dns", "kube-system"), task(ssn, "agent"), task(ssn, "web")
    assert ssn.preemptable(web, [dns, agent, web]) == [web]
    assert ssn.reclaimable(web, [dns, agent]) == []
