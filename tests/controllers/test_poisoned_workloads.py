"""Poisoned workload objects (Deployments, StatefulSets, batch/v1 Jobs, CronJobs, JobFlows, ResourceQuotas of a
shape their controller cannot read: written to the store past admission, as an old data directory or a ``/status``
write can hold them) are skipped with one warning; every good workload beside them still runs its pods."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from pumice.api.wellformed import problem
from pumice.runtime import Cluster
from pumice.store import MemoryStore
from tests.builders import node

from .workloads import batch_job, deployment, phase, pods_of, run, statefulset

Obj = dict[str, Any]

RESOURCES = {"Deployment": "deployments.apps", "StatefulSet": "statefulsets.apps", "Job": "jobs.batch",
             "CronJob": "cronjobs.batch.volcano.sh", "JobFlow": "jobflows.flow.volcano.sh",
             "ResourceQuota": "resourcequotas"}


def _with(obj: Obj, name: str, **spec: Any) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"]["name"] = name
    out["metadata"]["namespace"] = "default"
    out["spec"].update(spec)
    return out


def _cronjob(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"tasks": [
                {"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}}}]}},
                     **spec}}


def _jobflow(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"flows": [{"name": "a"}], **spec}}


#: Each crashed its controller (and with it every other workload's) before the check: ValueError from int(),
#: AttributeError from .get() on a string or a list.
POISONED = [
    _with(deployment("bad-replicas"), "bad-replicas", replicas="three"),
    _with(deployment("bad-template"), "bad-template", template="x"),
    _with(deployment("bad-selector"), "bad-selector", selector="x"),
    _with(statefulset("bad-sts"), "bad-sts", replicas="x"),
    _with(statefulset("bad-sts-template"), "bad-sts-template", template=["x"]),
    _with(batch_job("bad-parallelism"), "bad-parallelism", parallelism="x"),
    _with(batch_job("bad-job-template"), "bad-job-template", template="x"),
    _with(batch_job("bad-backoff"), "bad-backoff", backoffLimit="x"),
    _cronjob("bad-schedule", schedule=5),
    _jobflow("bad-flows", flows="x"),
    _jobflow("bad-depends", flows=[{"name": 5, "dependsOn": "x"}]),
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "bad-quota", "namespace": "default"},
     "spec": {"hard": "x"}},  # the quota controller and the scheduler's resourcequota plugin read it
]


@pytest.mark.parametrize("obj", POISONED, ids=[o["metadata"]["name"] for o in POISONED])
def test_the_check_names_the_field(obj: Obj) -> None:
    wrong = problem(obj)
    assert wrong is not None and "spec" in wrong, wrong


def test_good_workloads_run_among_poisoned_ones(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()  # as a data directory written before a check existed holds them: past admission
    for obj in POISONED:
        store.create(RESOURCES[obj["kind"]], obj)
    c = Cluster(store)
    good = [deployment("web", replicas=2), statefulset("db", replicas=2), batch_job("pi", completions=2,
                                                                                   parallelism=2, duration="600")]
    with caplog.at_level(logging.WARNING, logger="pumice.controllers"):
        c.apply([node("n1", cpu="64", memory="128Gi"), *good])
        run(c, 30)
        run(c, 30)
    for prefix in ("web-", "db-", "pi-"):
        pods = pods_of(c.store, prefix)
        assert len(pods) == 2 and all(phase(p) == "Running" for p in pods), (prefix, [phase(p) for p in pods])
    for obj in POISONED:
        assert not pods_of(c.store, obj["metadata"]["name"] + "-")
        said = [r.getMessage() for r in caplog.records
                if r.name == "pumice.controllers" and f"/{obj['metadata']['name']}:" in r.getMessage()]
        assert len(said) == 1, (obj["metadata"]["name"], said)  # reported once, however often it is read
