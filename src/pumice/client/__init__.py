"""``pumice.client``: a small synchronous Kubernetes client for the command line.

Kubeconfig loading (auth, TLS) comes from the official ``kubernetes`` package; calls are raw
HTTP with JSON dicts, writes are merge-patches (never read-modify-PUT). Works against
``pumice up`` and any Kubernetes API server with Volcano's CRDs.

Names are imported on first use (PEP 562): reading a kubeconfig (``pumice run``'s first step) does not pay for
the discovery table, which is built from every API model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pumice.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from pumice.client.config import ClientConfig, find_kubeconfig, load_config, load_in_cluster
    from pumice.client.discovery import FALLBACK, Discovery, Resource
    from pumice.client.errors import ApiError, ClientError, ConfigError, ConnectError, UnknownResource
    from pumice.client.kube import KubeClient, connect

_EXPORTS: dict[str, str] = {
    "ClientConfig": "pumice.client.config",
    "find_kubeconfig": "pumice.client.config",
    "load_config": "pumice.client.config",
    "load_in_cluster": "pumice.client.config",
    "FALLBACK": "pumice.client.discovery",
    "Discovery": "pumice.client.discovery",
    "Resource": "pumice.client.discovery",
    "ApiError": "pumice.client.errors",
    "ClientError": "pumice.client.errors",
    "ConfigError": "pumice.client.errors",
    "ConnectError": "pumice.client.errors",
    "UnknownResource": "pumice.client.errors",
    "KubeClient": "pumice.client.kube",
    "connect": "pumice.client.kube",
}

__all__ = [
    "FALLBACK",
    "ApiError",
    "ClientConfig",
    "ClientError",
    "ConfigError",
    "ConnectError",
    "Discovery",
    "KubeClient",
    "Resource",
    "UnknownResource",
    "connect",
    "find_kubeconfig",
    "load_config",
    "load_in_cluster",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
