"""Workload objects and a recorder for the workload controller tests (embedded ``Cluster`` on a virtual clock)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pumice.runtime import Cluster
from pumice.store import Store

Obj = dict[str, Any]


def template(image: str = "nginx", *, cpu: str = "1", queue_name: str | None = None,
             labels: dict[str, str] | None = None, duration: str | None = None, restart: str | None = None,
             fail: bool = False) -> Obj:
    notes: dict[str, str] = {}
    if queue_name:
        notes["scheduling.volcano.sh/queue-name"] = queue_name
    if duration:
        notes["pumice.io/duration"] = duration
    if fail:
        notes["pumice.io/fail"] = "true"
    meta: Obj = {"labels": labels or {"app": "web"}}
    if notes:
        meta["annotations"] = notes
    spec: Obj = {"schedulerName": "volcano",
                 "containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": meta, "spec": spec}


def deployment(name: str = "web", replicas: int = 3, *, image: str = "nginx", strategy: Obj | None = None,
               annotations: dict[str, str] | None = None, **kw: Any) -> Obj:
    spec: Obj = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": template(image, labels={"app": name}, **kw)}
    if strategy is not None:
        spec["strategy"] = strategy
    meta: Obj = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def statefulset(name: str = "db", replicas: int = 3, *, policy: str | None = None, image: str = "db",
                **kw: Any) -> Obj:
    spec: Obj = {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": template(image, labels={"app": name}, **kw)}
    if policy:
        spec["podManagementPolicy"] = policy
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name}, "spec": spec}


def batch_job(name: str = "pi", *, completions: int | None = 3, parallelism: int = 2, backoff: int | None = None,
              duration: str = "60", fail: bool = False, indexed: bool = False, **extra: Any) -> Obj:
    spec: Obj = {"parallelism": parallelism,
                 "template": template("perl", labels={"app": name}, duration=duration, restart="Never", fail=fail)}
    if completions is not None:
        spec["completions"] = completions
    if backoff is not None:
        spec["backoffLimit"] = backoff
    if indexed:
        spec["completionMode"] = "Indexed"
    spec.update(extra)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def pods_of(store: Store, prefix: str) -> list[Obj]:
    return [p for p in store.list("pods")[0] if p["metadata"]["name"].startswith(prefix)]


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


class PodTimeline:
    """Every pod event of a cluster, replayed as the sequence of states the pods went through."""

    def __init__(self, cluster: Cluster) -> None:
        items, version = cluster.store.list("pods")
        self.watch = cluster.store.watch("pods", resource_version=version)
        self.pods: dict[str, Obj] = {p["metadata"]["name"]: p for p in items}
        self.created: list[str] = []

    def states(self) -> Iterator[dict[str, Obj]]:
        """The pods after each event since the last call (the dict is reused: read it, do not keep it)."""
        for ev in self.watch.drain():
            name = ev.object["metadata"]["name"]
            if ev.type == "DELETED":
                self.pods.pop(name, None)
            else:
                if name not in self.pods and ev.type == "ADDED":
                    self.created.append(name)
                self.pods[name] = ev.object
            yield self.pods


def run(cluster: Cluster, seconds: float) -> None:
    cluster.run_until(cluster.clock.now() + seconds)
