"""predicates: node selector and affinity, taints, unschedulable nodes, host ports, pod (anti-)affinity."""

from __future__ import annotations

from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import session, task

NODES = [
    node("gpu", labels={"accel": "h100"}), node("cpu", labels={"accel": "none"}),
    node("tainted", taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]),
]


def placeable(objects: list[dict[str, object]], name: str, *plugins: str | dict[str, object]) -> list[str]:
    ssn = session(objects, *(plugins or ("predicates",)))
    t = task(ssn, name)
    return [ssn.nodes.names[j] for j in range(len(ssn.nodes)) if ssn.placer.static(t).mask[j]]


def test_node_selector_and_taints() -> None:
    objs = [*NODES, queue("default"), podgroup("g", queue="default"), pod("p", group="g", cpu="1")]
    assert placeable(objs, "p") == ["gpu", "cpu"]
    objs[-1]["spec"]["nodeSelector"] = {"accel": "h100"}
    assert placeable(objs, "p") == ["gpu"]
    objs[-1]["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    del objs[-1]["spec"]["nodeSelector"]
    assert placeable(objs, "p") == ["gpu", "cpu", "tainted"]


def test_taint_toleration_can_be_switched_off_by_argument() -> None:
    objs = [*NODES, queue("default"), podgroup("g", queue="default"), pod("p", group="g", cpu="1")]
    off = {"name": "predicates", "arguments": {"predicate.TaintTolerationEnable": False}}
    assert placeable(objs, "p", off) == ["gpu", "cpu", "tainted"]


def test_host_ports_and_anti_affinity_say_why() -> None:
    port = {"containerPort": 80, "hostPort": 8080}
    web = [pod(f"web-{i}", group="g", cpu="1", labels={"app": "web"}) for i in range(2)]
    web[0]["spec"]["nodeName"], web[0]["status"] = "cpu", {"phase": "Running"}
    for p in web:
        p["spec"]["containers"][0]["ports"] = [port]
    objs = [node("cpu"), queue("default"), podgroup("g", queue="default"), *web]
    ssn = session(objs, "predicates")
    assert ssn.placer.explain(task(ssn, "web-1")) == (
        "0/1 nodes are unavailable: 1 node(s) didn't have free ports for the requested pod ports.")
    for p in web:
        p["spec"]["containers"][0]["ports"] = []
        p["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    objs[0]["metadata"]["labels"] = {"kubernetes.io/hostname": "cpu"}
    ssn = session(objs, "predicates")
    # each node is charged to the first check it fails
    assert ssn.placer.explain(task(ssn, "web-1")) == (
        "0/1 nodes are unavailable: 1 node(s) didn't match pod anti-affinity rules.")
