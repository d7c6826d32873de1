"""The snapshot parses the replicas of one task once, and never mixes up pods that differ."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

from pumice.scheduler import build_cluster_state
from pumice.scheduler.snapshot import Catalog, make_task
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


def _variants() -> list[dict[str, Any]]:
    """Pods of one template that differ in one part each, in ways ``==`` alone would not tell apart
    (dict order, 1 / 1.0 / True, -0.0) or that sit outside the pod spec (queue, annotations, labels)."""
    base: list[tuple[str, dict[str, Any]]] = [
        ("plain", {}),
        ("sel-ab", {"nodeSelector": {"a": "1", "b": "2"}}),
        ("sel-ba", {"nodeSelector": {"b": "2", "a": "1"}}),
        ("tol-int", {"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 1}]}),
        ("tol-float", {"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 1.0}]}),
        ("tol-bool", {"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": True}]}),
        ("tsc-zero", {"topologySpreadConstraints": [{"maxSkew": 0.0, "topologyKey": "zone"}]}),
        ("tsc-negzero", {"topologySpreadConstraints": [{"maxSkew": -0.0, "topologyKey": "zone"}]}),
        ("aff-x", {"affinity": AFFINITY}),
        ("overhead", {"overhead": {"cpu": "100m"}}),
        ("init", {"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]}),
        ("ports", {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}},
                                   "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
        ("gpu-limit", {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"},
                                                                     "limits": {"volcano.sh/gpu-number": "1"}}}]}),
        # not plain JSON types: the key falls back to repr
        ("odd-sel", {"nodeSelector": OrderedDict(a="1")}),
        ("odd-sel-2", {"nodeSelector": OrderedDict(a="2")}),
    ]
    out = []
    for name, spec in base:
        for i in range(2):  # two replicas of each: they share a parse
            p = pod(f"{name}-t-{i}", group="g", cpu="1")
            p["spec"].update(copy.deepcopy(spec))
            out.append(p)
    for name, ann in (("gpu", {}), ("zone", {"volcano.sh/revocable-zone": "*"}),
                      ("strategy", {"volcano.sh/resource-strategy-weight": "3"}),
                      ("numa", {"volcano.sh/numa-topology-policy": "best-effort"}),
                      ("use", {"nvidia.com/use-gputype": "A100"}), ("nouse", {"nvidia.com/nouse-gputype": "T4"})):
        out += [pod(f"{name}-t-{i}", group="g", cpu="1", gpus=1, annotations=ann) for i in range(2)]
    out += [pod(f"q2-t-{i}", group="g2", cpu="1") for i in range(2)]  # the same template in another queue
    for i, app in enumerate(("x", "x", "y")):  # labels count with an affinity only
        out.append(pod(f"lab-t-{i}", group="g", cpu="1", labels={"app": app}))
        out[-1]["spec"]["affinity"] = copy.deepcopy(AFFINITY)
        out.append(pod(f"nolab-t-{i}", group="g", cpu="1", labels={"app": app}))
    out += [pod(f"ns2-t-{i}", namespace="other", group="g3", cpu="1") for i in range(2)]
    return out


def test_pods_share_a_parse_only_when_a_parse_of_their_own_gives_the_same() -> None:
    pods = _variants()
    objs = [node("n1"), queue("default", weight=1), queue("q2", weight=1), podgroup("g", queue="default"),
            podgroup("g2", queue="q2"), podgroup("g3", namespace="other", queue="default"), *pods]
    state = build_cluster_state(objs)
    tasks = {t.name: t for j in state.jobs.values() for t in j.tasks.values()}
    assert len(tasks) == len(pods)
    catalog = Catalog()
    for o in objs:
        catalog.add(o)
    for p in pods:  # each pod parsed on its own (no sharing) gives what the snapshot gave it
        got = tasks[p["metadata"]["name"]]
        own = make_task(state.space, p, catalog, got.job)
        assert own.shape == got.shape
        assert own.resreq.tobytes() == got.resreq.tobytes()
        assert own.init_resreq.tobytes() == got.init_resreq.tobytes()
        assert own.nonzero == got.nonzero and own.row.tobytes() == got.row.tobytes()
        assert (own.best_effort, own.anti_affinity, own.requested, own.gpu) == \
            (got.best_effort, got.anti_affinity, got.requested, got.gpu)
    # replicas share one parse (the same arrays), pods that differ in any part of it do not
    parses: dict[str, list[int]] = {}
    for t in tasks.values():
        parses.setdefault(t.name.split("-t-")[0], []).append(id(t.row))
    assert parses.pop("lab") == [id(tasks["lab-t-0"].row)] * 2 + [id(tasks["lab-t-2"].row)]
    assert parses.pop("nolab") == parses["plain"] + [id(tasks["plain-t-0"].row)]
    assert all(len(set(ids)) == 1 for ids in parses.values())
    assert len({ids[0] for ids in parses.values()} | {id(tasks["lab-t-0"].row), id(tasks["lab-t-2"].row)}) == \
        len(parses) + 2
    # the variants of the spec's selectors make shapes of their own (as a parse of their own does)
    assert len({tasks[f"{v}-t-0"].shape for v in ("plain", "sel-ab", "sel-ba", "tol-int", "tol-float", "tol-bool",
                                                   "tsc-zero", "tsc-negzero", "odd-sel", "odd-sel-2")}) == 10
    assert tasks["use-t-0"].gpu != tasks["nouse-t-0"].gpu
