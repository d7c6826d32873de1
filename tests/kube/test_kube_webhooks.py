"""Volcano's webhooks served by ``pumice.webhooks`` to a real kube-apiserver 1.20, which calls them over HTTPS
at ``https://127.0.0.1:PORT`` (``clientConfig.url``); everything goes through the real kubectl."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from pumice.server import free_port
from pumice.webhooks import DEFAULT_ENABLED, AdmissionServer
from pumice.webhooks.registration import MUTATING, VALIDATING
from tests.conftest import REPO, SHARED

from .conftest import Kube

Obj = dict[str, Any]
QUICKSTART = SHARED / "scenarios" / "quickstart"


@pytest.fixture(scope="module")
def admission(kube: Kube) -> Iterator[AdmissionServer]:
    server = AdmissionServer(kube.client, host="127.0.0.1", port=0).start()
    try:
        # What the scheduler does on a cluster without them (Volcano's and pumice's): root and default.
        kube.kubectl("apply", "-f", "-", input=_queues({"root": {"weight": 1, "reclaimable": False},
                                                        "default": {"weight": 1}}))
        yield server
    finally:
        server.stop(unregister_webhooks=True)


def _queues(specs: dict[str, Obj]) -> str:
    return yaml.safe_dump_all([{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                "metadata": {"name": name}, "spec": spec} for name, spec in specs.items()])


def _job(name: str, spec: Obj) -> str:
    return yaml.safe_dump({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                           "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def _task(name: str | None = None, replicas: int = 1, **extra: Any) -> Obj:
    task: Obj = {"replicas": replicas,
                 "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}
    if name is not None:
        task["name"] = name
    task.update(extra)
    return task


def _refused(kube: Kube, *args: str, input: str | None = None) -> str:
    proc = kube.kubectl(*args, input=input, check=False)
    assert proc.returncode != 0, f"kubectl {' '.join(args)} was accepted: {proc.stdout}"
    return proc.stderr


def test_the_webhooks_register_themselves_with_their_ca_and_volcanos_failure_policy(
        kube: Kube, admission: AdmissionServer) -> None:
    ca = base64.b64encode(admission.tls.ca.read_bytes()).decode() if admission.tls else ""
    seen = set()
    for resource in (MUTATING, VALIDATING):
        for config in kube.client.list(resource):
            for hook in config["webhooks"]:
                seen.add(hook["clientConfig"]["url"].removeprefix(admission.url))
                assert hook["clientConfig"]["caBundle"] == ca
                assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
                assert hook["name"].endswith(".volcano.sh")
    assert seen == set(DEFAULT_ENABLED)


def test_a_job_gets_volcanos_defaults(kube: Kube, admission: AdmissionServer) -> None:
    host = _task(replicas=2)
    host["template"]["spec"]["hostNetwork"] = True
    kube.kubectl("apply", "-f", "-", input=_job("defaults", {"tasks": [_task("ps", 1), host],
                                                             "plugins": {"mpi": []}}))
    spec = json.loads(kube.kubectl("get", "vj", "defaults", "-o", "json").stdout)["spec"]
    assert spec["queue"] == "default" and spec["schedulerName"] == "volcano" and spec["maxRetry"] == 3
    assert [t["name"] for t in spec["tasks"]] == ["ps", "default1"]
    assert [t["minAvailable"] for t in spec["tasks"]] == [1, 2]
    assert [t["maxRetry"] for t in spec["tasks"]] == [3, 3]
    assert spec["minAvailable"] == 3
    assert spec["plugins"] == {"mpi": [], "svc": [], "ssh": []}
    assert spec["tasks"][1]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_the_quickstart_jobs_and_queues_are_admitted(kube: Kube, admission: AdmissionServer) -> None:
    for name in ("02-queues.yaml", "01-hello-job.yaml", "03-weighted-jobs.yaml", "04-gang-20.yaml",
                 "05-gang-min4.yaml", "06-depends-on.yaml"):
        kube.kubectl("apply", "-f", str(QUICKSTART / name))
    weights = {q["metadata"]["name"]: q["spec"]["weight"] for q in kube.client.list("queues")}
    assert weights["queue-a"] == 1 and weights["queue-b"] == 2


def test_a_bad_job_is_refused_with_volcanos_message(kube: Kube, admission: AdmissionServer) -> None:
    bad = _job("bad", {"minAvailable": 5, "tasks": [_task("a", 1, minAvailable=2), _task("a", 1)]})
    message = _refused(kube, "apply", "-f", "-", input=bad)
    assert 'admission webhook "validatejob.volcano.sh" denied the request' in message
    assert "minAvailable 2 is greater than replicas 1" in message
    assert "duplicated task name 'a'" in message
    message = _refused(kube, "apply", "-f", "-", input=_job("nowhere", {"queue": "nope", "tasks": [_task("a")]}))
    assert 'unable to find job queue: queue "nope" does not exist' in message
    # Server-side dry runs go through the webhooks as well.
    assert "validatejob.volcano.sh" in _refused(kube, "apply", "--dry-run=server", "-f", "-", input=bad)
    assert kube.kubectl("get", "vj", "bad", check=False).returncode != 0


def test_hierarchical_queue_rules(kube: Kube, admission: AdmissionServer) -> None:
    kube.kubectl("apply", "-f", "-", input=_queues({"eng": {"deserved": {"cpu": "4"}},
                                                    "eng-a": {"parent": "eng", "deserved": {"cpu": "3"}}}))
    message = _refused(kube, "apply", "-f", "-", input=_queues({"eng-b": {"parent": "eng",
                                                                          "deserved": {"cpu": "2"}}}))
    assert 'admission webhook "validatequeue.volcano.sh" denied the request' in message
    assert 'the children of "eng" would have deserved cpu=5 in total' in message
    message = _refused(kube, "apply", "-f", "-", input=_queues({"orphan": {"parent": "nope"}}))
    assert 'parent queue "nope" does not exist' in message
    # Jobs and PodGroups go to leaf queues only.
    message = _refused(kube, "apply", "-f", "-", input=_job("in-parent", {"queue": "eng", "tasks": [_task("a")]}))
    assert 'can only submit job to leaf queue, queue "eng" has 1 child queues' in message
    podgroup = yaml.safe_dump({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                               "metadata": {"name": "pg", "namespace": "default"},
                               "spec": {"minMember": 1, "queue": "eng"}})
    assert "validatepodgroup.volcano.sh" in _refused(kube, "apply", "-f", "-", input=podgroup)
    # Built-in queues and parents stay.
    assert "it is a built-in queue" in _refused(kube, "delete", "queue", "default")
    assert "it has 1 child queues: eng-a" in _refused(kube, "delete", "queue", "eng")
    # Reparenting under one's own child is a cycle.
    message = _refused(kube, "patch", "queue", "eng", "--type", "merge", "-p", '{"spec": {"parent": "eng-a"}}')
    assert '"eng" is an ancestor of "eng-a"' in message


def test_a_parent_with_pods_of_its_own_cannot_get_a_first_child(kube: Kube, admission: AdmissionServer) -> None:
    """The busy-parent rule (volcano#4031) reads PodGroups and pods through the API server."""
    kube.kubectl("apply", "-f", "-", input=_queues({"busy": {"weight": 1}}))
    kube.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "busy-pg", "namespace": "default"}, "spec": {"minMember": 1, "queue": "busy"}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "busy-0", "namespace": "default",
                      "annotations": {"scheduling.k8s.io/group-name": "busy-pg"}},
         "spec": {"nodeName": "node-0", "schedulerName": "volcano",
                  "containers": [{"name": "c", "image": "busybox"}]}},
    ]))
    message = _refused(kube, "apply", "-f", "-", input=_queues({"busy-child": {"parent": "busy"}}))
    assert '"busy" has no child queues and 1 pods allocated' in message


def test_weight_zero_becomes_one_and_out_of_range_is_refused_by_the_schema(kube: Kube,
                                                                          admission: AdmissionServer) -> None:
    kube.kubectl("apply", "-f", "-", input=_queues({"zero": {"weight": 0}}))
    queue = json.loads(kube.kubectl("get", "queue", "zero", "-o", "json").stdout)
    assert queue["spec"]["weight"] == 1 and queue["spec"]["reclaimable"] is True  # mutatequeue.volcano.sh
    message = _refused(kube, "apply", "--validate=false", "-f", "-", input=_queues({"huge": {"weight": 70000}}))
    assert "spec.weight" in message and "65535" in message


def test_job_updates_change_only_what_volcano_lets_change(kube: Kube, admission: AdmissionServer) -> None:
    kube.kubectl("apply", "-f", "-", input=_job("scaled", {"tasks": [_task("w", 2)]}))
    kube.kubectl("patch", "vj", "scaled", "--type", "json", "-p",
                 '[{"op": "replace", "path": "/spec/tasks/0/replicas", "value": 3}]')
    message = _refused(kube, "patch", "vj", "scaled", "--type", "merge", "-p", '{"spec": {"queue": "queue-a"}}')
    assert "job updates may only change minAvailable and the tasks' replicas and minAvailable" in message


def test_with_the_server_down_volcano_objects_are_refused_and_a_restart_takes_over(
        kube: Kube, admission: AdmissionServer) -> None:
    """failurePolicy Fail, as Volcano's; a new server (new port, new CA) re-points the configurations."""
    admission.stop()
    message = _refused(kube, "apply", "-f", "-", input=_job("while-down", {"tasks": [_task("a")]}))
    assert "failed calling webhook" in message
    # Objects the webhooks do not look at are not held up.
    kube.kubectl("create", "configmap", "unrelated")
    replacement = AdmissionServer(kube.client, host="127.0.0.1", port=0).start()
    try:
        kube.kubectl("apply", "-f", "-", input=_job("after-restart", {"tasks": [_task("a")]}))
        spec = json.loads(kube.kubectl("get", "vj", "after-restart", "-o", "json").stdout)["spec"]
        assert spec["tasks"][0]["minAvailable"] == 1
    finally:
        replacement.stop()
        admission.start()  # the module's server again, for whatever runs after


def test_pumice_admission_serve_runs_until_sigterm(kube: Kube, admission: AdmissionServer) -> None:
    """The command a user (or deploy/'s Deployment) runs: serves, takes over the configurations, stops cleanly."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "admission", "serve", "--kubeconfig",
                             str(kube.kubeconfig), "--listen-address", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while "serving at" not in line:
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            line = proc.stderr.readline() if proc.stderr else ""
        assert f"https://127.0.0.1:{port}" in line
        message = _refused(kube, "apply", "-f", "-", input=_queues({"cli-orphan": {"parent": "nope"}}))
        assert 'parent queue "nope" does not exist' in message
        config = json.loads(kube.kubectl("get", "validatingwebhookconfiguration", "pumice-admission-queues-validate",
                                         "-o", "json").stdout)
        assert config["webhooks"][0]["clientConfig"]["url"] == f"https://127.0.0.1:{port}/queues/validate"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
