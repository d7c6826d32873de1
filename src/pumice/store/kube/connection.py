"""Where the API server is and how to talk to it: URL, TLS context and auth headers.

Reading a kubeconfig (contexts, client certificates, CA data, token files, exec and auth-provider plugins)
or the in-cluster service account is left to the official ``kubernetes`` package; this module turns its
``Configuration`` into what an aiohttp session needs. Auth headers are refreshed now and then, so rotating
service-account tokens and exec-plugin tokens keep working.
"""

from __future__ import annotations

import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pumice.store.errors import StoreError

__all__ = ["Connection", "ConnectionError_", "from_kubeconfig", "in_cluster"]

#: How long auth headers are reused before asking the ``kubernetes`` configuration again (token refresh).
AUTH_REFRESH = 60.0
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


class ConnectionError_(StoreError):
    """The API server cannot be reached or the configuration cannot be used (the message says which)."""

    code = 503
    reason = "ServiceUnavailable"


@dataclass
class Connection:
    """One API server: its base URL, a TLS context (None for plain HTTP) and a source of auth headers."""

    server: str
    ssl: ssl.SSLContext | None = None
    auth: Callable[[], dict[str, str]] | None = None
    source: str = ""
    namespace: str = "default"
    _cached: tuple[float, dict[str, str]] = field(default=(0.0, {}), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def headers(self) -> dict[str, str]:
        """Auth headers, asked of the configuration at most once a minute."""
        if self.auth is None:
            return {}
        with self._lock:
            at, headers = self._cached
            now = time.monotonic()
            if not headers or now - at > AUTH_REFRESH:
                headers = dict(self.auth())
                self._cached = (now, headers)
            return headers


def _ssl_context(cfg: Any) -> ssl.SSLContext | None:
    if not str(cfg.host or "").startswith("https"):
        return None
    if cfg.verify_ssl:
        context = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
        server_name = getattr(cfg, "tls_server_name", None) or getattr(cfg, "assert_hostname", None)
        if server_name is False:
            context.check_hostname = False
    else:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    return context


def _auth_of(cfg: Any) -> Callable[[], dict[str, str]]:
    def auth() -> dict[str, str]:
        headers: dict[str, str] = {}
        for setting in cfg.auth_settings().values():  # calls the token refresh hook when there is one
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    return auth


def from_kubeconfig(path: str | os.PathLike[str] | None = None, context: str | None = None) -> Connection:
    """A connection from a kubeconfig (``None``: ``$KUBECONFIG``, then ``~/.kube/config``) and context."""
    from pumice.client.config import load_config
    from pumice.client.errors import ClientError

    try:
        config = load_config(path, context=context)
    except ClientError as err:
        raise ConnectionError_(str(err)) from None
    if context and config.context != context:
        raise ConnectionError_(f"kubeconfig {config.source}: no context named {context!r}")
    cfg = config.kube
    if cfg is None:  # pragma: no cover - the ``kubernetes`` package is a dependency
        raise ConnectionError_("the `kubernetes` package is needed to read a kubeconfig")
    try:
        context_ssl = _ssl_context(cfg)
    except (OSError, ssl.SSLError) as err:
        raise ConnectionError_(f"kubeconfig {config.source}: TLS files cannot be used: {err}") from None
    return Connection(config.server, context_ssl, _auth_of(cfg), source=config.source, namespace=config.namespace)


def in_cluster() -> Connection:
    """A connection from the pod's service account (``KUBERNETES_SERVICE_HOST``, the mounted token and CA)."""
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import load_incluster_config

    cfg = Configuration()
    try:
        load_incluster_config(client_configuration=cfg, try_refresh_token=True)
    except ConfigException as err:
        raise ConnectionError_(f"in-cluster configuration: {err}") from None
    namespace = "default"
    ns_file = os.path.join(os.path.dirname(SERVICE_ACCOUNT_TOKEN), "namespace")
    if os.path.isfile(ns_file):
        with open(ns_file, encoding="utf-8") as fh:
            namespace = fh.read().strip() or namespace
    return Connection(str(cfg.host).rstrip("/"), _ssl_context(cfg), _auth_of(cfg), source="in-cluster",
                      namespace=namespace)
