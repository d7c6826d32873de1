"""The load-aware descheduler: pods leave hot nodes, never breaking a gang or a PodDisruptionBudget."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pumice.api.disruption import desired_healthy
from pumice.clock import VirtualClock
from pumice.descheduler import DeschedulerPolicy, PolicyError, choose, parse_policy
from pumice.node_metrics import NodeMetrics
from pumice.nodes.usage import USAGE_ANNOTATION
from pumice.runtime.cluster import Cluster
from tests.builders import node, pdb, pod, podgroup, queue

NOW = 1_800_000_000.0
GI = 1024**3


def metrics(**cpu_percent: float) -> dict[str, NodeMetrics]:
    """Per node of 4 CPUs / 4Gi: its CPU usage in percent (memory 10%), measured a few seconds ago."""
    return {n: NodeMetrics(p * 40.0, 0.1 * 4 * GI, NOW - 5, 30.0) for n, p in cpu_percent.items()}


def hot_and_cool(*pods: dict[str, Any]) -> list[dict[str, Any]]:
    return [node("hot", cpu="4", memory="4Gi"), node("cool", cpu="4", memory="4Gi"), queue("default"), *pods]


def running(name: str, *, group: str | None = None, priority: int | None = None,
            labels: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    return pod(name, group=group, cpu="1", memory="256Mi", node="hot", phase="Running", priority=priority,
               labels=labels, **kw)


def test_a_pod_leaves_a_hot_node_for_a_cool_one() -> None:
    objects = hot_and_cool(podgroup("a", queue="default", phase="Running"), running("a-0", group="a"),
                           podgroup("b", queue="default", phase="Running"), running("b-0", group="b", priority=5))
    # hot at 90% > 80%: one pod of 1 CPU (25%) brings it under; the pod without a priority goes first
    assert choose(objects, NOW, metrics(hot=90, cool=5)) == [("default/a-0", "hot")]
    # nothing is overutilized, or nothing is underutilized: nothing moves
    assert choose(objects, NOW, metrics(hot=75, cool=5)) == []
    assert choose(objects, NOW, metrics(hot=90, cool=40)) == []


def test_stale_or_missing_metrics_move_nothing() -> None:
    objects = hot_and_cool(podgroup("a", queue="default", phase="Running"), running("a-0", group="a"))
    stale = {n: NodeMetrics(m.cpu, m.memory, NOW - 600, 30.0) for n, m in metrics(hot=95, cool=0).items()}
    assert choose(objects, NOW, stale) == []
    assert choose(objects, NOW, metrics(hot=95)) == []  # no measured underutilized node


def test_a_gang_at_its_minimum_keeps_its_pods_and_another_pod_goes() -> None:
    gang = [podgroup("g", queue="default", min_member=2, phase="Running"),
            running("g-0", group="g"), running("g-1", group="g")]
    loose = [podgroup("l", queue="default", phase="Running"), running("l-0", group="l", priority=100)]
    # the gang's pods come first in eviction order (no priority), but losing one would break it
    assert choose(hot_and_cool(*gang, *loose), NOW, metrics(hot=95, cool=0)) == [("default/l-0", "hot")]
    assert choose(hot_and_cool(*gang), NOW, metrics(hot=95, cool=0)) == []
    # a gang with a spare pod gives up one
    spare = [podgroup("g", queue="default", min_member=2, phase="Running"),
             *(running(f"g-{i}", group="g") for i in range(3))]
    assert len(choose(hot_and_cool(*spare), NOW, metrics(hot=99, cool=0))) == 1
    many = [podgroup("g", queue="default", min_member=1, phase="Running"),
            *(running(f"g-{i}", group="g") for i in range(3))]
    assert len(choose(hot_and_cool(*many), NOW, metrics(hot=99, cool=0))) == 1  # 99% - 25% < 80%


def test_a_pod_whose_budget_forbids_it_stays() -> None:
    web = [podgroup(f"w{i}", queue="default", phase="Running") for i in range(2)]
    web += [running(f"w{i}-0", group=f"w{i}", labels={"app": "web"}) for i in range(2)]
    other = [podgroup("o", queue="default", phase="Running"), running("o-0", group="o", priority=100)]
    budget = pdb("web", match={"app": "web"}, min_available=2)
    assert choose(hot_and_cool(*web, *other, budget), NOW, metrics(hot=95, cool=0)) == [("default/o-0", "hot")]
    loose = pdb("web", match={"app": "web"}, min_available=1)
    chosen = choose(hot_and_cool(*web, loose), NOW, metrics(hot=95, cool=0))
    assert len(chosen) == 1 and chosen[0][0].startswith("default/w")


def test_default_evictor_rules() -> None:
    daemon = running("d-0", ownerReferences=None)
    daemon["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "d", "apiVersion": "apps/v1", "uid": "u"}]
    critical = running("c-0", priority=20000)
    system = running("s-0", namespace="kube-system")
    assert choose(hot_and_cool(daemon, critical, system), NOW, metrics(hot=99, cool=0)) == []


def test_policy_file_in_volcanos_format() -> None:
    doc = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": [{
        "name": "default",
        "pluginConfig": [{"name": "DefaultEvictor", "args": {"priorityThreshold": {"value": 500}}},
                         {"name": "LoadAware", "args": {"evictableNamespaces": {"exclude": ["ops"]},
                                                         "metrics": {"type": None, "address": None},
                                                         "targetThresholds": {"cpu": 70, "memory": 90},
                                                         "thresholds": {"cpu": 20, "memory": 20}}}],
        "plugins": {"balance": {"enabled": ["LoadAware"]}}}]}
    policy = parse_policy(doc)
    assert policy.thresholds == (20, 20) and policy.target_thresholds == (70, 90)
    assert policy.priority_threshold == 500 and policy.excluded_namespaces == {"ops"}
    bad = dict(doc, profiles=[dict(doc["profiles"][0], plugins={"balance": {"enabled": ["HighNodeUtilization"]}})])
    with pytest.raises(PolicyError, match="LoadAware only"):
        parse_policy(bad)
    wrong = {**doc, "profiles": [{**doc["profiles"][0], "pluginConfig": [
        {"name": "LoadAware", "args": {"thresholds": {"cpu": 90}, "targetThresholds": {"cpu": 80}}}]}]}
    with pytest.raises(PolicyError, match="over its targetThreshold"):
        parse_policy(wrong)


def test_embedded_cluster_descheduler_moves_a_pod_off_the_hot_node() -> None:
    """End to end: a hot node's pods (declared usage above requests) get descheduled; the replacement pod a
    Deployment-like owner would create is not modelled here: the evicted pod is gone, with an event."""
    clock = VirtualClock()
    cluster = Cluster(clock=clock, descheduler=DeschedulerPolicy(interval=120.0))
    cluster.apply([node("hot", cpu="4", memory="4Gi", capacity=True), node("cool", cpu="4", memory="4Gi",
                                                                              capacity=True)])
    pods = [pod(f"p{i}", cpu="1", memory="512Mi", node="hot", scheduler=None,
                annotations={USAGE_ANNOTATION: "cpu=1.2"}) for i in range(3)]
    cluster.apply(pods)
    cluster.run_until(clock.now() + 600)
    names = {p["metadata"]["name"] for p in cluster.store.list("pods")[0]}
    assert len(names) == 2  # 3 x 1.2 CPU = 90% > 80%: one goes, 65% stays
    events = [e for e in cluster.store.list("events")[0] if e.get("reason") == "Descheduled"]
    assert len(events) == 1 and "hot" in events[0]["message"]
    assert cluster.descheduler is not None and len(cluster.descheduler.evicted) == 1
    cluster.close()


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_never_below_min_available_nor_over_a_budget(data: st.DataObject) -> None:
    n_nodes = data.draw(st.integers(2, 4))
    objects: list[dict[str, Any]] = [queue("default")]
    objects += [node(f"n{j}", cpu="4", memory="4Gi") for j in range(n_nodes)]
    gangs: dict[str, tuple[int, int]] = {}  # name -> (members running, minMember)
    budgets: dict[str, tuple[int, int]] = {}  # label -> (pods covered, minAvailable)
    for g in range(data.draw(st.integers(1, 5))):
        size = data.draw(st.integers(1, 4))
        minimum = data.draw(st.integers(1, size))
        label = data.draw(st.sampled_from(["a", "b", "c"]))
        gangs[f"g{g}"] = (size, minimum)
        objects.append(podgroup(f"g{g}", queue="default", min_member=minimum, phase="Running"))
        for i in range(size):
            where = data.draw(st.sampled_from([0, 0, 0, *range(n_nodes)]))  # mostly on the hot node n0
            prio = data.draw(st.one_of(st.none(), st.integers(0, 50)))
            objects.append(pod(f"g{g}-{i}", group=f"g{g}", cpu="500m", memory="256Mi", node=f"n{where}",
                               phase="Running", priority=prio, labels={"app": label}))
            count, _ = budgets.get(label, (0, 0))
            budgets[label] = (count + 1, 0)
    for label, (count, _) in list(budgets.items()):
        if data.draw(st.booleans()):
            keep = data.draw(st.integers(0, count))
            budgets[label] = (count, keep)
            objects.append(pdb(f"pdb-{label}", match={"app": label}, min_available=keep))
        else:
            del budgets[label]
    usage = {f"n{j}": data.draw(st.floats(0, 100)) for j in range(n_nodes)}
    usage["n0"] = data.draw(st.floats(81, 100))  # one hot node, one cool one: evictions are wanted
    usage["n1"] = data.draw(st.floats(0, 29))
    chosen = choose(objects, NOW, metrics(**usage))
    evicted = [key.split("/", 1)[1] for key, _ in chosen]
    assert len(evicted) == len(set(evicted))
    event(f"evicted {min(len(evicted), 3)}{'+' if len(evicted) > 3 else ''}")
    for name, (size, minimum) in gangs.items():
        gone = sum(1 for e in evicted if e.startswith(f"{name}-"))
        if minimum > 1:  # a gang (minAvailable 1: single pods, free to move)
            assert size - gone >= minimum or gone == 0, (name, size, minimum, gone)
    labels = {f"g{g}-{i}": p["metadata"]["labels"]["app"] for p in objects if p.get("kind") == "Pod"
              for g, i in [p["metadata"]["name"][1:].split("-")]}
    for label, (count, keep) in budgets.items():
        gone = sum(1 for e in evicted if labels[e] == label)
        assert count - gone >= desired_healthy({"spec": {"minAvailable": keep}}, count), (label, count, keep, gone)


def test_cli_refuses_bad_descheduler_options(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from pumice.cli.main import app

    runner = CliRunner()
    result = runner.invoke(app, ["run", "--components", "descheduler", "--descheduling-interval", "soon"])
    assert result.exit_code == 2 and "--descheduling-interval" in result.output
    bad = tmp_path / "policy.yaml"
    bad.write_text("kind: DeschedulerPolicy\nprofiles: []\n")
    result = runner.invoke(app, ["run", "--components", "descheduler", "--descheduler-policy", str(bad)])
    assert result.exit_code == 2 and str(bad) in result.output and "exactly one profile" in result.output
    result = runner.invoke(app, ["up", "--descheduler-policy", str(bad)])
    assert result.exit_code == 2 and "go with --descheduler" in result.output


def test_run_refuses_simulated_metrics_without_fake_nodes(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from pumice.cli.main import app

    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: usage\nmetrics:\n  type: simulated\n")
    result = CliRunner().invoke(app, ["run", "--components", "scheduler", "--config", str(conf)])
    assert result.exit_code == 2 and "metrics.type simulated" in result.output
