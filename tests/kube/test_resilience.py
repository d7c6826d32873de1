"""Nothing lost, nothing bound twice: ``pumice run`` through an API server restart, its own kill -9 and restart,
and watches expired (410 Gone) on an API server without a watch cache whose etcd is compacted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice.store.kube import KubeStore, from_kubeconfig

from .cluster import HAVE_KUBE120, KUBE120_BIN, Kube120, Proxy
from .helpers import PumiceRun, Recorder, eventually, kubectl

GONE_FLAGS = "--watch-cache=false --etcd-compaction-interval=5s"


@pytest.fixture(scope="module")
def no_watch_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube120]:
    if not HAVE_KUBE120:
        pytest.skip(f"kube-apiserver 1.20 is not built in {KUBE120_BIN}")
    cluster = Kube120(tmp_path_factory.mktemp("kube120-gone"), flags=GONE_FLAGS)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": name}}


def test_expired_watch_lists_again_and_reports_what_it_missed(no_watch_cache: Kube120, tmp_path: Path) -> None:
    proxy = Proxy(no_watch_cache.port)
    config = yaml.safe_load(no_watch_cache.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    behind = tmp_path / "kubeconfig"
    behind.write_text(yaml.safe_dump(config))
    direct = KubeStore(from_kubeconfig(str(no_watch_cache.kubeconfig)))
    store = KubeStore(from_kubeconfig(str(behind)), watch_timeout=(5, 5))
    try:
        for i in range(5):
            direct.create("configmaps", _configmap(f"gone-{i}"))
        watch = store.watch("configmaps", namespace="default")
        eventually(lambda: len([1 for e in watch.drain() if e.object["metadata"]["name"].startswith("gone-")]) or
                   len([c for c in store.list("configmaps", "default")[0]
                        if c["metadata"]["name"].startswith("gone-")]) == 5, 30, "five configmaps seen")
        watch.drain()
        proxy.cut()  # the store's watch is cut off while the world moves on
        for i in range(3):
            direct.delete("configmaps", "default", f"gone-{i}")
        direct.create("configmaps", _configmap("gone-new"))
        for i in range(20):  # more revisions than the store saw, then all compacted away
            direct.create("configmaps", _configmap(f"filler-{i}"))
        no_watch_cache.compact()
        informer = store.informer("configmaps")
        relists = informer.relists
        proxy.restore()
        seen: list[tuple[str, str]] = []

        def caught_up() -> bool:
            seen.extend((e.type, e.object["metadata"]["name"]) for e in watch.drain())
            return ("ADDED", "gone-new") in seen and all(("DELETED", f"gone-{i}") in seen for i in range(3))

        eventually(caught_up, 60, "the missed deletions")
        assert informer.relists > relists  # a 410 Gone made it list again
        names = {c["metadata"]["name"] for c in store.list("configmaps", "default")[0]}
        assert {"gone-3", "gone-4", "gone-new"} <= names and not {"gone-0", "gone-1", "gone-2"} & names
    finally:
        store.close(flush_timeout=0)
        direct.close(flush_timeout=0)
        proxy.close()


def _job(name: str, replicas: int, min_available: int, seconds: int, cpu: str = "1") -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano", "minAvailable": min_available, "tasks": [{
                "name": "t", "replicas": replicas, "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox", "command": ["sh", "-c", f"sleep {seconds}"],
                    "resources": {"requests": {"cpu": cpu}}}]}}}]}}


def test_restarts_lose_nothing_and_bind_nothing_twice(no_watch_cache: Kube120, tmp_path: Path) -> None:
    kc = no_watch_cache.kubeconfig
    store = KubeStore(from_kubeconfig(str(kc)))
    recorder = Recorder(kc)
    args = ("--components", "scheduler,controllers,nodes", "--time-scale", "20")
    first = PumiceRun(kc, tmp_path / "first.log", args).start()
    second = PumiceRun(kc, tmp_path / "second.log", args)
    try:
        first.wait_for_log("pumice run: scheduler")
        for i in range(4):
            res = {"cpu": "8", "memory": "32Gi", "pods": "110"}
            store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": f"fake-{i}", "annotations": {"kwok.x-k8s.io/node": "fake"}},
                "status": {"capacity": res, "allocatable": res}})
        jobs = [_job(f"one-{i}", 1, 1, 60 + 20 * (i % 4)) for i in range(16)]
        jobs += [_job(f"gang-{i}", 4, 4, 100, cpu="2") for i in range(3)]
        for job in jobs[:10]:
            store.create("jobs.batch.volcano.sh", job)
        time.sleep(3)
        no_watch_cache.restart_apiserver(down=3)  # watches break; etcd compacts meanwhile: they expire (410)
        no_watch_cache.compact()
        for job in jobs[10:]:
            store.create("jobs.batch.volcano.sh", job)
        time.sleep(4)
        first.kill()  # kill -9 mid-run, then a fresh replica takes over from what the cluster says
        second.start()

        def phases() -> dict[str, str]:
            return {j["metadata"]["name"]: ((j.get("status") or {}).get("state") or {}).get("phase", "")
                    for j in store.list("jobs.batch.volcano.sh", "default")[0]}

        eventually(lambda: all(p == "Completed" for p in phases().values()) and len(phases()) == len(jobs), 240,
                   "every job Completed")
        assert not recorder.bound_twice()
        bound = {k: b for k, b in recorder.history.bound.items() if b}
        assert len(bound) == 16 + 3 * 4  # every pod of every job, each bound once
        assert all(len(b) == 1 for b in bound.values())
        assert "listed again after the watch expired" in first.text() + second.text()
        assert second.stop() == 0
    finally:
        first.kill()
        second.kill()
        recorder.close()
        store.close(flush_timeout=0)
        print(kubectl(kc, "get", "vcjob", "-A", check=False))
