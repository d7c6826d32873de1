"""kube-apiserver's Priority admission in the embedded cluster: a pod's ``spec.priority`` comes from its
PriorityClass, checked side by side with a real kube-apiserver 1.20 doing the same writes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pumice.admission import admitted_memory_store
from pumice.client import ApiError, KubeClient, load_config
from pumice.runtime import Cluster
from tests.cli.conftest import Cluster as ServerUnderTest
from tests.cli.conftest import _kube_apiserver

Obj = dict[str, Any]


def priority_class(name: str, value: int, *, default: bool = False, policy: str | None = None) -> Obj:
    pc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
               "value": value}
    if default:
        pc["globalDefault"] = True
    if policy:
        pc["preemptionPolicy"] = policy
    return pc


def pod(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


@pytest.fixture(scope="module", params=["pumice", "kube-1.20"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerUnderTest]:
    if request.param == "kube-1.20":
        yield from _kube_apiserver(tmp_path_factory)
        return
    from pumice.server import ServerThread, create_app, ensure_certificates, write_kubeconfig

    store = admitted_memory_store()
    state = tmp_path_factory.mktemp("pumice")
    tls = ensure_certificates(state)
    thread = ServerThread(create_app(store, token="t"), tls=tls).start()
    try:
        path = write_kubeconfig(state / "kubeconfig", thread.url, "t", ca_file=tls.ca)
        kc = KubeClient(load_config(str(path)))
        yield ServerUnderTest(thread.url, path, kc, "pumice")
        kc.close()
    finally:
        thread.stop()
        store.close()


def _priority_fields(created: Obj) -> tuple[Any, Any, Any]:
    spec = created["spec"]
    return spec.get("priority"), spec.get("priorityClassName"), spec.get("preemptionPolicy")


def _class_seen(kc: KubeClient, name: str, value: int, *, default: bool = False) -> None:
    """Wait until admission sees a new class (kube-apiserver reads classes through an informer: a pod created
    right after its class may not see it yet); the probe pods are deleted."""
    deadline = time.monotonic() + 20
    for attempt in range(1000):
        probe = pod(f"probe-{name}-{attempt}", **({} if default else {"priorityClassName": name}))
        try:
            created = kc.create("pods", probe)
        except ApiError:
            created = None
        if created is not None:
            kc.delete("pods", probe["metadata"]["name"], "default")
            if created["spec"].get("priority") == value:
                return
        assert time.monotonic() < deadline, f"PriorityClass {name} never seen by admission"
        time.sleep(0.2)


def test_pods_get_the_priority_kube_apiserver_gives(server: ServerUnderTest) -> None:
    kc = server.client
    kc.create("priorityclasses", priority_class("pri-high", 1000, policy="Never"))
    _class_seen(kc, "pri-high", 1000)
    assert _priority_fields(kc.create("pods", pod("plain"))) == (0, None, "PreemptLowerPriority")
    assert _priority_fields(kc.create("pods", pod("high", priorityClassName="pri-high"))) == (1000, "pri-high",
                                                                                            "Never")
    assert _priority_fields(kc.create("pods", pod("same-policy", priorityClassName="pri-high",
                                                  preemptionPolicy="Never"))) == (1000, "pri-high", "Never")
    assert _priority_fields(kc.create("pods", pod("critical", priorityClassName="system-node-critical"))) == (
        2000001000, "system-node-critical", "PreemptLowerPriority")
    assert _priority_fields(kc.create("pods", pod("agreeing", priorityClassName="pri-high", priority=1000)))[0] == 1000

    with pytest.raises(ApiError) as missing:
        kc.create("pods", pod("missing", priorityClassName="pri-nowhere"))
    assert "no PriorityClass with name pri-nowhere was found" in str(missing.value)
    with pytest.raises(ApiError) as disagreeing:
        kc.create("pods", pod("disagreeing", priorityClassName="pri-high", priority=5))
    assert "the integer value of priority (5) must not be provided in pod spec" in str(disagreeing.value)
    with pytest.raises(ApiError) as other_policy:
        kc.create("pods", pod("other-policy", priorityClassName="pri-high", preemptionPolicy="PreemptLowerPriority"))
    assert "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided" in str(
        other_policy.value)
    with pytest.raises(ApiError):
        kc.get("pods", "missing", "default")  # nothing stored of a refused pod

    kc.create("priorityclasses", priority_class("pri-default", 7, default=True))
    try:
        _class_seen(kc, "pri-default", 7, default=True)
        assert _priority_fields(kc.create("pods", pod("defaulted"))) == (7, "pri-default", "PreemptLowerPriority")
    finally:
        kc.delete("priorityclasses", "pri-default")


def test_a_volcano_jobs_pods_carry_their_class_priority() -> None:
    """The pods a VolcanoJob creates in the embedded cluster are admitted like any pod: priority from the
    job's priorityClassName, as on a real cluster (the scheduler and preempt read ``spec.priority``)."""
    cluster = Cluster()
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"schedulerName": "volcano", "minAvailable": 2, "priorityClassName": "pri-high",
                    "tasks": [{"name": "w", "replicas": 2, "template": {"spec": {
                        "containers": [{"name": "c", "image": "busybox",
                                        "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    cluster.apply([node, priority_class("pri-high", 1000), job])
    cluster.run_until(cluster.clock.now() + 30)
    pods = cluster.store.list("pods")[0]
    assert len(pods) == 2
    assert {p["spec"].get("priority") for p in pods} == {1000}
