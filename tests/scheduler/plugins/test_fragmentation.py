"""fragmentation: the pod goes where it adds the least expected unusable GPU capacity."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.gpus import GPU_INDEX
from pumice.scheduler.plugins.fragmentation import expected_fragment
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import session, task
from tests.scheduler.plugins.test_deviceshare import decide, gpu_node, share_pod


def running(name: str, node_name: str, gpu: int, milli: int | None = None, whole: int | None = None) -> list:
    p = share_pod(name, milli, node=node_name, phase="Running", annotations={GPU_INDEX: str(gpu)}) if milli \
        else pod(name, group=name, cpu="1", gpus=whole, node=node_name, phase="Running",
                 annotations={GPU_INDEX: str(gpu)})
    return [podgroup(name, queue="default", phase="Running"), p]


def cluster() -> list:
    # "idle" has one idle GPU, "half" one GPU half used; whole-GPU pods run elsewhere ("big"): the mix is
    # mostly whole GPUs, so half a free GPU is fragment for most pods
    objs = [gpu_node("idle", 1), gpu_node("half", 1), gpu_node("big", 4, cpu="64"), queue("default")]
    objs += running("h", "half", 0, milli=500)
    for i in range(3):
        objs += running(f"w{i}", "big", i, whole=1)
    objs += [podgroup("new", queue="default", phase="Inqueue"), share_pod("new", 500)]
    return objs


def test_a_share_fills_the_half_used_gpu_not_the_idle_one() -> None:
    out = decide(cluster(), "deviceshare", "fragmentation")
    assert out.binds == {"default/new": "half"}
    # Volcano's default order (least requested) spreads it onto the idle GPU instead
    assert decide(cluster(), "deviceshare", "nodeorder").binds == {"default/new": "idle"}


def test_scores_are_on_a_fixed_scale_and_a_node_s_own() -> None:
    ssn = session(cluster(), "deviceshare", "fragmentation")
    plugin = ssn.plugins["fragmentation"]
    new = task(ssn, "new")
    scores = plugin.dynamic_score(new, NodeView.of(ssn.nodes))  # type: ignore[attr-defined]
    assert scores is not None
    names = ssn.nodes.names
    assert names[int(np.argmax(scores))] == "half"  # the least increase
    # "big" (its fourth GPU idle, three held whole): a share there makes that GPU partly used,
    # which the whole-GPU pods of the mix cannot use: it scores below 50 (the fragment rises)
    assert scores[names.index("big")] < 50.0 < scores[names.index("half")]
    # a node's score is its own: the same on any subset of the nodes
    for j in range(len(names)):
        alone = plugin.dynamic_score(new, NodeView.of(ssn.nodes, np.array([j])))  # type: ignore[attr-defined]
        assert alone.tolist() == [scores[j]]


def _gpu_cluster(rng: random.Random) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [queue("default")]
    n = rng.randint(2, 6)
    for i in range(n):
        objs.append(gpu_node(f"n{i}", rng.choice([1, 2, 4, 8]), cpu=str(rng.choice([8, 16, 64]))))
    for j in range(rng.randint(0, 6)):  # running shares on some GPUs
        i = rng.randrange(n)
        gpus = int(objs[1 + i]["status"]["allocatable"]["nvidia.com/gpu"])
        objs += running(f"r{j}", f"n{i}", rng.randrange(gpus), milli=rng.choice([100, 250, 500]))
    for g in range(rng.randint(1, 5)):
        replicas = rng.randint(1, 6)
        objs.append(podgroup(f"g{g}", queue="default", phase="Inqueue", min_member=replicas))
        whole = rng.random() < 0.5
        milli = rng.choice([200, 300, 500, 700])
        gpus = rng.choice([1, 2])
        for k in range(replicas):
            if whole:
                objs.append(pod(f"g{g}-{k}", group=f"g{g}", cpu="1", gpus=gpus))
            else:
                p = share_pod(f"g{g}-{k}", milli)
                p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = f"g{g}"
                objs.append(p)
    return objs


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6))
def test_replicas_laddered_decide_as_one_by_one(seed: int) -> None:
    """Replicas of one shape share a ladder whose rows hold the replicas before them: the binds and the
    GPUs chosen are exactly those of scoring every replica on every node."""
    from pumice.scheduler.framework import placement

    objs = _gpu_cluster(random.Random(seed))
    fast = decide(copy.deepcopy(objs), "deviceshare", "fragmentation")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(placement._Ladder, "pick", lambda self: None)
        slow = decide(copy.deepcopy(objs), "deviceshare", "fragmentation")
    assert fast.binds == slow.binds
    assert ({k: a.get(GPU_INDEX) for k, a in fast.pod_annotations.items()}
            == {k: a.get(GPU_INDEX) for k, a in slow.pod_annotations.items()})
    assert any(GPU_INDEX in a for a in fast.pod_annotations.values()) or not fast.binds


def test_gpus_are_taken_best_fit_whichever_plugin_is_listed_first() -> None:
    # one node: GPU 0 idle, GPU 1 half used; a 300-milli share goes on GPU 1 (the fullest that holds it)
    objs = [gpu_node("n", 2), queue("default"), *running("h", "n", 1, milli=500),
            podgroup("new", queue="default", phase="Inqueue"), share_pod("new", 300)]
    for order in (("deviceshare", "fragmentation"), ("fragmentation", "deviceshare")):
        out = decide(copy.deepcopy(objs), *order)
        assert out.pod_annotations["default/new"][GPU_INDEX] == "1", order
    assert decide(copy.deepcopy(objs), "deviceshare").pod_annotations["default/new"][GPU_INDEX] == "0"


def test_expected_fragment_by_hand() -> None:
    # one node, two GPUs with 300 and 1000 milli free; shapes: 500-milli shares (p .5) and 1 whole GPU (p .5)
    free = np.array([[300.0, 1000.0]])
    cap = np.array([[1000.0, 1000.0]])
    got = expected_fragment(free, cap, np.array([8000.0]), np.array([500.0, 0.0]), np.array([0.0, 1.0]),
                            np.array([0.0, 0.0]), np.array([0.5, 0.5]))
    # shares: 300 is too small (fragment 300); whole: the partly used GPU's 300 is fragment
    assert got.tolist() == [300.0]
    # a node whose CPU is gone: every free GPU is fragment
    got = expected_fragment(free, cap, np.array([0.0]), np.array([500.0]), np.array([0.0]), np.array([100.0]),
                            np.array([1.0]))
    assert got.tolist() == [1300.0]


def test_cpu_pods_stay_off_gpu_nodes_when_they_would_strand_gpus() -> None:
    objs = [gpu_node("gpu", 1, cpu="2"), node("cpu", cpu="2"), queue("default")]
    objs += running("w", "gpu", 0, milli=200)
    objs += [podgroup("c", queue="default", phase="Inqueue"), pod("c", group="c", cpu="1850m")]
    assert decide(objs, "deviceshare", "fragmentation").binds == {"default/c": "cpu"}
