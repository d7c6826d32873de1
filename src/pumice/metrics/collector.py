"""The metric families of one cluster, made when scraped (a ``prometheus_client`` custom collector).

Names, labels and units are Volcano's (``volcano_`` + the names in ``pkg/scheduler/metrics`` and
``pkg/controllers/metrics``): cpu in milli-cores, memory in bytes, other resources in milli-units.
Scheduler figures come from ``SchedulerMetrics`` (the last cycle and the counters it keeps); the controller
figures (PodGroups per phase and queue, finished jobs) are read from the store at scrape time.

Volcano's counters whose names do not end in ``_total`` (``total_preemption_attempts``,
``job_completed_phase_count``, ...) keep their exact names: ``prometheus_client`` would append ``_total``
to a counter, so they are exposed untyped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    UnknownMetricFamily,
)
from prometheus_client.registry import Collector

from pumice.api.quantity import int_value, milli_value
from pumice.store import Store, StoreError

from .histogram import Buckets
from .scheduler import SchedulerMetrics

__all__ = ["PREFIX", "ClusterCollector"]

PREFIX = "volcano_"
QUEUES = "queues.scheduling.volcano.sh"
JOBS = "jobs.batch.volcano.sh"
#: Volcano's ``minResource``: a queue is overused when deserved <= allocated in every dimension.
_EPS = 0.1
#: queue.status count field -> the controller's metric
_PODGROUP_PHASES = ("inqueue", "pending", "running", "unknown", "completed")
#: label values -> a histogram
Series = dict[tuple[str, ...], Buckets]


def _histogram(name: str, doc: str, labels: list[str], series: Series) -> HistogramMetricFamily:
    family = HistogramMetricFamily(PREFIX + name, doc, labels=labels)
    for values, hist in sorted(series.items()):
        buckets, total = hist.cumulative()
        family.add_metric(list(values), buckets, total)
    return family


class ClusterCollector(Collector):
    """Every metric family of one cluster, from its scheduler's records and its store."""

    def __init__(self, scheduler: SchedulerMetrics, store: Store | None = None) -> None:
        self.scheduler = scheduler
        self.store = store

    def collect(self) -> Iterator[Metric]:
        yield from self._scheduler()
        if self.store is not None:
            yield from self._controllers(self.store)

    # --- the scheduler ------------------------------------------------------------------------------------

    def _scheduler(self) -> Iterator[Metric]:
        m = self.scheduler
        with m.lock:
            e2e: Series = {(): m.e2e}
            opened: Series = {(): m.open_session}
            task: Series = {(): m.task_latency}
            actions: Series = {(name,): hist for name, hist in m.actions.items()}
            plugins: Series = {labels: hist for labels, hist in m.plugins.items()}
            attempts = dict(m.attempts)
            preemption_attempts, victims = m.preemption_attempts, m.preemption_victims
            last = m.last
            # histograms are read under the lock: a consistent copy of each
            families = [
                _histogram("e2e_scheduling_latency_milliseconds",
                           "E2e scheduling latency in milliseconds (scheduling algorithm + binding)", [], e2e),
                _histogram("open_session_duration_milliseconds",
                           "Duration of opening a scheduling session in milliseconds", [], opened),
                _histogram("action_scheduling_latency_milliseconds", "Action scheduling latency in milliseconds",
                           ["action"], actions),
                _histogram("plugin_scheduling_latency_milliseconds", "Plugin scheduling latency in milliseconds",
                           ["plugin", "OnSession"], plugins),
                _histogram("task_scheduling_latency_milliseconds",
                           "Task scheduling latency in milliseconds (task create to task bound to a node)", [], task),
            ]
        yield from families
        counter = CounterMetricFamily(PREFIX + "schedule_attempts",
                                      "Number of attempts to schedule pods, by the result. 'unschedulable' means a "
                                      "pod could not be scheduled, while 'error' means an internal scheduler problem.",
                                      labels=["result"])
        for result, n in attempts.items():
            counter.add_metric([result], float(n))
        yield counter
        yield GaugeMetricFamily(PREFIX + "pod_preemption_victims", "Number of selected preemption victims",
                                value=float(victims))
        yield UnknownMetricFamily(PREFIX + "total_preemption_attempts",
                                  "Total preemption attempts in the cluster till now", value=float(preemption_attempts))
        yield from self._jobs(last)
        yield from self._queues(last)

    def _jobs(self, last: Any) -> Iterator[Metric]:
        per_job = GaugeMetricFamily(PREFIX + "unschedule_task_count", "Number of tasks could not be scheduled",
                                    labels=["job_id"])
        unready: dict[str, int] = {}
        for job in last.jobs if last is not None else ():
            if job.phase == "Completed":
                continue
            name = job.key.split("/", 1)[-1]  # Volcano labels by the PodGroup's name
            unready[name] = max(unready.get(name, 0), max(0, job.min_available - job.ready))
        for name, count in sorted(unready.items()):
            per_job.add_metric([name], float(count))
        yield per_job
        yield GaugeMetricFamily(PREFIX + "unschedule_job_count", "Number of jobs could not be scheduled",
                                value=float(sum(1 for n in unready.values() if n > 0)))

    def _queues(self, last: Any) -> Iterator[Metric]:
        stats = None if last is None else last.stats
        names: tuple[str, ...] = stats.resources if stats is not None else ()
        attrs: dict[str, Any] = stats.queues if stats is not None else {}
        weights: dict[str, int] = stats.weights if stats is not None else {}
        queues = sorted(set(weights) | set(attrs) | set(last.queue_allocated if last is not None else ()))

        vectors: dict[str, dict[str, dict[str, float]]] = {k: {} for k in
                                                          ("allocated", "request", "deserved", "capacity",
                                                           "real_capacity", "inqueue")}
        share = GaugeMetricFamily(PREFIX + "queue_share", "Share for one queue", labels=["queue_name"])
        weight = GaugeMetricFamily(PREFIX + "queue_weight", "Weight for one queue", labels=["queue_name"])
        overused = GaugeMetricFamily(PREFIX + "queue_overused", "If one queue is overused", labels=["queue_name"])
        for queue in queues:
            attr = attrs.get(queue)
            if attr is None:
                allocated = (last.queue_allocated.get(queue) if last is not None else None) or {}
                vectors["allocated"][queue] = {n: float(int_value(v) if n == "memory" else milli_value(v))
                                               for n, v in allocated.items() if n != "pods"}
            else:
                for field, key in (("allocated", "allocated"), ("request", "request"), ("deserved", "deserved"),
                                   ("capability", "capacity"), ("real_capability", "real_capacity"),
                                   ("inqueue", "inqueue")):
                    vec = getattr(attr, field, None)
                    if vec is not None:
                        vectors[key][queue] = dict(zip(names, (float(v) for v in vec), strict=False))
                deserved = vectors["deserved"].get(queue, {})
                alloc = vectors["allocated"].get(queue, {})
                ratios = [alloc.get(n, 0.0) / d for n, d in deserved.items() if d >= _EPS]
                share.add_metric([queue], max(ratios, default=0.0))
                over = bool(deserved) and all(d - alloc.get(n, 0.0) < _EPS for n, d in deserved.items())
                overused.add_metric([queue], 1.0 if over else 0.0)
            w = getattr(attr, "weight", None) if attr is not None else None
            w = weights.get(queue) if w is None else w
            if w is not None:
                weight.add_metric([queue], float(w))
        for key, what in (("allocated", "Allocated"), ("request", "Request"), ("deserved", "Deserved"),
                          ("capacity", "Capacity"), ("real_capacity", "Real capacity"), ("inqueue", "Inqueue")):
            yield from _resource_families(f"queue_{key}", what, vectors[key])
        yield share
        yield weight
        yield overused

    # --- the controllers ----------------------------------------------------------------------------------

    def _controllers(self, store: Store) -> Iterator[Metric]:
        try:
            queues, _ = store.list(QUEUES)
        except StoreError:
            queues = []
        for phase in _PODGROUP_PHASES:
            family = GaugeMetricFamily(PREFIX + f"queue_pod_group_{phase}_count",
                                       f"The number of {phase.capitalize()} PodGroup in this queue",
                                       labels=["queue_name"])
            for queue in sorted(queues, key=lambda q: str(q["metadata"].get("name"))):
                status = queue.get("status") or {}
                family.add_metric([str(queue["metadata"].get("name"))], float(status.get(phase) or 0))
            yield family
        try:
            jobs, _ = store.list(JOBS)
        except StoreError:
            jobs = []
        finished: dict[str, dict[tuple[str, str], int]] = {"Completed": {}, "Failed": {}}
        for job in jobs:
            job_phase = ((job.get("status") or {}).get("state") or {}).get("phase")
            by_job = finished.get(str(job_phase))
            if by_job is not None:
                key = (str(job["metadata"].get("name")), str((job.get("spec") or {}).get("queue") or "default"))
                by_job[key] = by_job.get(key, 0) + 1
        for job_phase, by_job in finished.items():
            jobs_family = UnknownMetricFamily(PREFIX + f"job_{job_phase.lower()}_phase_count",
                                              f"Number of job {job_phase.lower()} phase",
                                              labels=["job_name", "queue_name"])
            for (job_name, queue_name), n in sorted(by_job.items()):
                jobs_family.add_metric([job_name, queue_name], float(n))
            yield jobs_family


def _resource_families(name: str, what: str, per_queue: dict[str, dict[str, float]]) -> Iterator[Metric]:
    cpu = GaugeMetricFamily(PREFIX + f"{name}_milli_cpu", f"{what} CPU count for one queue", labels=["queue_name"])
    memory = GaugeMetricFamily(PREFIX + f"{name}_memory_bytes", f"{what} memory for one queue", labels=["queue_name"])
    scalar = GaugeMetricFamily(PREFIX + f"{name}_scalar_resources", f"{what} scalar resources for one queue",
                               labels=["queue_name", "resource"])
    for queue, values in sorted(per_queue.items()):
        finite = {n: v for n, v in values.items() if v != float("inf")}
        if "cpu" in finite:
            cpu.add_metric([queue], finite["cpu"])
        if "memory" in finite:
            memory.add_metric([queue], finite["memory"])
        for resource, v in sorted(finite.items()):
            if resource not in ("cpu", "memory"):
                scalar.add_metric([queue, resource], v)
    yield cpu
    yield memory
    yield scalar
