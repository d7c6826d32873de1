"""``/metrics``: Volcano's metric names after a real scheduling run, scraped over HTTP and parsed with
prometheus_client's text parser."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from pumice.metrics import ClusterMetrics, serve_metrics
from pumice.runtime import Cluster
from pumice.scheduler import load_conf

from .conftest import Api

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def quickstart(shared: Path, *files: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in files:
        out += [d for d in yaml.safe_load_all((shared / "scenarios" / "quickstart" / f).read_text()) if d]
    return out


def scrape(api: Api, path: str = "/metrics") -> Samples:
    status, text = api.request("GET", path)
    assert status == 200, text
    assert isinstance(text, str)
    return parse(text)


def test_metrics_after_the_quickstart_say_what_a_user_checks(shared: Path, make_api: Callable[..., Api]) -> None:
    cluster = Cluster()
    cluster.apply(quickstart(shared, "00-cluster.yaml", "02-queues.yaml", "03-weighted-jobs.yaml",
                             "04-gang-20.yaml"))
    cluster.run_until(cluster.clock.now() + 30)
    api = make_api(cluster.store, metrics=cluster.metrics)
    samples = scrape(api)

    # the 20 x 4 CPU gang cannot fit in 24 CPU: one unschedulable job, 20 tasks short
    assert value(samples, "volcano_unschedule_job_count") == 1
    gang = [dict(labels)["job_id"] for (name, labels), v in samples.items()
            if name == "volcano_unschedule_task_count" and v == 20]
    assert len(gang) == 1 and gang[0].startswith("gang-job")
    # 12 one-pod jobs of 500m / 100Mi run, six per queue
    assert value(samples, "volcano_queue_allocated_milli_cpu", queue_name="queue-a") == 3000
    assert value(samples, "volcano_queue_allocated_memory_bytes", queue_name="queue-b") == 6 * 100 * 2**20
    assert value(samples, "volcano_queue_weight", queue_name="queue-b") == 2
    assert value(samples, "volcano_queue_deserved_milli_cpu", queue_name="queue-a") == 3000
    assert value(samples, "volcano_queue_share", queue_name="queue-a") == pytest.approx(1.0)
    assert value(samples, "volcano_schedule_attempts_total", result="scheduled") == 12
    assert value(samples, "volcano_queue_pod_group_running_count", queue_name="queue-b") == 6
    # every session was timed, each action and plugin too
    cycles = value(samples, "volcano_e2e_scheduling_latency_milliseconds_count")
    assert cycles == cluster.cycles > 0
    assert value(samples, "volcano_action_scheduling_latency_milliseconds_count", action="allocate") == cycles
    assert value(samples, "volcano_plugin_scheduling_latency_milliseconds_count", plugin="gang",
                 OnSession="OnSessionOpen") == cycles
    assert value(samples, "volcano_e2e_scheduling_latency_milliseconds_bucket", le="+Inf") == cycles
    assert value(samples, "volcano_task_scheduling_latency_milliseconds_count") == 12


def test_finished_jobs_are_counted_by_phase(shared: Path) -> None:
    cluster = Cluster()
    cluster.apply(quickstart(shared, "00-cluster.yaml", "01-hello-job.yaml"))
    cluster.run_idle(cluster.clock.now() + 3600)
    body, content_type = cluster.metrics.exposition()
    assert content_type.startswith("text/plain; version=0.0.4")
    samples = parse(body.decode())
    assert value(samples, "volcano_job_completed_phase_count", job_name="hello-volcano-job", queue_name="default") == 1
    # the job controller deleted its PodGroup once it finished, as Volcano's does
    assert value(samples, "volcano_queue_pod_group_running_count", queue_name="default") == 0
    assert value(samples, "volcano_unschedule_job_count") == 0


PREEMPT_CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: nodeorder
"""


def _job(name: str, priority: int, cpu: str, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "tasks": [{
                "name": "t", "replicas": replicas, "template": {"spec": {
                    "restartPolicy": "Never", "priorityClassName": f"p{priority}", "containers": [{
                    "name": "c", "image": "busybox", "command": ["sleep", "1000"],
                    "resources": {"requests": {"cpu": cpu}}}]}}}]}}


def test_preemption_is_counted() -> None:
    cluster = Cluster(conf=load_conf(PREEMPT_CONF))
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    # two low-priority pods fill the node; the gang rule lets one of them go (minAvailable 1)
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{value}"},
                "value": value} for value in (1, 1000)]
    cluster.apply([node, *classes, _job("small", 1, "2", replicas=2)])
    cluster.run_until(cluster.clock.now() + 5)
    cluster.apply([_job("urgent", 1000, "2")])
    cluster.run_until(cluster.clock.now() + 5)
    samples = parse(cluster.metrics.exposition()[0].decode())
    assert value(samples, "volcano_total_preemption_attempts") >= 1
    assert value(samples, "volcano_pod_preemption_victims") == 1


def test_each_cluster_has_its_own_registry(shared: Path) -> None:
    busy, idle = Cluster(), Cluster()
    busy.apply(quickstart(shared, "00-cluster.yaml", "01-hello-job.yaml"))
    busy.run_until(busy.clock.now() + 10)
    idle.run_until(idle.clock.now() + 10)
    b = parse(busy.metrics.exposition()[0].decode())
    i = parse(idle.metrics.exposition()[0].decode())
    assert value(b, "volcano_schedule_attempts_total", result="scheduled") == 1
    assert value(i, "volcano_schedule_attempts_total", result="scheduled") == 0
    assert busy.metrics.registry is not idle.metrics.registry


def test_metrics_need_the_token_on_the_api_server(make_api: Callable[..., Api]) -> None:
    api = make_api(metrics=ClusterMetrics())
    status, _ = api.request("GET", "/metrics", token=None)
    assert status == 401
    assert "volcano_e2e_scheduling_latency_milliseconds_count" in {name for name, _ in scrape(api)}


def test_metrics_on_a_port_of_their_own() -> None:
    metrics = ClusterMetrics()
    server: Any = serve_metrics(metrics)
    try:
        with urllib.request.urlopen(server.url + "/metrics", timeout=10) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            samples = parse(resp.read().decode())
        with urllib.request.urlopen(server.url + "/metrics", timeout=10) as resp:
            assert resp.status == 200
        req = urllib.request.Request(server.url + "/metrics", headers={"Accept": "application/openmetrics-text"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
            assert resp.read().decode().rstrip().endswith("# EOF")
    finally:
        server.stop()
    assert value(samples, "volcano_unschedule_job_count") == 0
    assert server.url.startswith("http://127.0.0.1:")
