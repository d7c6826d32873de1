"""End to end on a real kube-apiserver v1.20 with the real kubectl: Volcano's quick-start on fake nodes, with
``pumice run --components scheduler,controllers,nodes`` as the only thing acting on the cluster."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SHARED

from .cluster import Kube120
from .helpers import PumiceRun, Recorder, eventually, kubectl

QUICKSTART = SHARED / "scenarios" / "quickstart"


@pytest.fixture(scope="module")
def quickstart(kube120: Kube120, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kube120, PumiceRun,
                                                                                            Recorder]]:
    recorder = Recorder(kube120.kubeconfig)
    run = PumiceRun(kube120.kubeconfig, tmp_path_factory.mktemp("run") / "pumice.log",
                    ("--components", "scheduler,controllers,nodes", "--time-scale", "30",
                     "--listen-address", "127.0.0.1:0")).start()
    try:
        run.wait_for_log("pumice run: scheduler, controllers, nodes")
        yield kube120, run, recorder
    finally:
        code = run.stop()
        recorder.close()
        assert code == 0, run.text()[-3000:]


def job_phase(kubeconfig: Path, name: str) -> str:
    return kubectl(kubeconfig, "get", "vcjob", name, "-o", "jsonpath={.status.state.phase}", check=False)


def test_quickstart(quickstart: tuple[Kube120, PumiceRun, Recorder]) -> None:
    cluster, run, recorder = quickstart
    kc = cluster.kubeconfig
    kubectl(kc, "apply", "-f", str(QUICKSTART / "00-cluster.yaml"))
    kubectl(kc, "annotate", "node", "k3d-server-0", "k3d-agent-0", "k3d-agent-1", "kwok.x-k8s.io/node=fake")

    def ready() -> bool:
        nodes = json.loads(kubectl(kc, "get", "nodes", "-o", "json"))["items"]
        return len(nodes) == 3 and all(any(c["type"] == "Ready" and c["status"] == "True"
                                           for c in n["status"].get("conditions", [])) for n in nodes)

    eventually(ready, 30, "three Ready fake nodes")
    queues = kubectl(kc, "get", "queues", "-o", "jsonpath={.items[*].metadata.name}").split()
    assert {"root", "default"} <= set(queues)  # created as Volcano's scheduler creates them

    # hello job: a PodGroup, one pod bound and run, the Job Pending -> Running -> Completed
    kubectl(kc, "apply", "-f", str(QUICKSTART / "01-hello-job.yaml"))
    eventually(lambda: job_phase(kc, "hello-volcano-job") == "Completed", 90, "hello-volcano-job Completed")
    hello = "default/hello-volcano-job-mytask-0"
    assert [phase for _, phase in recorder.history.phases[hello]][-1] == "Succeeded"
    assert len(recorder.history.bound[hello]) == 1
    events = kubectl(kc, "get", "events", "--field-selector", "involvedObject.name=hello-volcano-job-mytask-0",
                     "-o", "jsonpath={.items[*].reason}")
    assert "Scheduled" in events.split()

    # the gangs and the workflow, together
    for name in ("02-queues.yaml", "04-gang-20.yaml", "05-gang-min4.yaml", "06-depends-on.yaml"):
        kubectl(kc, "apply", "-f", str(QUICKSTART / name))
    eventually(lambda: job_phase(kc, "workflow-job") == "Completed", 120, "workflow-job Completed")

    def min4_bound() -> list[float]:
        return sorted(binds[0][0] for key, binds in recorder.history.bound.items()
                      if key.startswith("default/gang-job-min4-") and binds)

    eventually(lambda: len(min4_bound()) >= 4, 60, "gang-job-min4 started")
    first = min4_bound()
    assert first[3] - first[0] < 1.0, f"the min-4 gang did not start together: {first[:4]}"

    # the gang of 20 (80 CPU on 24) never starts a pod, and says why: its PodGroup is never admitted (the job
    # controller creates no pod for a Pending PodGroup, as Volcano's does), with an Unschedulable condition
    gang20 = [key for key in recorder.history.created if key.startswith("default/gang-job-maintask-")]
    assert not [key for key in gang20 if recorder.history.bound.get(key)]
    groups = json.loads(kubectl(kc, "get", "podgroups", "-o", "json"))["items"]
    group = next(g for g in groups if any(ref.get("name") == "gang-job"
                                          for ref in g["metadata"].get("ownerReferences", [])))
    assert group["status"].get("phase") == "Pending", group["status"]
    assert any(c.get("type") == "Unschedulable" and c.get("status") == "True" and c.get("message")
               for c in group["status"].get("conditions", [])), group["status"]
    reasons = kubectl(kc, "get", "events", "-o", "jsonpath={range .items[*]}{.involvedObject.name} {.reason}\n{end}")
    assert any(line.startswith("gang-job-") and line.endswith(" Unschedulable") for line in reasons.splitlines()
               if not line.startswith("gang-job-min4"))
    # dependsOn: task-b's pod appears only after task-a's pod succeeded
    a_done = next(t for t, phase in recorder.history.phases["default/workflow-job-task-a-0"] if phase == "Succeeded")
    assert recorder.history.created["default/workflow-job-task-b-0"] >= a_done
    assert not recorder.bound_twice()

    # a pod no node can take says why, as Volcano's do: a PodScheduled=False condition with the reason and a
    # FailedScheduling event (written by the scheduler's status writers while its cycles go on)
    kubectl(kc, "run", "nowhere", "--image=busybox", "--restart=Never", "--overrides", json.dumps(
        {"spec": {"schedulerName": "volcano", "nodeSelector": {"pumice.io/test": "nowhere"}}}))

    def pod_says_why() -> bool:
        conditions = json.loads(kubectl(kc, "get", "pod", "nowhere", "-o", "json"))["status"].get("conditions", [])
        return any(c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
                   and "selector" in c.get("message", "") for c in conditions)

    try:
        eventually(pod_says_why, 60, "pod nowhere: PodScheduled=False, Unschedulable, naming the node selector")
    except AssertionError as err:
        pod = kubectl(kc, "get", "pod", "nowhere", "-o", "jsonpath={.status}")
        groups = kubectl(kc, "get", "podgroup", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status}\n{end}")
        raise AssertionError(f"{err}; the pod has {pod}; podgroups {groups}; pumice: {run.text()[-2000:]}") from None
    eventually(lambda: "FailedScheduling" in kubectl(
        kc, "get", "events", "--field-selector", "involvedObject.name=nowhere",
        "-o", "jsonpath={.items[*].reason}").split(), 60, "pod nowhere: a FailedScheduling event")
    assert "Traceback" not in run.text()


def test_metrics_of_the_run(quickstart: tuple[Kube120, PumiceRun, Recorder]) -> None:
    """``--listen-address``: Volcano's scheduler metrics, scraped from the running ``pumice run``."""
    _, run, _ = quickstart
    url = re.search(r"metrics on (http://\S+/metrics)", run.text())
    assert url, run.text()[-2000:]

    def scheduled() -> float:
        text = urllib.request.urlopen(url.group(1), timeout=10).read().decode()
        found = re.search(r'^volcano_schedule_attempts_total\{result="scheduled"\} (\S+)$', text, re.M)
        return float(found.group(1)) if found else 0.0

    eventually(lambda: scheduled() > 0, 60, "a scheduled attempt counted")
    text = urllib.request.urlopen(url.group(1), timeout=10).read().decode()
    assert re.search(r'^volcano_queue_weight\{queue_name="default"\} 1\.0$', text, re.M), text[:2000]
    assert "volcano_e2e_scheduling_latency_milliseconds_bucket" in text
