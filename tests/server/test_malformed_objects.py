"""Malformed objects never reach the scheduler of ``pumice up`` (issue 18).

Before: four malformed pods (cpu ``lots``, ``spec: "x"``, ``priority: "high"``, ``nodeSelectorTerms: "x"``) were
accepted with 201 and then stopped all scheduling (0 of 3 well-formed pods bound in 20 s). Now they are refused at
the door as kube-apiserver refuses them, and every well-formed pod and job sent between them is bound.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pumice.cli.up import STORE_FILE, ControlPlane
from pumice.server import free_port
from pumice.store import SqliteStore

MALFORMED_SPECS: list[Any] = [
    {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}]},
    "x",
    {"containers": [{"name": "c", "image": "x"}], "priority": "high"},
    {"containers": [{"name": "c", "image": "x"}], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}}},
    {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "-4"}}}]},
]


class Client:
    def __init__(self, plane: ControlPlane) -> None:
        self.url = plane.url
        self.token = (plane.data_dir / "token").read_text().strip()
        self.context = ssl.create_default_context(cafile=str(plane.data_dir / "ca.crt"))

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {self.token}",
                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())


def pod(name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def good_pod(name: str) -> dict[str, Any]:
    return pod(name, {"schedulerName": "volcano", "containers": [
        {"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 3600"],
         "resources": {"requests": {"cpu": "100m"}}}]})


def job(name: str, **task: Any) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 3600"],
         "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "100m"}}}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "schedulerName": "volcano",
                     "tasks": [{"name": "t", "replicas": 1, "template": template, **task}]}}


def test_malformed_pods_and_jobs_are_refused_and_every_well_formed_one_is_bound(tmp_path: Path) -> None:
    with ControlPlane(tmp_path, port=free_port(), time_scale=1) as plane:
        api = Client(plane)
        for i in range(2):
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                    "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                               "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
            assert api.call("POST", "/api/v1/nodes", node)[0] == 201
        pods, jobs = "/api/v1/namespaces/default/pods", "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
        codes = []
        for i, spec in enumerate(MALFORMED_SPECS):
            codes.append(api.call("POST", pods, pod(f"bad-{i}", spec))[0])
            assert api.call("POST", pods, good_pod(f"good-{i}"))[0] == 201
        codes.append(api.call("POST", jobs, job("bad-job", replicas="two"))[0])
        codes.append(api.call("POST", jobs, job("bad-template", template={"spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}}))[0])
        assert api.call("POST", jobs, job("good-job"))[0] == 201
        # pods: undecodable 400, invalid 422; jobs: refused by Volcano's mutating (a body it cannot read) and validating
        # webhooks, 400 as a cluster answers them
        assert codes == [400, 400, 400, 400, 422, 400, 400], codes
        wanted = {f"good-{i}" for i in range(len(MALFORMED_SPECS))} | {"good-job-t-0"}
        deadline = time.monotonic() + 30
        bound: set[str] = set()
        while time.monotonic() < deadline and bound != wanted:
            items = api.call("GET", pods)[1]["items"]
            bound = {p["metadata"]["name"] for p in items if (p.get("spec") or {}).get("nodeName")}
            time.sleep(0.2)
        assert bound == wanted
        names = {p["metadata"]["name"] for p in api.call("GET", pods)[1]["items"]}
        assert not {n for n in names if n.startswith("bad")}


def test_an_old_data_directory_with_malformed_objects_still_binds_every_well_formed_one(tmp_path: Path) -> None:
    """Objects written before validation existed (straight into the store, as an old data directory holds them)
    are reported and skipped by the scheduler and controllers: every well-formed pod and job is bound."""
    store = SqliteStore(tmp_path / STORE_FILE)
    try:
        for i in range(2):
            store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                                   "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                                              "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}})
        for i, spec in enumerate(MALFORMED_SPECS):
            for obj in (pod(f"bad-{i}", spec), good_pod(f"good-{i}")):
                store.create("pods", {**obj, "metadata": {**obj["metadata"], "namespace": "default"}})
        for obj in (job("bad-job", replicas="two"), job("good-job")):
            store.create("jobs.batch.volcano.sh", {**obj, "metadata": {**obj["metadata"], "namespace": "default"}})
    finally:
        store.close()
    with ControlPlane(tmp_path, port=free_port(), time_scale=1) as plane:
        api = Client(plane)
        wanted = {f"good-{i}" for i in range(len(MALFORMED_SPECS))} | {"good-job-t-0"}
        deadline = time.monotonic() + 30
        bound: set[str] = set()
        while time.monotonic() < deadline and bound != wanted:
            items = api.call("GET", "/api/v1/namespaces/default/pods")[1]["items"]
            bound = {p["metadata"]["name"] for p in items
                     if isinstance(p.get("spec"), dict) and p["spec"].get("nodeName")}
            time.sleep(0.2)
        assert bound == wanted
