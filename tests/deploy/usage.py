"""What each component reads and writes, recorded while the embedded cluster runs Volcano workloads.

Every store call is attributed to the component whose code made it (the innermost frame of
``pumice.scheduler``, ``pumice.controllers`` or ``pumice.nodes`` on the stack) and turned into what a real
API server would authorize: ``(apiGroup, resource[/subresource], verb)``. Reads the admission hook makes
while the store vets a write are the webhook server's, not the writer's (on a cluster the API server calls
the webhook). deploy/'s RBAC is checked against this record (``test_deploy.py``).
"""

from __future__ import annotations

import functools
import random
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice.api import load_file
from pumice.clock import VirtualClock
from pumice.runtime import Cluster, load_admission
from pumice.runtime.cluster import _Moments
from pumice.scheduler.conf import parse_conf
from pumice.store import MemoryStore
from tests.builders import queue

__all__ = ["COMPONENT_MODULES", "Rule", "Run", "record_usage", "workloads"]

Rule = tuple[str, str, str]  # (apiGroup, resource, verb)
#: Code that runs only on the embedded cluster: what it does is kube-controller-manager's on a real one (the
#: namespace lifecycle), wherever it sits on the stack.
EMBEDDED_ONLY = ("pumice.controllers.namespace",)
COMPONENT_MODULES = {
    "pumice.scheduler": "scheduler",
    "pumice.controllers": "controllers",
    "pumice.topology_discovery": "controllers",
    "pumice.nodes": "nodes",
    "pumice.admission": "admission",
}
#: Admission the embedded cluster does as kube-apiserver's own plugins (Priority): on a cluster the API server
#: makes these reads itself, not a component.
KUBE_APISERVER_MODULES = frozenset({"pumice.admission.priority"})


def _component() -> str | None:
    frame = sys._getframe(2)
    outer = frame
    while outer is not None:
        if outer.f_globals.get("__name__", "") in EMBEDDED_ONLY:
            return "kube-controller-manager"
        outer = outer.f_back
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module in KUBE_APISERVER_MODULES:
            return None
        for prefix, component in COMPONENT_MODULES.items():
            if module == prefix or module.startswith(prefix + "."):
                return component
        frame = frame.f_back
    return None  # the test itself, applying manifests as a user would


def _api(resource: str, subresource: str | None = None) -> tuple[str, str]:
    plural, _, group = resource.partition(".")
    return group, plural + (f"/{subresource}" if subresource else "")


@dataclass
class Run:
    """Manifests applied at the start, more applied ``later`` seconds in, on a scheduler configuration."""

    manifests: list[dict[str, Any]]
    later: list[dict[str, Any]] = field(default_factory=list)
    conf: str | None = None
    at: float = 60.0


def record_usage(runs: list[Run], until: float = 3000.0) -> dict[str, set[Rule]]:
    """The rules each component used over ``runs``, each on a fresh embedded cluster."""
    used: dict[str, set[Rule]] = defaultdict(set)
    for run in runs:
        for component, rules in _record(run, until).items():
            used[component] |= rules
    return dict(used)


def _record(run: Run, until: float) -> dict[str, set[Rule]]:
    used: dict[str, set[Rule]] = defaultdict(set)
    clock = VirtualClock()
    store = MemoryStore(clock=_Moments(clock), admission=load_admission(), rng=random.Random(0))

    def wrap(name: str, rules: Any) -> None:
        original = getattr(store, name)

        @functools.wraps(original)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            component = _component()
            if component is not None:
                for group, resource, verb in rules(*args, **kwargs):
                    used[component].add((group, resource, verb))
            return original(*args, **kwargs)

        setattr(store, name, recorded)

    wrap("get", lambda resource, *a, **k: [(*_api(resource), "get")])
    wrap("list", lambda resource, *a, **k: [(*_api(resource), "list")])
    wrap("watch", lambda resource, *a, **k: [(*_api(resource), "list"), (*_api(resource), "watch")])
    wrap("create", lambda resource, *a, **k: [(*_api(resource), "create")])
    wrap("update", lambda resource, *a, subresource=None, **k: [(*_api(resource, subresource), "update")])
    wrap("patch", lambda resource, *a, subresource=None, **k: [(*_api(resource, subresource), "patch")])
    wrap("delete", lambda resource, *a, **k: [(*_api(resource), "delete")])
    wrap("bind", lambda *a, **k: [("", "pods/binding", "create")])
    conf = parse_conf(run.conf) if run.conf else None
    # components made after the wrapping: their informers are recorded too; on a cluster Kubernetes' own
    # controllers run the Deployments, ReplicaSets, StatefulSets and batch Jobs (not pumice's embedded ones)
    cluster = Cluster(store, clock, conf, kubernetes_controllers=False)
    try:
        start = clock.now()
        cluster.apply(run.manifests)
        if run.later:
            cluster.run_until(start + run.at)
            cluster.apply(run.later)
        cluster.run_until(start + until)
    finally:
        cluster.close()
    return dict(used)


#: A scheduler that preempts and reclaims (Volcano's actions, a configuration users write).
EVICTING_CONF = """\
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def workloads(shared: Path) -> list[Run]:
    """Every path the components have on a cluster: the workload below on Volcano's default configuration,
    and a queue reclaiming its share from another (the scheduler evicts)."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    queues = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
               "spec": {"weight": 1, "reclaimable": True}} for name in ("qa", "qb")]

    def job(name: str, queue: str, replicas: int) -> dict[str, Any]:
        return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"queue": queue, "minAvailable": 1, "tasks": [{"name": "w", "replicas": replicas,
                         "template": {"metadata": {"annotations": {"pumice.io/duration": "1h"}}, "spec": {
                             "containers": [{"name": "c", "image": "busybox",
                                             "resources": {"requests": {"cpu": "1"}}}]}}}]}}

    reclaim = Run([node, *queues, job("greedy", "qa", 4)], later=[job("owed", "qb", 2)], conf=EVICTING_CONF)
    return [Run(workload(shared)), reclaim, job_kinds(node)]


def job_kinds(node: dict[str, Any]) -> Run:
    """The job plugins' objects (an MPI job scaled up later: its hosts ConfigMap follows; a Ray job's head
    Service) and a JobFlow of two JobTemplates whose Jobs are deleted once it succeeded."""
    def spec(**more: Any) -> dict[str, Any]:
        return {"minAvailable": 1, "tasks": [
            {"name": name, "replicas": replicas, "template": {
                "metadata": {"annotations": {"pumice.io/duration": "30s"}},
                "spec": {"containers": [{"name": name, "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
                         "restartPolicy": "Never"}}} for name, replicas in (("master", 1), ("worker", 1))], **more}

    def vcjob(name: str, **more: Any) -> dict[str, Any]:
        return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": name, "namespace": "default"}, "spec": spec(**more)}

    def template(name: str) -> dict[str, Any]:
        return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
                "metadata": {"name": name, "namespace": "default"}, "spec": spec()}

    flow = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "flow",
            "namespace": "default"}, "spec": {"jobRetainPolicy": "delete", "flows": [
                {"name": "first"}, {"name": "second", "dependsOn": {"targets": ["first"]}}]}}
    scaled = vcjob("mpi", plugins={"mpi": []})
    for task in scaled["spec"]["tasks"]:  # the tasks as the job webhook defaulted them, the workers scaled to 2
        task.update(minAvailable=1, maxRetry=3)
    scaled["spec"]["tasks"][1]["replicas"] = 2
    return Run([node, vcjob("mpi", plugins={"mpi": []}), vcjob("ray", plugins={"ray": []}), template("first"),
                template("second"), flow], later=[scaled], at=10.0)


def workload(shared: Path) -> list[dict[str, Any]]:
    """Volcano's quick-start plus what exercises every controller path: job plugins, lifecycle policies, a
    failing pod, TTL garbage collection, priority classes, plain pods, bus Commands for jobs and queues,
    hierarchical queues, a HyperNode."""
    objects = [o.to_dict() for f in sorted((shared / "scenarios" / "quickstart").glob("*.yaml"))
               for o in load_file(f)]
    container = {"name": "c", "image": "busybox", "command": ["sleep", "30"],
                 "resources": {"requests": {"cpu": "100m"}}}

    def job(name: str, queue: str = "default", **spec: Any) -> dict[str, Any]:
        annotations = spec.pop("annotations", {})
        return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"queue": queue, "tasks": [{"name": "w", "replicas": 2, "template": {
                    "metadata": {"annotations": annotations},
                    "spec": {"containers": [container], "restartPolicy": "Never"}}}], **spec}}

    objects += [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
         "value": 1000},
        queue("tenant", weight=1, deserved={"cpu": "4"}),
        queue("tenant-a", weight=1, parent="tenant", deserved={"cpu": "2"}),
        queue("closing", weight=1),
        job("plugins", priorityClassName="high", plugins={"svc": [], "ssh": [], "env": []},
            ttlSecondsAfterFinished=0),
        job("failing", maxRetry=1, policies=[{"event": "PodFailed", "action": "RestartJob"}],
            annotations={"pumice.io/fail": "true"}),
        job("tenant-job", queue="tenant-a"),
        job("aborted"),
        {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
         "metadata": {"name": "abort", "namespace": "default"}, "action": "AbortJob",
         "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "aborted", "uid": "x"}},
        {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
         "metadata": {"name": "close", "namespace": "default"}, "action": "CloseQueue",
         "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": "closing",
                    "uid": "x"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain", "namespace": "default"},
         "spec": {"schedulerName": "volcano", "containers": [container], "restartPolicy": "Never"}},
        {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "rack"},
         "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "k3d-.*"}}}]}},
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": "tick", "namespace":
                                                                                    "default"},
         "spec": {"schedule": "*/10 * * * *", "successfulJobsHistoryLimit": 0,
                  "jobTemplate": {"spec": {"tasks": [{"name": "t", "replicas": 1, "template": {
                      "spec": {"containers": [container], "restartPolicy": "Never"}}}]}}}},
    ]
    # the pods Kubernetes' ReplicaSet, StatefulSet and Job controllers would make: Volcano groups them under
    # their owner, sized by the owner's annotations
    for kind, api_version, name in (("ReplicaSet", "apps/v1", "web"), ("StatefulSet", "apps/v1", "db"),
                                    ("Job", "batch/v1", "pi")):
        labels = {"app": name}
        if kind != "Job":
            template = {"metadata": {"labels": labels}, "spec": {"containers": [container]}}
            objects.append({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "default"},
                            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}})
        objects.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"{name}-0", "namespace": "default", "labels": labels,
                                     "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": name,
                                                          "uid": f"uid-{name}", "controller": True}]},
                        "spec": {"schedulerName": "volcano", "containers": [container], "restartPolicy": "Never"}})
    return objects
