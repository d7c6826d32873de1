"""The snapshot parses the replicas of one task once, and never mixes up pods that differ."""

from __future__ import annotations

from pumice.scheduler import build_cluster_state
from tests.builders import node, pod, podgroup, queue

AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def test_replicas_share_their_parse_and_pods_that_differ_do_not() -> None:
    objs = [node("n1"), queue("default", weight=1), podgroup("g", queue="default", min_member=1),
            pod("a-0", group="g", cpu="1"), pod("a-1", group="g", cpu="1"), pod("b-0", group="g", cpu="2"),
            pod("d-0", group="g", cpu="1", labels={"app": "x"}), pod("d-1", group="g", cpu="1", labels={"app": "y"})]
    for o in objs[-2:]:
        o["spec"]["affinity"] = AFFINITY
    state = build_cluster_state(objs)
    tasks = {t.name: t for j in state.jobs.values() for t in j.tasks.values()}
    assert tasks["a-0"].shape is tasks["a-1"].shape
    assert tasks["a-0"].resreq[0] == 1000 and tasks["b-0"].resreq[0] == 2000
    assert tasks["b-0"].shape != tasks["a-0"].shape
    assert tasks["d-0"].shape != tasks["d-1"].shape  # labels count once a pod has an affinity
    assert tasks["d-0"].anti_affinity and not tasks["a-0"].anti_affinity
    assert tasks["a-1"].key == "default/a-1" and tasks["a-1"].requested == ((0, 1000.0),)
