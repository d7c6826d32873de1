"""task-topology: a job's tasks packed together or kept apart by its PodGroup's annotations."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pumice.scheduler import load_conf, run_session
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text, session, task

SPEC = "volcano.sh/task-spec"
TOPOLOGY = {"name": "task-topology", "arguments": {"task-topology.weight": 10}}


def job(annotations: dict[str, str], roles: dict[str, int], *, nodes: int = 3, cpu: str = "4") -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [node(f"n{i}", cpu=cpu, memory="8Gi") for i in range(nodes)]
    group = podgroup("tf", queue="default", min_member=sum(roles.values()))
    group["metadata"]["annotations"] = annotations
    objects += [queue("default"), group]
    for role, count in roles.items():
        objects += [pod(f"tf-{role}-{i}", group="tf", cpu="1", memory="1Gi", annotations={SPEC: role})
                    for i in range(count)]
    return objects


def binds(objects: list[dict[str, Any]], *plugins: str | dict[str, Any]) -> dict[str, str]:
    return run_session(objects, load_conf(conf_text("gang", "predicates", *plugins))).binds


def test_affine_tasks_share_a_node_where_scoring_would_spread_them() -> None:
    objects = job({"volcano.sh/task-topology-affinity": "ps,worker"}, {"ps": 1, "worker": 2})
    spread = binds(objects, "nodeorder")
    assert len(set(spread.values())) == 3  # leastrequested alone spreads the three pods
    packed = binds(objects, "nodeorder", TOPOLOGY)
    assert len(packed) == 3 and len(set(packed.values())) == 1


def test_self_anti_affinity_keeps_a_tasks_pods_apart() -> None:
    objects = job({"volcano.sh/task-topology-anti-affinity": "worker"}, {"worker": 3})
    assert len(set(binds(objects, "binpack").values())) == 1  # binpack alone packs them
    assert len(set(binds(objects, "binpack", TOPOLOGY).values())) == 3


def test_running_pods_pull_their_bucket_to_their_node() -> None:
    objects = job({"volcano.sh/task-topology-affinity": "ps,worker"}, {"worker": 2})
    objects[5]["status"] = {"phase": "Running"}  # tf-worker-0 already runs on n2
    objects[5]["spec"]["nodeName"] = "n2"
    objects.append(pod("tf-ps-0", group="tf", cpu="1", memory="1Gi", annotations={SPEC: "ps"}))
    assert "n2" not in binds(objects, "nodeorder").values()  # leastrequested avoids the busy node
    placed = binds(objects, "nodeorder", TOPOLOGY)
    assert set(placed.values()) == {"n2"}


def test_bucketed_tasks_go_first_in_task_order() -> None:
    objects = job({"volcano.sh/task-topology-affinity": "ps,worker",
                   "volcano.sh/task-topology-task-order": "worker,ps"}, {"ps": 1, "worker": 1, "eval": 1})
    ssn = session(objects, "task-topology")
    ps, worker, ev = task(ssn, "tf-ps-0"), task(ssn, "tf-worker-0"), task(ssn, "tf-eval-0")
    assert ssn.task_order_less(ps, ev) and ssn.task_order_less(worker, ev)  # in a bucket before out of one
    assert ssn.task_order_less(worker, ps)  # the annotated task order inside the bucket


def test_a_malformed_annotation_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    objects = job({"volcano.sh/task-topology-anti-affinity": "worker,chief"}, {"worker": 3})
    with caplog.at_level(logging.WARNING):
        placed = binds(objects, "binpack", TOPOLOGY)
    assert len(set(placed.values())) == 1  # as without the plugin
    assert "'chief' does not exist" in caplog.text
