"""Node metrics on a real kube-apiserver v1.20 without metrics-server: the metrics API is absent, that is said
once, and the nodes count as without fresh metrics (the descheduler moves nothing)."""

from __future__ import annotations

import logging
import time

import pytest

from pumice.clock import WallClock
from pumice.node_metrics import KubernetesMetricsSource
from pumice.runtime.components import Components, RunSettings
from pumice.store.kube import KubeStore, from_kubeconfig

from .conftest import Kube


def test_absent_metrics_api_is_reported_once_and_gives_no_metrics(kube: Kube,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    source = KubernetesMetricsSource(kube.client.get_json)
    with caplog.at_level(logging.WARNING, logger="pumice.node_metrics"):
        assert source.node_metrics(time.time()) == {}
        assert source.node_metrics(time.time()) == {}
    said = [r.getMessage() for r in caplog.records if "metrics API" in r.getMessage()]
    assert len(said) == 1 and "metrics.k8s.io/v1beta1" in said[0]
    assert source.problem is not None and "metrics-server" in source.problem


def test_descheduler_component_without_metrics_evicts_nothing(kube: Kube) -> None:
    kube.kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: Node
metadata: {name: busy}
status: {allocatable: {cpu: "4", memory: 4Gi, pods: "110"}, capacity: {cpu: "4", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p0, namespace: default}
spec: {nodeName: busy, containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]}
""")
    store = KubeStore(from_kubeconfig(str(kube.kubeconfig)))
    settings = RunSettings(components=("descheduler",), get_json=kube.client.get_json)
    parts = Components(store, WallClock(), settings).start()
    try:
        deadline = time.monotonic() + 30
        while parts.descheduler is None or parts.descheduler.source.problem is None:  # it ran once
            assert time.monotonic() < deadline and parts.failure is None, parts.failure
            time.sleep(0.1)
        assert "metrics API" in parts.descheduler.source.problem
        time.sleep(0.5)
        assert parts.descheduler.evicted == [] and parts.failure is None
        assert kube.kubectl("get", "pod", "p0", "-o", "name").stdout.strip() == "pod/p0"
    finally:
        parts.stop()
        store.close()
