"""kill -9 of ``pumice up`` under 8 concurrent writers: no acknowledged create is lost or changed,
resourceVersions only grow across restarts, and no pod is ever bound to another node.

``PUMICE_KILL9_TRIALS`` (default 3) bounds the number of kill/restart trials.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.harness import Up, start_up, stop_up

TRIALS = int(os.environ.get("PUMICE_KILL9_TRIALS", "3"))
WRITERS = 8
KINDS = (  # (collection path, kind): two writers each
    ("/apis/scheduling.volcano.sh/v1beta1/queues", "Queue"),
    ("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", "PodGroup"),
    ("/api/v1/namespaces/default/pods", "Pod"),
    ("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs", "Job"),
)


def _object(kind: str, name: str) -> dict[str, Any]:
    if kind == "Queue":
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                "spec": {"weight": 1}}
    if kind == "PodGroup":
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
                "spec": {"minMember": 1, "queue": "default"}}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
            "schedulerName": "volcano", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": {
        "minAvailable": 1, "schedulerName": "volcano", "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                                      "resources": {"requests": {"cpu": "10m"}}}]}}}]}}


@dataclass
class Acked:
    """Creates the server acknowledged: path -> (uid, resourceVersion)."""

    objects: dict[str, tuple[str, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _writer(up: Up, index: int, trial: int, acked: Acked, stop: threading.Event) -> None:
    collection, kind = KINDS[index % len(KINDS)]
    host, port = up.url.removeprefix("https://").split(":")
    conn = http.client.HTTPSConnection(host, int(port), context=up.context, timeout=10)
    headers = {"Authorization": f"Bearer {up.token}", "Content-Type": "application/json"}
    serial = 0
    while not stop.is_set():
        serial += 1
        name = f"w{index}-t{trial}-{serial}"
        try:
            conn.request("POST", collection, json.dumps(_object(kind, name)), headers)
            resp = conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException):
            return  # killed
        if resp.status == 201:
            created = json.loads(body)["metadata"]
            with acked.lock:
                acked.objects[f"{collection}/{name}"] = (created["uid"], int(created["resourceVersion"]))


def _get(up: Up, path: str) -> tuple[int, Any]:
    answer = up.client().request("GET", path)
    return answer.status, answer.json()


def _version(up: Up) -> int:
    return int(_get(up, "/api/v1/namespaces")[1]["metadata"]["resourceVersion"])


def _bindings(up: Up) -> dict[str, str]:
    pods = _get(up, "/api/v1/pods")[1]["items"]
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")}


def test_kill_9_under_8_writers_loses_no_acknowledged_create(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    acked = Acked()
    bindings: dict[str, str] = {}
    highest = 0
    rng = random.Random(15)
    up = start_up(directory, time_scale=1.0)
    try:
        client = up.client()
        for i in range(4):
            alloc = {"cpu": "64", "memory": "256Gi", "pods": "1000"}
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"},
                    "status": {"allocatable": alloc, "capacity": alloc,
                               "conditions": [{"type": "Ready", "status": "True"}]}}
            assert client.request("POST", "/api/v1/nodes", json.dumps(node).encode(),
                                  {"Content-Type": "application/json"}).status == 201
        client.close()
        for trial in range(TRIALS):
            # after a restart: the counter only grows, and every pod stays where it was bound
            version = _version(up)
            assert version >= highest, f"trial {trial}: resourceVersion went back from {highest} to {version}"
            now_bound = _bindings(up)
            moved = {p: (n, now_bound.get(p)) for p, n in bindings.items() if now_bound.get(p) != n}
            assert not moved, f"trial {trial}: pods bound elsewhere or unbound after the restart: {moved}"
            stop = threading.Event()
            writers = [threading.Thread(target=_writer, args=(up, i, trial, acked, stop), daemon=True)
                       for i in range(WRITERS)]
            for writer in writers:
                writer.start()
            time.sleep(1.0 + 2.0 * rng.random())
            bindings.update(_bindings(up))  # what was bound shortly before the kill
            stop_up(up.process, kill=True)
            stop.set()
            for writer in writers:
                writer.join(15)
            with acked.lock:
                highest = max([highest, *(rv for _, rv in acked.objects.values())])
            up = start_up(directory, time_scale=1.0)
            # every acknowledged create is there, the same object
            lost, changed = [], []
            client = up.client()
            for path, (uid, _) in sorted(acked.objects.items()):
                answer = client.request("GET", path)
                if answer.status == 404:
                    lost.append(path)
                elif answer.json()["metadata"]["uid"] != uid:
                    changed.append(path)
            client.close()
            assert not lost and not changed, f"trial {trial}: lost {lost[:5]}, changed {changed[:5]}"
        version = _version(up)
        assert version >= highest
        time.sleep(1.0)  # the last run schedules: nothing bound before moves
        final = _bindings(up)
        assert not {p for p, n in bindings.items() if final.get(p) != n}
        print(f"kill -9: {TRIALS} trials, {len(acked.objects)} acknowledged creates, 0 lost, 0 changed, "
              f"{len(bindings)} pods bound before a kill, none moved; resourceVersion {version}")
        assert len(acked.objects) >= 50 * TRIALS
    finally:
        stop_up(up.process)
