"""``AdmissionServer``: Volcano's webhooks served over HTTPS to one API server, registered with it.

Start-up, as Volcano's webhook manager: a serving certificate signed by a CA of its own (made in
``cert_dir``, or a private temporary directory), uvicorn on the listen address, then the
Mutating/ValidatingWebhookConfigurations created or pointed at this server with the CA bundle. Stopping
leaves the configurations in place (``failurePolicy: Fail``: with no webhook server, Volcano's objects are
refused, as with Volcano), unless ``stop(unregister=True)``.

``pumice admission serve`` runs one; ``pumice run --components admission`` starts one beside the other
components::

    server = AdmissionServer(KubeClient(load_config(kubeconfig)), host="127.0.0.1", port=8443).start()
    ...
    server.stop()
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pumice.client import KubeClient, load_config, load_in_cluster
from pumice.server.runner import ServerThread
from pumice.server.tls import LOOPBACK_HOSTS, TlsFiles, ensure_certificates

from .admit import WEBHOOKS, Webhook, enabled_webhooks
from .app import create_app
from .reader import ApiReader
from .registration import Endpoint, configurations, register, unregister

__all__ = ["DEFAULT_PORT", "AdmissionServer", "cluster_client"]

log = logging.getLogger("pumice.webhooks")
#: Volcano's webhook manager listens on 8443.
DEFAULT_PORT = 8443


def cluster_client(kubeconfig: str | None = None, context: str | None = None) -> KubeClient:
    """A client of the cluster: the kubeconfig given, else in a pod its service account, else the usual
    kubeconfig search (``$KUBECONFIG``, ``~/.kube/config``, ...)."""
    if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST") \
            and not os.environ.get("KUBECONFIG"):
        return KubeClient(load_in_cluster())
    return KubeClient(load_config(kubeconfig, context=context))


def _is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return host == ""


class AdmissionServer:
    """The webhook server of one API server (``client``).

    ``endpoint`` is where the API server calls it: a Service (in a cluster) or a URL; by default
    ``https://HOST:PORT`` of the listen address (which must then name a host, not ``0.0.0.0``).
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        endpoint: Endpoint | None = None,
        enabled: str | Sequence[str] | None = None,
        cert_dir: str | Path | None = None,
        failure_policy: str = "Fail",
        register: bool = True,
    ) -> None:
        if failure_policy not in ("Fail", "Ignore"):
            raise ValueError(f"failurePolicy must be Fail or Ignore, not {failure_policy!r}")
        self.client = client
        self.host = host
        self.hooks: tuple[Webhook, ...] = enabled_webhooks(
            enabled if enabled is None or isinstance(enabled, str) else tuple(enabled)
        )
        self.failure_policy = failure_policy
        self.register_webhooks = register
        self._cert_dir = Path(cert_dir) if cert_dir is not None else None
        self._temp_dir: str | None = None
        self._thread: ServerThread | None = None
        self._port = port
        if endpoint is None and _is_unspecified(host):
            raise ValueError(f"listening on {host or 'all addresses'}: say where the API server calls the webhooks "
                             "(a webhook URL or Service)")
        self._endpoint = endpoint
        self.tls: TlsFiles | None = None

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, context: str | None = None, **kwargs: object
                        ) -> AdmissionServer:
        """A server for the API server of a kubeconfig (see :func:`cluster_client`)."""
        return cls(cluster_client(kubeconfig, context), **kwargs)  # type: ignore[arg-type]

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is not None:
            return self._endpoint
        host = f"[{self.host}]" if ":" in self.host else self.host
        return Endpoint(url=f"https://{host}:{self.port}")

    @property
    def port(self) -> int:
        return self._thread.port if self._thread is not None else self._port

    @property
    def url(self) -> str:
        """Where it listens (``https://HOST:PORT``)."""
        if self._thread is None:
            raise RuntimeError("the admission server is not started")
        return self._thread.url

    def configurations(self) -> list[dict[str, object]]:
        """The webhook configurations it registers (with its CA bundle once started)."""
        ca = self.tls.ca.read_bytes() if self.tls is not None else None
        return configurations(self.hooks, self.endpoint, ca, failure_policy=self.failure_policy)

    def start(self) -> AdmissionServer:
        """Make the certificate, listen, and register the webhooks; returns once it serves."""
        directory = self._cert_dir
        if directory is None:
            self._temp_dir = tempfile.mkdtemp(prefix="pumice-admission-")  # 0700
            directory = Path(self._temp_dir)
        names = self._endpoint.hosts() if self._endpoint is not None else [self.host]
        self.tls = ensure_certificates(directory, list(dict.fromkeys([*names, *LOOPBACK_HOSTS])),
                                       common_name="pumice-admission")
        # A free port is chosen now (port 0): the default endpoint's URL names it.
        self._thread = ServerThread(create_app(ApiReader(self.client), WEBHOOKS), host=self.host, port=self._port,
                                    tls=self.tls)
        try:
            self._thread.start()
            if self.register_webhooks:
                register(self.client, self.configurations())
        except BaseException:
            self.stop()
            raise
        log.info("admission webhooks %s serving at %s for %s", ", ".join(h.path for h in self.hooks), self.url,
                 self.client.server)
        return self

    def stop(self, *, unregister_webhooks: bool = False) -> None:
        """Stop serving (and delete the configurations with ``unregister_webhooks``)."""
        if unregister_webhooks:
            unregister(self.client, self.hooks)
        if self._thread is not None:
            self._thread.stop()
        if self._temp_dir is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self._temp_dir)
            self._temp_dir = None

    def wait(self) -> None:
        """Block until the server stops."""
        if self._thread is not None:
            self._thread.wait()

    def __enter__(self) -> AdmissionServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
