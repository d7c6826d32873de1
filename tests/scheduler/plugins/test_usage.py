"""usage: nodes filtered and scored by their measured usage (small clusters whose answer is known)."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api.arguments import Arguments
from pumice.node_metrics import NodeMetrics, NodeUsage
from pumice.scheduler import build_cluster_state, load_conf, run_session
from pumice.scheduler.conf import ConfError
from pumice.scheduler.plugins.usage import CPU_OVER, UsagePlugin
from tests.builders import node, pod, podgroup
from tests.builders import queue as make_queue
from tests.scheduler.plugins.support import conf_text

NOW = 1_800_000_000.0
GI = 1024**3


def cluster(*nodes: str, extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Nodes of 10 CPUs and 10Gi, a queue, and one waiting pod of 1 CPU / 1Gi in its own group."""
    return [*(node(n, cpu="10", memory="10Gi", capacity=True) for n in nodes), make_queue("default"),
            podgroup("w", queue="default", min_member=1), pod("w-0", group="w", cpu="1", memory="1Gi"),
            *(extra or [])]


def metrics(**percent: tuple[float, float] | tuple[float, float, float]) -> NodeUsage:
    """Per node (cpu %, memory %[, age in seconds]) of 10 CPUs / 10Gi, measured at NOW - age."""
    out = {}
    for name, p in percent.items():
        age = p[2] if len(p) == 3 else 10.0
        out[name] = NodeMetrics(p[0] * 100.0, p[1] / 100.0 * 10 * GI, NOW - age, 30.0)
    return NodeUsage(out, 30.0, 1)


def schedule(objects: list[dict[str, Any]], usage: NodeUsage | None, *plugins: str | dict[str, Any]) -> Any:
    state = build_cluster_state(objects)
    state.node_usage = usage
    return run_session(state, load_conf(conf_text(*plugins)), now=NOW)


def test_a_node_over_the_cpu_threshold_is_filtered() -> None:
    out = schedule(cluster("hot", "cool"), metrics(hot=(90, 10), cool=(50, 10)), "gang", "usage")
    assert out.binds == {"default/w-0": "cool"}


def test_a_pod_whose_only_node_is_hot_waits_with_volcanos_reason() -> None:
    out = schedule(cluster("hot"), metrics(hot=(10, 85)), "gang", "usage")
    assert out.binds == {}
    assert "memory load of the node exceeds the upper limit" in out.pending_pods["default/w-0"]
    out = schedule(cluster("hot"), metrics(hot=(95, 10)), "gang", "usage")
    assert CPU_OVER in out.pending_pods["default/w-0"]


def test_thresholds_are_arguments() -> None:
    usage = {"name": "usage", "arguments": {"thresholds": {"cpu": 95, "mem": 95}}}
    out = schedule(cluster("hot"), metrics(hot=(90, 90)), "gang", usage)
    assert out.binds == {"default/w-0": "hot"}


def test_score_prefers_the_cooler_node() -> None:
    for hot, cool in (("a", "b"), ("b", "a")):
        usage = metrics(**{hot: (70, 60), cool: (20, 30)})
        out = schedule(cluster("a", "b"), usage, "gang", "usage")
        assert out.binds == {"default/w-0": cool}


def test_stale_metrics_are_ignored() -> None:
    stale = metrics(hot=(99, 99, 301.0))
    assert schedule(cluster("hot"), stale, "gang", "usage").binds == {"default/w-0": "hot"}
    # and a stale reading does not make a node look cool either: a fresh middling node is not preferred
    # over a node whose (stale) reading says idle; both score as Volcano scores them (stale: 0)
    out = schedule(cluster("a", "b"), metrics(a=(0, 0, 600.0), b=(10, 10)), "gang", "usage")
    assert out.binds == {"default/w-0": "b"}


def test_without_metrics_the_plugin_neither_filters_nor_scores() -> None:
    out = schedule(cluster("a"), None, "gang", "usage")
    assert out.binds == {"default/w-0": "a"}


def test_pods_the_metrics_have_not_seen_count_as_a_shadow_estimate() -> None:
    # equal measured usage; on ``a`` a pod of 6 CPUs / 6Gi is bound but not running yet: b is preferred
    bound = [podgroup("x", queue="default", min_member=1, phase="Running"),
             pod("x-0", group="x", cpu="6", memory="6Gi", node="a", phase="Pending")]
    out = schedule(cluster("a", "b", extra=bound), metrics(a=(20, 20), b=(20, 20)), "gang", "usage")
    assert out.binds == {"default/w-0": "b"}
    # a pod running for long is in the measured usage already: no shadow, the names decide nothing
    running = [podgroup("x", queue="default", min_member=1, phase="Running"),
               pod("x-0", group="x", cpu="6", memory="6Gi", node="b", phase="Running",
                   status={"phase": "Running", "startTime": "2020-01-01T00:00:00Z"})]
    out = schedule(cluster("a", "b", extra=running), metrics(a=(30, 30), b=(20, 20)), "gang", "usage")
    assert out.binds == {"default/w-0": "b"}


def test_replicas_placed_in_one_session_spread_by_their_shadow() -> None:
    objects = [node("a", cpu="10", memory="10Gi", capacity=True), node("b", cpu="10", memory="10Gi", capacity=True),
               make_queue("default"), podgroup("w", queue="default", min_member=1),
               *(pod(f"w-{i}", group="w", cpu="2", memory="2Gi") for i in range(4))]
    out = schedule(objects, metrics(a=(10, 10), b=(10, 10)), "gang", "usage")
    placed = sorted(out.binds.values())
    assert placed == ["a", "a", "b", "b"]


def test_volcano_defaults_and_out_of_range_arguments() -> None:
    plugin = UsagePlugin(Arguments("plugin usage", {}))
    assert (plugin.usage_weight, plugin.cpu_weight, plugin.memory_weight) == (5, 1, 1)
    assert (plugin.cpu_threshold, plugin.memory_threshold) == (80.0, 80.0)
    assert (plugin.request_ratio, plugin.burst_ratio, plugin.risk_threshold, plugin.risk_factor) == (0.7, 0, 0.6, 1.2)
    assert (plugin.be_cpu, plugin.be_memory) == (250.0, 200 * 1024 * 1024)
    odd = UsagePlugin(Arguments("plugin usage", {"usage.weight": -1, "thresholds": {"cpu": 120, "mem": 50},
                                                 "estimator": {"risk_factor": 0.5, "be_cpu": "1", "be_mem": 100}}))
    assert (odd.usage_weight, odd.cpu_threshold, odd.memory_threshold, odd.risk_factor) == (5, 80.0, 50.0, 1.2)
    assert (odd.be_cpu, odd.be_memory) == (1000.0, 100 * 1024 * 1024)


def _conf(metrics_section: str) -> str:
    return "actions: allocate\ntiers:\n- plugins:\n  - name: usage\nmetrics:\n" + metrics_section


def test_metrics_section_is_parsed_and_wrong_values_are_errors() -> None:
    conf = load_conf(_conf("  type: kubernetes\n  interval: 1m\n"))
    assert conf.metrics is not None and (conf.metrics.type, conf.metrics.interval) == ("kubernetes", 60.0)
    assert load_conf("actions: allocate\ntiers: []\n").metrics is None
    for bad, said in (("  type: graphite\n", "unknown metrics type 'graphite'"),
                      ("  type: prometheus\n  address: http://p:9090\n", "not supported by pumice"),
                      ("  type: simulated\n  interval: soon\n", "metrics.interval"),
                      ("  type: simulated\n  colour: red\n", "unknown key 'colour'"),
                      ("  type: simulated\n  tls.insecureSkipVerify: 'true'\n", "has no use for it")):
        with pytest.raises(ConfError, match=said):
            load_conf(_conf(bad))
