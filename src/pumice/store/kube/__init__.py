"""``pumice.store.kube``: the store protocol over a real Kubernetes API server (``pumice run``).

``connect(kubeconfig, context)`` (or ``in_cluster()``) gives a ``Connection``; ``KubeStore(connection)`` serves
the scheduler, the controllers and the simulated kubelets from list+watch informers, writes through a
rate-limited, retrying aiohttp client, and pipelines bindings. See ``store.py`` for the semantics.
"""

from .connection import Connection, ConnectionError_, from_kubeconfig, in_cluster
from .http import ApiClient, ApiFailure
from .informer import Informer
from .ratelimit import TokenBucket
from .store import KubeStore

__all__ = [
    "ApiClient",
    "ApiFailure",
    "Connection",
    "ConnectionError_",
    "Informer",
    "KubeStore",
    "TokenBucket",
    "from_kubeconfig",
    "in_cluster",
]
