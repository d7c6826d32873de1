"""nodeorder's inter-pod affinity score (kube-scheduler's InterPodAffinity, ``podaffinity.weight``):
preferred podAffinity / podAntiAffinity terms of the incoming pod and the terms of the pods already
placed steer a pod towards (or away from) the nodes and zones of the pods they name."""

from __future__ import annotations

from typing import Any

import numpy as np

from pumice.scheduler import load_conf, run_session
from pumice.scheduler.plugins.nodeorder import NodeOrderPlugin
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text, session, task

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def nodes(zones: dict[str, str]) -> list[Obj]:
    return [node(name, cpu="8", memory="16Gi", labels={HOST: name, ZONE: zone}) for name, zone in zones.items()]


def running(name: str, on: str, app: str, cpu: str = "4", affinity: Obj | None = None) -> list[Obj]:
    """A running pod of ``app`` on node ``on`` (in its own PodGroup)."""
    p = pod(name, group=name, cpu=cpu, memory="1Gi", node=on, phase="Running", labels={"app": app})
    if affinity is not None:
        p["spec"]["affinity"] = affinity
    return [podgroup(name, queue="default", phase="Running"), p]


def waiting(name: str, app: str, affinity: Obj | None = None, replicas: int = 1) -> list[Obj]:
    """A job of ``replicas`` pending pods of ``app`` (1 CPU each), with ``affinity``."""
    objs: list[Obj] = [podgroup(name, queue="default", min_member=replicas)]
    for i in range(replicas):
        p = pod(f"{name}-{i}", group=name, cpu="1", memory="1Gi", labels={"app": app})
        if affinity is not None:
            p["spec"]["affinity"] = affinity
        objs.append(p)
    return objs


def prefer(kind: str, app: str, key: str, weight: int = 100) -> Obj:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": {
        "labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}}]}}


def binds(objs: list[Obj], **nodeorder_args: int) -> dict[str, str]:
    nodeorder: Obj = {"name": "nodeorder", "arguments": nodeorder_args} if nodeorder_args else {"name": "nodeorder"}
    conf = load_conf(conf_text("priority", "gang", "predicates", nodeorder))
    return {k.split("/")[1]: v for k, v in run_session(objs, conf).binds.items()}


BASE = [queue("default", weight=1), *nodes({"n1": "a", "n2": "a", "n3": "b", "n4": "b"})]


def test_a_pod_that_prefers_app_x_goes_to_the_node_that_runs_it() -> None:
    objs = [*BASE, *running("x", "n2", "x"), *waiting("web", "web", prefer("podAffinity", "x", HOST))]
    assert binds(objs) == {"web-0": "n2"}  # least requested alone prefers the idle nodes
    assert binds(objs, **{"podaffinity.weight": 0}) != {"web-0": "n2"}


def test_a_zone_term_prefers_every_node_of_the_zone() -> None:
    objs = [*BASE, *running("x", "n3", "x"), *waiting("web", "web", prefer("podAffinity", "x", ZONE))]
    assert binds(objs) == {"web-0": "n4"}  # zone b, and n4 is idler than n3


def test_preferred_anti_affinity_keeps_away_from_the_zone() -> None:
    objs = [*BASE, *running("x1", "n1", "x", cpu="1"), *running("big", "n3", "other", cpu="6"),
            *waiting("web", "web", prefer("podAntiAffinity", "x", ZONE))]
    assert binds(objs) == {"web-0": "n4"}  # zone a holds x: b, the idle node of it
    assert binds(objs, **{"podaffinity.weight": 0}) == {"web-0": "n2"}


def test_existing_pods_preferred_terms_draw_the_pods_they_name() -> None:
    objs = [*BASE, *running("cache", "n2", "cache", affinity=prefer("podAffinity", "web", HOST)),
            *waiting("web", "web")]
    assert binds(objs) == {"web-0": "n2"}


def test_existing_pods_required_affinity_counts_with_the_hard_weight() -> None:
    required = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}]}}
    objs = [*BASE, *running("cache", "n3", "cache", affinity=required), *waiting("web", "web")]
    assert binds(objs) == {"web-0": "n4"}


def test_replicas_that_prefer_each_other_land_together() -> None:
    objs = [*BASE, *waiting("web", "web", prefer("podAffinity", "web", HOST), replicas=4)]
    placed = binds(objs)
    assert len(placed) == 4 and len(set(placed.values())) == 1, placed
    spread = binds(objs, **{"podaffinity.weight": 0})
    assert len(set(spread.values())) == 4, spread  # least requested spreads them


def test_scores_are_weighted_terms_scaled_between_the_candidates() -> None:
    terms = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 30, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": HOST}},
        {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": ZONE}}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 20, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "y"}}, "topologyKey": HOST}}]}}
    objs = [*BASE, *running("x", "n1", "x"), *running("y", "n3", "y"), *waiting("web", "web", terms)]
    ssn = session(objs, "predicates", {"name": "nodeorder", "arguments": {"podaffinity.weight": 3,
                                                                           "tainttoleration.weight": 0}})
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrderPlugin)
    scores = plugin.preference_scores(task(ssn, "web-0"), np.arange(4))
    # raw: n1 30 + 10, n2 10, n3 -20, n4 0 -> (s + 20) * 100 / 60, truncated, x 3
    assert scores is not None and scores.tolist() == [300.0, 150.0, 0.0, 99.0]
