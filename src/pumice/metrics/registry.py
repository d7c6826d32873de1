"""``ClusterMetrics``: the metrics of one cluster in a registry of its own.

Not prometheus_client's global registry: several clusters live in one process (tests, simulations side by
side), and each one's numbers must stay its own.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from pumice.store import Store

from .collector import ClusterCollector
from .scheduler import SchedulerMetrics

__all__ = ["ClusterMetrics"]


class ClusterMetrics:
    """A cluster's ``registry`` (scrape it with ``exposition``) and what its scheduler records into."""

    def __init__(self, store: Store | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.scheduler = SchedulerMetrics()
        self.collector = ClusterCollector(self.scheduler, store)
        self.registry.register(self.collector)

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """The current metrics in the format ``accept`` asks for (Prometheus text by default, or
        OpenMetrics), and its content type."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type
