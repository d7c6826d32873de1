"""What the dashboard shows, one module per page, aggregated from a store's wire-format objects.

Every page function takes a ``Store`` (or a ``StoreMirror`` of one) and returns plain JSON-ready data; nothing
here knows about HTTP. Shared by the pages: ``Snapshot`` (one read, with its indexes), ``objects`` (accessors),
``resources`` (numbers per dimension: ``cpu`` in cores, ``memory`` in bytes, ``gpu`` for every ``*/gpu``
resource, ``pods`` as counts) and ``HyperNodeTree`` (membership as the scheduler sees it).
"""

from .jobs import job_detail, jobs
from .nodes import nodes
from .overview import overview
from .podgroups import podgroups
from .pods import pods
from .queues import queues
from .resources import DIMENSIONS, parse_resources, pod_requests
from .snapshot import RESOURCES, Snapshot, Source
from .topology import topology

__all__ = [
    "DIMENSIONS",
    "RESOURCES",
    "Snapshot",
    "Source",
    "job_detail",
    "jobs",
    "nodes",
    "overview",
    "parse_resources",
    "pod_requests",
    "podgroups",
    "pods",
    "queues",
    "topology",
]
