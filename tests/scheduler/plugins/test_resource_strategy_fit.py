"""resource-strategy-fit: per-resource MostAllocated / LeastAllocated scores, scarce resource
avoidance, and CPU and memory kept free per GPU."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import load_conf, run_session
from tests.builders import GPU, node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text, session, task

GPU_MOST = {"resourceStrategyFitWeight": 10,
            "resources": {GPU: {"type": "MostAllocated", "weight": 2}, "cpu": {"type": "LeastAllocated", "weight": 1}}}


def gpu_cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    """``busy`` runs a pod holding 2 of its 4 GPUs and 2 of 8 CPUs; ``idle`` runs nothing."""
    return [node("busy", cpu="8", memory="16Gi", gpus=4), node("idle", cpu="8", memory="16Gi", gpus=4),
            queue("default"),
            podgroup("run", queue="default", phase="Running"),
            pod("run-0", group="run", cpu="2", gpus=2, node="busy", phase="Running"),
            podgroup("j", queue="default"), *extra]


def rsf(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": "resource-strategy-fit", "arguments": arguments}


def test_gpu_most_allocated_outweighs_cpu_least_allocated() -> None:
    ssn = session(gpu_cluster(pod("p", group="j", cpu="1", gpus=1)), rsf(GPU_MOST))
    # busy: gpu 3/4 x 2 + cpu (8-3)/8 x 1 = 2.125; idle: 1/4 x 2 + 7/8 = 1.375; / 3 x 100 x 10
    assert ssn.placer.node_scores(task(ssn, "p")).tolist() == pytest.approx([2.125 / 3 * 1000, 1.375 / 3 * 1000])
    conf = load_conf(conf_text("gang", rsf(GPU_MOST)))
    outcome = run_session(gpu_cluster(pod("p", group="j", cpu="1", gpus=1)), conf)
    assert outcome.binds == {"default/p": "busy"}


def test_defaults_spread_by_cpu_and_memory() -> None:
    ssn = session(gpu_cluster(pod("p", group="j", cpu="1", memory="1Gi")), rsf({}))
    scores = ssn.placer.node_scores(task(ssn, "p")).tolist()
    assert scores[1] > scores[0]  # LeastAllocated cpu and memory: the idle node


def test_a_resource_that_does_not_fit_scores_zero_and_wildcards_match_by_longest_prefix() -> None:
    args = {"resources": {"nvidia.com/*": {"type": "MostAllocated", "weight": 1},
                          "nvidia.*": {"type": "LeastAllocated", "weight": 5}}}
    ssn = session(gpu_cluster(pod("p", group="j", gpus=3)), rsf(args))
    # busy would hold 5 of 4 GPUs: 0; idle: MostAllocated (nvidia.com/* is longer) 3/4 x 100 x 10
    assert ssn.placer.node_scores(task(ssn, "p")).tolist() == [0.0, 750.0]


def test_a_pods_own_strategy_annotation_wins() -> None:
    ann = {"volcano.sh/resource-strategy-scoring-type": "LeastAllocated",
           "volcano.sh/resource-strategy-weight": json.dumps({GPU: 1})}
    ssn = session(gpu_cluster(pod("p", group="j", cpu="1", gpus=1, annotations=ann)), rsf(GPU_MOST))
    assert ssn.placer.node_scores(task(ssn, "p")).tolist() == [250.0, 750.0]
    broken = {"volcano.sh/resource-strategy-scoring-type": "LeastAllocated"}
    ssn = session(gpu_cluster(pod("q", group="j", cpu="1", gpus=1, annotations=broken)), rsf(GPU_MOST))
    assert ssn.placer.node_scores(task(ssn, "q")).tolist() == [0.0, 0.0]


def test_sra_keeps_cpu_pods_off_gpu_nodes() -> None:
    sra = {"resourceStrategyFitWeight": 0, "sra": {"enable": True, "resources": GPU, "weight": 10}}
    objects = [node("gpu", cpu="8", memory="16Gi", gpus=4), node("cpu", cpu="8", memory="16Gi"), queue("default"),
               podgroup("j", queue="default"), pod("p", group="j", cpu="1")]
    ssn = session(objects, rsf(sra))
    assert ssn.placer.node_scores(task(ssn, "p")).tolist() == [0.0, 1000.0]
    assert run_session(objects, load_conf(conf_text("gang", rsf(sra)))).binds == {"default/p": "cpu"}


def test_bad_resource_patterns_are_said(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        session(gpu_cluster(pod("p", group="j", cpu="1")), rsf({"resources": {"*": {"type": "MostAllocated"}}}))
    assert "only one trailing '*' is supported" in caplog.text


PROPORTIONAL = {"proportional": {"enable": True, "resources": GPU,
                                 "resourceProportion": {f"{GPU}.cpu": 2, f"{GPU}.memory": 4}}}


def test_proportional_keeps_cpu_and_memory_for_each_idle_gpu() -> None:
    # 4 idle GPUs keep 8 CPUs and 16 GB: a cpu-only pod of 1 CPU does not fit an 8-CPU GPU node
    objects = [node("gpu", cpu="8", memory="64Gi", gpus=4), node("big", cpu="12", memory="64Gi", gpus=2),
               queue("default"),
               podgroup("j", queue="default"), pod("p", group="j", cpu="1", memory="1Gi"),
               podgroup("g", queue="default"), pod("g-0", group="g", cpu="1", gpus=1)]
    outcome = run_session(objects, load_conf(conf_text("gang", rsf(PROPORTIONAL), "predicates")))
    assert outcome.binds["default/p"] == "big"  # 12 - 1 >= 2 x 2: room is kept on big
    assert "default/g-0" in outcome.binds  # GPU pods are not held back


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(2, 16), st.integers(0, 4)), min_size=1, max_size=5),
       st.lists(st.integers(1, 4), min_size=1, max_size=8))
def test_cpu_pods_never_eat_the_cpu_kept_for_idle_gpus(nodes: list[tuple[int, int]], pods: list[int]) -> None:
    objects: list[dict[str, Any]] = [node(f"n{i}", cpu=str(c), memory="256Gi", gpus=g or None)
                                     for i, (c, g) in enumerate(nodes)]
    objects.append(queue("default"))
    for k, cpu in enumerate(pods):
        objects += [podgroup(f"j{k}", queue="default"), pod(f"p{k}", group=f"j{k}", cpu=str(cpu))]
    outcome = run_session(objects, load_conf(conf_text("gang", rsf(PROPORTIONAL), "predicates")))
    used = {f"n{i}": 0 for i in range(len(nodes))}
    for key, n in outcome.binds.items():
        used[n] += pods[int(key.split("/p")[1])]
    for i, (cpu, gpus) in enumerate(nodes):
        if gpus and used[f"n{i}"]:
            assert cpu - used[f"n{i}"] >= 2 * gpus, (nodes, pods, outcome.binds)
