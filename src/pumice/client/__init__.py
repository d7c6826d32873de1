"""``pumice.client``: a small synchronous Kubernetes client for the command line.

Kubeconfig loading (auth, TLS) comes from the official ``kubernetes`` package; calls are raw
HTTP with JSON dicts, writes are merge-patches (never read-modify-PUT). Works against
``pumice up`` and any Kubernetes API server with Volcano's CRDs.
"""

from pumice.client.config import ClientConfig, find_kubeconfig, load_config, load_in_cluster
from pumice.client.discovery import FALLBACK, Discovery, Resource
from pumice.client.errors import ApiError, ClientError, ConfigError, ConnectError, UnknownResource
from pumice.client.kube import KubeClient, connect

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
