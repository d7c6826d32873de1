"""``pumice.server``: a subset of the Kubernetes REST API over a ``pumice.store`` Store, for kubectl & co.

``create_app(store, token=...)`` builds the ASGI app; ``ServerThread`` runs it under uvicorn on loopback;
``load_or_create_token`` / ``write_kubeconfig`` give clients their credentials.
"""

from .app import DEFAULT_BOOKMARK_INTERVAL, DEFAULT_MAX_BODY_BYTES, DEFAULT_WATCH_TIMEOUT, create_app
from .auth import BearerTokenAuth, load_or_create_token, write_kubeconfig
from .connections import ConnectionLimits
from .patch import apply_strategic_merge_patch
from .resources import ApiResource, ResourceIndex
from .runner import ServerThread, free_port
from .tables import human_duration, table_for, wants_table
from .tls import TlsFiles, client_ssl_context, ensure_certificates

__all__ = [
    "DEFAULT_BOOKMARK_INTERVAL",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_WATCH_TIMEOUT",
    "ApiResource",
    "BearerTokenAuth",
    "ConnectionLimits",
    "ResourceIndex",
    "ServerThread",
    "TlsFiles",
    "apply_strategic_merge_patch",
    "client_ssl_context",
    "create_app",
    "ensure_certificates",
    "free_port",
    "human_duration",
    "load_or_create_token",
    "table_for",
    "wants_table",
    "write_kubeconfig",
]
