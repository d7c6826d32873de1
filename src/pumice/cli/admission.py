"""``pumice admission``: Volcano's admission webhooks as an HTTPS webhook server for a cluster.

``pumice admission serve`` is pumice's vc-webhook-manager (flags named as Volcano's); ``pumice admission
configurations`` prints the Mutating/ValidatingWebhookConfigurations it registers (``deploy/`` carries them).
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from pumice.api import GenericObject, dump_yaml
from pumice.client import ClientError

__all__ = ["app"]

app = typer.Typer(help="Volcano's admission webhooks as an HTTPS webhook server.", no_args_is_help=True)

_Kubeconfig = Annotated[str | None, typer.Option("--kubeconfig", help="kubeconfig (default: in-cluster, then the "
                                                                     "usual search)")]
_Context = Annotated[str | None, typer.Option("--context", help="kubeconfig context")]
_Url = Annotated[str | None, typer.Option("--webhook-url", help="Base URL the API server calls (https://HOST:PORT)")]
_Namespace = Annotated[str | None, typer.Option("--webhook-namespace", help="Namespace of the webhook Service")]
_Service = Annotated[str | None, typer.Option("--webhook-service-name", help="Name of the webhook Service")]
_ServicePort = Annotated[int, typer.Option("--webhook-service-port", help="Port of the webhook Service")]
_Enabled = Annotated[str | None, typer.Option("--enabled-admission",
                                              help="Comma-separated webhook paths to register (default: Volcano's "
                                                   "chart's: /jobs/mutate,/jobs/validate,/podgroups/validate,"
                                                   "/queues/mutate,/queues/validate)")]
_FailurePolicy = Annotated[str, typer.Option("--failure-policy", help="Fail (Volcano's) or Ignore")]


def _endpoint(url: str | None, namespace: str | None, service: str | None, port: int):  # type: ignore[no-untyped-def]
    from pumice.webhooks import Endpoint

    if url and service:
        raise ValueError("give --webhook-url or --webhook-service-name, not both")
    if service:
        return Endpoint.service(namespace or "default", service, port)
    if url:
        return Endpoint(url=url)
    return None


def _fail(message: str, code: int = 2) -> typer.Exit:
    print(f"error: {message}", file=sys.stderr)
    return typer.Exit(code)


@app.command("serve")
def serve(
    kubeconfig: _Kubeconfig = None,
    context: _Context = None,
    listen_address: Annotated[str, typer.Option("--listen-address", help="Address to listen on")] = "0.0.0.0",
    port: Annotated[int, typer.Option("--port", help="Port to listen on")] = 8443,
    webhook_url: _Url = None,
    webhook_namespace: _Namespace = None,
    webhook_service_name: _Service = None,
    webhook_service_port: _ServicePort = 443,
    enabled_admission: _Enabled = None,
    cert_dir: Annotated[Path | None, typer.Option("--cert-dir", help="Keep the CA and serving certificate here "
                                                                     "(default: made anew in a private temporary "
                                                                     "directory)")] = None,
    failure_policy: _FailurePolicy = "Fail",
    register: Annotated[bool, typer.Option("--register/--no-register",
                                           help="Create/update the webhook configurations")] = True,
) -> None:
    """Serve the webhooks over HTTPS and register them with the cluster (until interrupted)."""
    from pumice.webhooks.server import AdmissionServer, cluster_client

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        endpoint = _endpoint(webhook_url, webhook_namespace, webhook_service_name, webhook_service_port)
        client = cluster_client(kubeconfig, context)
        server = AdmissionServer(client, host=listen_address, port=port, endpoint=endpoint,
                                 enabled=enabled_admission, cert_dir=cert_dir, failure_policy=failure_policy,
                                 register=register)
    except (ValueError, ClientError) as err:
        raise _fail(str(err)) from None
    try:
        server.start()
    except (ClientError, RuntimeError, OSError) as err:
        raise _fail(f"the admission server did not start: {err}", 1) from None
    print(f"admission webhooks serving at {server.url} for {client.server}", file=sys.stderr)

    def _stop(signum: int, frame: object) -> None:
        server.stop()

    signal.signal(signal.SIGTERM, _stop)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()


@app.command("configurations")
def configurations(
    webhook_url: _Url = None,
    webhook_namespace: _Namespace = None,
    webhook_service_name: _Service = None,
    webhook_service_port: _ServicePort = 443,
    enabled_admission: _Enabled = None,
    failure_policy: _FailurePolicy = "Fail",
    output: Annotated[str, typer.Option("--output", "-o", help="yaml (documents) or json (a v1 List)")] = "yaml",
) -> None:
    """Print the webhook configurations (without CA bundle: the server fills it in when it starts)."""
    from pumice.webhooks import configurations as make
    from pumice.webhooks import enabled_webhooks

    if output not in ("yaml", "json"):
        raise _fail(f"--output must be yaml or json, not {output!r}")
    try:
        endpoint = _endpoint(webhook_url, webhook_namespace, webhook_service_name, webhook_service_port)
        if endpoint is None:
            raise ValueError("give --webhook-url or --webhook-service-name")
        hooks = enabled_webhooks(enabled_admission)
        if failure_policy not in ("Fail", "Ignore"):
            raise ValueError(f"--failure-policy must be Fail or Ignore, not {failure_policy!r}")
    except ValueError as err:
        raise _fail(str(err)) from None
    objects = make(hooks, endpoint, None, failure_policy=failure_policy)
    if output == "json":
        sys.stdout.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n")
    else:
        sys.stdout.write(dump_yaml([GenericObject.model_validate(obj) for obj in objects]))
