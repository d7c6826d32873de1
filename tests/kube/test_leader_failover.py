"""Two ``pumice run --leader-elect`` replicas on a real kube-apiserver: one binds, the other waits; kill -9 the
leader and the other takes over within the lease duration (15 s); no pod is ever bound twice."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice.store.kube import KubeStore, from_kubeconfig

from .cluster import Kube120, Proxy
from .helpers import PumiceRun, Recorder, eventually, kubectl

LEASE_DURATION = 15.0


def _objects(store: KubeStore, batch: int) -> None:
    for g in range(3):
        group = f"b{batch}-g{g}"
        store.create("podgroups.scheduling.volcano.sh", {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": group, "namespace": "default"}, "spec": {"minMember": 2, "queue": "default"}})
        for i in range(3):
            store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"{group}-{i}", "namespace": "default",
                "annotations": {"scheduling.k8s.io/group-name": group}},
                "spec": {"schedulerName": "volcano", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}})


def _holder(kubeconfig: Path) -> str:
    return kubectl(kubeconfig, "get", "lease", "-n", "volcano-system", "vc-scheduler", "-o",
                   "jsonpath={.spec.holderIdentity}", check=False).strip()


def _bound(recorder: Recorder, batch: int) -> int:
    return sum(1 for key, binds in recorder.history.bound.items() if key.startswith(f"default/b{batch}-") and binds)


def test_leader_failover(kube120: Kube120, tmp_path: Path) -> None:
    kc = kube120.kubeconfig
    kubectl(kc, "create", "namespace", "volcano-system")
    store = KubeStore(from_kubeconfig(str(kc)))
    recorder = Recorder(kc)
    runs: list[PumiceRun] = []
    try:
        for i in range(3):
            res: dict[str, Any] = {"cpu": "8", "memory": "16Gi", "pods": "110"}
            store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"},
                                   "status": {"capacity": res, "allocatable": res, "conditions": [
                                       {"type": "Ready", "status": "True"}]}})
        args = ("--components", "scheduler", "--leader-elect")
        runs = [PumiceRun(kc, tmp_path / f"replica-{i}.log", args).start() for i in range(2)]
        leader = eventually(lambda: next((r for r in runs if "scheduler: leading" in r.text()), None), 60,
                            "a leader")
        other = runs[1 - runs.index(leader)]
        holder = _holder(kc)
        assert holder
        _objects(store, 1)
        eventually(lambda: _bound(recorder, 1) == 9, 60, "batch 1 bound")
        assert "scheduler: leading" not in other.text()  # the standby never acted

        leader.kill()
        killed = time.monotonic()
        _objects(store, 2)
        taken = eventually(lambda: (_holder(kc) not in ("", holder)) and time.monotonic(), 40, "a new holder")
        eventually(lambda: _bound(recorder, 2) == 9, 60, "batch 2 bound by the new leader")
        takeover = taken - killed
        print(f"takeover {takeover:.1f} s after kill -9 of the leader")
        assert takeover <= LEASE_DURATION + 1.0  # 1 s: the test's own polling and a busy machine
        assert "scheduler: leading" in other.text()
        assert not recorder.bound_twice()
        assert sum(len(b) for k, b in recorder.history.bound.items() if k.startswith("default/b")) == 18
        assert other.stop() == 0
    finally:
        for run in runs:
            run.kill()
        recorder.close()
        store.close(flush_timeout=0)


@pytest.mark.parametrize("args, message", [
    (("--components", "scheduler", "--leader-elect", "--lock-object-namespace", "nowhere"), "nowhere: no such"),
    (("--components", "admission", "--webhook-url", "https://a", "--webhook-service-name", "b"), "not both"),
    (("--components", "scheduler,kubelet"), "unknown component 'kubelet'"),
])
def test_bad_run_flags_are_one_line(kube120: Kube120, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    run = PumiceRun(kube120.kubeconfig, tmp_path / "run.log", args).start()
    assert run.proc is not None
    code = run.proc.wait(60)
    lines = [line for line in run.text().splitlines() if line.startswith("error:")]
    assert code != 0 and len(lines) == 1 and message in lines[0], run.text()


def test_run_serves_volcanos_webhooks(kube120: Kube120, tmp_path: Path) -> None:
    """``pumice run --components admission``: the webhook server registers itself and refuses a bad Queue."""
    from .cluster import free_port

    kc = kube120.kubeconfig
    run = PumiceRun(kc, tmp_path / "admission.log",
                    ("--components", "admission,scheduler", "--webhook-port", str(free_port()))).start()
    try:
        run.wait_for_log("pumice run: admission, scheduler")
        names = kubectl(kc, "get", "validatingwebhookconfigurations", "-o", "name")
        assert "pumice-admission" in names
        bad = ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: orphan}\n"
               "spec: {weight: 1, parent: nowhere}\n")
        proc = subprocess.run(["/usr/bin/kubectl", "--kubeconfig", str(kc), "apply", "-f", "-"], input=bad,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and 'parent queue "nowhere" does not exist' in proc.stderr, proc.stderr
        assert run.stop() == 0
    finally:
        run.kill()
        # leave no webhook behind pointing at a server that is gone (failurePolicy Fail)
        kubectl(kc, "delete", "validatingwebhookconfigurations,mutatingwebhookconfigurations", "--all",
                check=False)


def _behind_relay(kube120: Kube120, tmp_path: Path) -> tuple[Proxy, Path]:
    """A relay to the API server and a kubeconfig that goes through it."""
    proxy = Proxy(kube120.port)
    config = yaml.safe_load(kube120.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    behind = tmp_path / "kubeconfig"
    behind.write_text(yaml.safe_dump(config))
    return proxy, behind


def test_a_lease_not_renewed_in_time_is_lost_at_the_renew_deadline(kube120: Kube120, tmp_path: Path) -> None:
    """The API server stops answering: the replica gives up at the renew deadline (10 s), not when its hung
    renewal times out (30 s and more), so it never acts past the point a successor may start."""
    kubectl(kube120.kubeconfig, "create", "namespace", "volcano-system", check=False)
    proxy, behind = _behind_relay(kube120, tmp_path)
    run = PumiceRun(behind, tmp_path / "deadline.log", ("--components", "scheduler", "--leader-elect"))
    try:
        run.start()
        eventually(lambda: "scheduler: leading" in run.text(), 60, "the lease")
        proxy.stall()
        stalled = time.monotonic()
        assert run.proc is not None
        code = run.proc.wait(60)
        took = time.monotonic() - stalled
        print(f"gave up {took:.1f} s after the server stopped answering, exit {code}")
        assert code == 1 and "lost its lease" in run.text(), run.text()[-3000:]
        assert took < 10.0 + 2.0 + 20.0  # the renew deadline (since the last renewal), a retry period, the stop
        assert "not renewed within 10 s" in run.text()
    finally:
        run.kill()
        proxy.close()


def test_a_replica_asked_to_stop_while_the_api_server_hangs_exits_in_time(kube120: Kube120, tmp_path: Path) -> None:
    """SIGTERM while the API server has stopped answering (a relay that holds every request): the components stop,
    the Leases are given up as far as the server lets them, and the process exits 0 well within a pod's 30 s
    grace period (it waited on unanswered requests for a minute, then reported a lost Lease)."""
    kc = kube120.kubeconfig
    kubectl(kc, "create", "namespace", "volcano-system", check=False)
    proxy, behind = _behind_relay(kube120, tmp_path)
    store = KubeStore(from_kubeconfig(str(kc)))
    run = PumiceRun(behind, tmp_path / "hung.log", ("--components", "scheduler,controllers", "--leader-elect"))
    try:
        run.start()
        eventually(lambda: "scheduler: leading" in run.text() and "controllers: leading" in run.text(), 60,
                   "both leases")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hung-0", "namespace": "default"},
               "spec": {"schedulerName": "volcano", "nodeSelector": {"pumice.io/test": "nowhere"},
                        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}
        store.create("pods", pod)
        time.sleep(0.5)  # the scheduler and the controllers are writing about it (conditions, a PodGroup)
        proxy.stall()
        time.sleep(1.0)
        assert run.proc is not None
        asked = time.monotonic()
        run.proc.send_signal(signal.SIGTERM)
        code = run.proc.wait(60)
        took = time.monotonic() - asked
        print(f"stopped {took:.1f} s after SIGTERM, exit {code}")
        assert code == 0, run.text()[-3000:]
        assert took < 25.0, run.text()[-3000:]
        assert "pumice run stopped" in run.text()
    finally:
        run.kill()
        proxy.close()
        with contextlib.suppress(Exception):
            store.delete("pods", "default", "hung-0")
        store.close(flush_timeout=0)
