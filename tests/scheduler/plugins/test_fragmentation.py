"""fragmentation: the pod goes where it adds the least expected unusable GPU capacity."""

from __future__ import annotations

import numpy as np

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


def test_scores_are_normalized_over_the_candidates() -> None:
    ssn = session(cluster(), "deviceshare", "fragmentation")
    plugin = ssn.plugins["fragmentation"]
    scores = plugin.batch_score(task(ssn, "new"), np.array([0, 1, 2]))  # type: ignore[attr-defined]
    assert scores is not None
    assert scores.tolist()[1] == 100.0  # "half": the least increase
    assert min(scores.tolist()) == 0.0


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
