"""Prometheus metrics with Volcano's names, per cluster (``prometheus_client``).

``ClusterMetrics`` holds a cluster's registry: its scheduler records each cycle into it (cheaply: see
``histogram``), and a scrape reads the rest from the last cycle and the store. ``metrics_route`` adds
``/metrics`` to an app; ``serve_metrics`` serves it on a port of its own.
"""

from .http import metrics_app, metrics_route, serve_metrics
from .registry import ClusterMetrics
from .scheduler import LATENCY_BUCKETS, SchedulerMetrics

__all__ = ["LATENCY_BUCKETS", "ClusterMetrics", "SchedulerMetrics", "metrics_app", "metrics_route", "serve_metrics"]
