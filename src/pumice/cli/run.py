"""``pumice run``: the scheduler, the controllers and fake nodes on a real Kubernetes cluster.

Connects with a kubeconfig (``--kubeconfig``/``--context``, else ``$KUBECONFIG`` or ``~/.kube/config``) or, in
a pod, with its service account; checks the server and Volcano's CRDs; then runs the chosen components on a
``KubeStore`` (see ``pumice.store.kube``) until SIGINT/SIGTERM, or until a component loses its Lease
(``--leader-elect``), as Volcano's components exit then.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["REQUIRED", "run"]

log = logging.getLogger("pumice.run")

#: The resources each component reads or writes: checked at start, so a missing CRD is one clear line.
REQUIRED: dict[str, tuple[str, ...]] = {
    "scheduler": ("pods", "nodes", "podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh",
                  "priorityclasses.scheduling.k8s.io", "hypernodes.topology.volcano.sh", "events"),
    "controllers": ("pods", "nodes", "jobs.batch.volcano.sh", "podgroups.scheduling.volcano.sh",
                    "queues.scheduling.volcano.sh", "commands.bus.volcano.sh", "hypernodes.topology.volcano.sh",
                    "events"),
    "nodes": ("pods", "nodes"),
    "descheduler": ("pods", "nodes", "events"),
}
NO_WEBHOOK_ADDRESS = ("say where the API server reaches the webhooks: --webhook-url, --webhook-service-name or "
                      "--webhook-listen-address (127.0.0.1 is the default only for an API server on loopback)")


def _fail(message: str, code: int) -> typer.Exit:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return typer.Exit(code)


def _components(text: str | None) -> tuple[str, ...]:
    from pumice.runtime.components import COMPONENTS, DEFAULT_COMPONENTS

    if text is None:
        return tuple(DEFAULT_COMPONENTS)
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    if not chosen:
        raise _fail("--components: name at least one of " + ", ".join(COMPONENTS), 2)
    for c in chosen:
        if c not in COMPONENTS:
            raise _fail(f"--components: unknown component {c!r} (known: {', '.join(COMPONENTS)})", 2)
    return tuple(dict.fromkeys(chosen))


def _loopback(server: str) -> bool:
    from urllib.parse import urlsplit

    host = urlsplit(server).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _admission(kubeconfig: Path | None, context: str | None, server: str, explicit: bool, options: dict[str, Any]
               ) -> Any:
    """The webhook server of ``--components admission`` (started), or None when the default components cannot
    serve it (a remote API server and no address given)."""
    from pumice.client.errors import ClientError
    from pumice.webhooks import AdmissionServer, Endpoint, cluster_client

    url, namespace, service = options["url"], options["namespace"], options["service"]
    if url and service:
        raise _fail("give --webhook-url or --webhook-service-name, not both", 2)
    endpoint = Endpoint.service(namespace or "default", service, options["service_port"]) if service else \
        Endpoint(url=url) if url else None
    host = options["listen"] or ("127.0.0.1" if endpoint is None and _loopback(server) else "0.0.0.0")
    if endpoint is None and host == "0.0.0.0":
        if explicit:
            raise _fail(f"admission: {NO_WEBHOOK_ADDRESS}", 2)
        print(f"pumice run: admission left out: {NO_WEBHOOK_ADDRESS}", file=sys.stderr, flush=True)
        return None
    try:
        admission = AdmissionServer(cluster_client(str(kubeconfig) if kubeconfig else None, context), host=host,
                                    port=options["port"], endpoint=endpoint)
        return admission.start()
    except (ValueError, ClientError, RuntimeError, OSError) as err:
        raise _fail(f"admission: the webhook server did not start: {err}", 1) from None


def _connect(kubeconfig: Path | None, context: str | None) -> Any:
    from pumice.store.kube import ConnectionError_, from_kubeconfig, in_cluster

    try:
        if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST") \
                and not os.environ.get("KUBECONFIG"):
            return in_cluster()
        if kubeconfig is not None and not kubeconfig.is_file():
            raise ConnectionError_(f"--kubeconfig {kubeconfig}: no such file")
        return from_kubeconfig(str(kubeconfig) if kubeconfig is not None else None, context)
    except ConnectionError_ as err:
        raise _fail(err.message, 2) from None


def descheduler_policy(path: Path | None, interval: str) -> Any:
    """The descheduler's policy from ``--descheduler-policy`` and ``--descheduling-interval`` (exit 2 if wrong)."""
    import yaml

    from pumice.api.reader import InputError, load_yaml
    from pumice.descheduler import DeschedulerPolicy, PolicyError, parse_policy
    from pumice.nodes.duration import parse_duration

    try:
        seconds = parse_duration(interval)
    except ValueError as err:
        raise _fail(f"--descheduling-interval: {err}", 2) from None
    if seconds <= 0:
        raise _fail("--descheduling-interval must be positive", 2)
    if path is None:
        return DeschedulerPolicy(interval=seconds)
    try:
        return parse_policy(load_yaml(path.read_text()), str(path), interval=seconds)
    except (OSError, InputError, PolicyError, ValueError, yaml.YAMLError) as err:
        raise _fail(f"--descheduler-policy {path}: {err}" if not str(err).startswith(str(path)) else str(err),
                    2) from None


def _api_getter(kubeconfig: Path | None, context: str | None) -> Any:
    """``get_json(path)`` on the cluster (the metrics API), connecting on first use."""
    client: list[Any] = []

    def get_json(path: str) -> Any:
        if not client:
            from pumice.client import KubeClient, load_config, load_in_cluster

            in_cluster = kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST") \
                and not os.environ.get("KUBECONFIG")
            cfg = load_in_cluster() if in_cluster else load_config(str(kubeconfig) if kubeconfig else None, context)
            client.append(KubeClient(cfg))
        return client[0].get_json(path)

    return get_json


def _listen_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``:PORT`` listens on every address, as Volcano's ``--listen-address``)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise _fail(f"--listen-address {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8080 or :8080", 2)
    return host.strip("[]") or "0.0.0.0", int(port)


#: Volcano's descheduler runs every ten minutes unless told otherwise.
DESCHEDULING_INTERVAL = "10m"

#: Stopping: how long the binds and events still queued get to reach the API server (with the components' own
#: bounds, ``pumice.runtime.components.STOP_STEPS``, the whole stop stays under a pod's 30 s grace period).
STOP_FLUSH = 5.0

#: How long a thread holding the GIL keeps it while another waits (Python's default: 5 ms). The API
#: client's thread gives the GIL up at every socket call and would then wait out the scheduler thread's
#: whole slice before its next request: binds posted during a session went at half the API server's pace.
SWITCH_INTERVAL = 0.0005


def run(
    kubeconfig: Annotated[Path | None, typer.Option("--kubeconfig", help="kubeconfig of the cluster")] = None,
    context: Annotated[str | None, typer.Option("--context", help="kubeconfig context to use")] = None,
    components: Annotated[
        str | None,
        typer.Option("--components", help="Comma-separated: scheduler, controllers, admission, nodes, "
                                          "descheduler (default: scheduler, controllers, admission)"),
    ] = None,
    descheduler_policy_file: Annotated[
        Path | None, typer.Option("--descheduler-policy",
                                  help="descheduler: Volcano's DeschedulerPolicy YAML (LoadAware, DefaultEvictor)")
    ] = None,
    descheduling_interval: Annotated[
        str, typer.Option("--descheduling-interval", help="descheduler: how often it runs (Go duration)")
    ] = DESCHEDULING_INTERVAL,
    config: Annotated[
        Path | None, typer.Option("--config", help="volcano-scheduler.conf, re-read when it changes")] = None,
    discover_topology: Annotated[
        Path | None,
        typer.Option("--discover-topology", help="Label discovery config: keep HyperNodes from the Nodes' labels"),
    ] = None,
    leader_elect: Annotated[
        bool, typer.Option("--leader-elect", help="Run each component only while holding its Lease")] = False,
    lock_namespace: Annotated[
        str, typer.Option("--lock-object-namespace", help="Namespace of the Leases")] = "volcano-system",
    time_scale: Annotated[
        float, typer.Option("--time-scale", help="Cluster seconds per wall second (fake nodes' pod durations)")
    ] = 1.0,
    qps: Annotated[float, typer.Option("--qps", help="Client-side requests per second")] = 2000.0,
    burst: Annotated[int, typer.Option("--burst", help="Client-side burst of requests")] = 2000,
    scheduler_name: Annotated[
        list[str] | None,
        typer.Option("--scheduler-name", help="Schedule pods with this schedulerName (repeatable; default volcano)"),
    ] = None,
    schedule_period: Annotated[
        float, typer.Option("--schedule-period", help="Seconds between scheduling cycles")] = 1.0,
    webhook_listen_address: Annotated[
        str | None, typer.Option("--webhook-listen-address", help="admission: address to listen on")] = None,
    webhook_port: Annotated[int, typer.Option("--webhook-port", help="admission: port to listen on")] = 8443,
    webhook_url: Annotated[
        str | None, typer.Option("--webhook-url", help="admission: base URL the API server calls")] = None,
    webhook_namespace: Annotated[
        str | None, typer.Option("--webhook-namespace", help="admission: namespace of the webhook Service")] = None,
    webhook_service_name: Annotated[
        str | None, typer.Option("--webhook-service-name", help="admission: name of the webhook Service")] = None,
    webhook_service_port: Annotated[
        int, typer.Option("--webhook-service-port", help="admission: port of the webhook Service")] = 443,
    listen_address: Annotated[
        str | None,
        typer.Option("--listen-address", help="Serve Prometheus /metrics on HOST:PORT (Volcano's :8080; port 0: "
                                              "a free one; default: not served)"),
    ] = None,
) -> None:
    """Run pumice's scheduler, controllers (and fake nodes) on a Kubernetes cluster."""
    # imported here only what is needed before the first lists are sent (see below): the rest meanwhile
    from pumice.api.resources import SCHEDULER_WATCHED
    from pumice.clock import WallClock
    from pumice.gctune import RARE
    from pumice.store import NotFound, StoreError
    from pumice.store.kube import KubeStore

    gc.set_threshold(*RARE)  # a scheduler's state is large and long-lived: see pumice.gctune
    sys.setswitchinterval(SWITCH_INTERVAL)
    chosen = _components(components)
    policy = None  # Volcano's defaults; flags given for a descheduler are checked even when it does not run
    if "descheduler" in chosen or descheduler_policy_file is not None or descheduling_interval != DESCHEDULING_INTERVAL:
        policy = descheduler_policy(descheduler_policy_file, descheduling_interval)
    if time_scale <= 0:
        raise _fail("--time-scale must be positive", 2)
    if qps <= 0 or burst < 1:
        raise _fail("--qps must be positive and --burst at least 1", 2)
    if schedule_period <= 0:
        raise _fail("--schedule-period must be positive", 2)
    metrics_at = _listen_address(listen_address) if listen_address is not None else None
    names = tuple(dict.fromkeys(scheduler_name or ["volcano"]))
    if any(not n.strip() for n in names):
        raise _fail("--scheduler-name: empty name", 2)
    conf_file: Any = None
    discovery: Any = None
    if config is not None or discover_topology is not None:
        from pumice.runtime.schedconf import ConfFile
        from pumice.scheduler import ConfError
        from pumice.topology_discovery import DiscoveryConfigError, load_discovery_config

        try:
            conf_file = ConfFile(config) if config is not None else None
            discovery = load_discovery_config(discover_topology) if discover_topology is not None else None
        except (ConfError, DiscoveryConfigError) as err:
            raise _fail(str(err), 2) from None
    measured = conf_file.conf.metrics if conf_file is not None else None
    if measured is not None and measured.type == "simulated" and "nodes" not in chosen:
        raise _fail(f"--config {config}: metrics.type simulated reads the fake nodes' kubelet: add nodes to "
                    "--components (or use type kubernetes, the cluster's metrics API)", 2)
    connection = _connect(kubeconfig, context)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    store = KubeStore(connection, qps=qps, burst=burst, retry_deadline=60.0)
    if "scheduler" in chosen:  # the API server prepares the scheduler's first lists while the rest is imported
        store.start_informers(SCHEDULER_WATCHED)
    try:
        required = sorted({r for c in chosen for r in REQUIRED.get(c, ())})
        version = store.check(required)
        if leader_elect:
            try:
                store.get("namespaces", None, lock_namespace)
            except NotFound:
                raise _fail(f"--lock-object-namespace {lock_namespace}: no such namespace "
                            f"(kubectl create namespace {lock_namespace})", 1) from None
    except StoreError as err:
        store.close(flush_timeout=0)
        raise _fail(err.message, 1) from None
    admission = None
    if "admission" in chosen:
        admission = _admission(kubeconfig, context, connection.server, components is not None, {
            "listen": webhook_listen_address, "port": webhook_port, "url": webhook_url,
            "namespace": webhook_namespace, "service": webhook_service_name, "service_port": webhook_service_port})
        if admission is None:
            chosen = tuple(c for c in chosen if c != "admission")
    metrics, metrics_server = None, None
    if metrics_at is not None:
        from pumice.metrics import ClusterMetrics, serve_metrics

        metrics = ClusterMetrics(store)
        try:
            metrics_server = serve_metrics(metrics, *metrics_at)
        except RuntimeError:  # the port is taken, or the address is not this machine's
            store.close(flush_timeout=0)
            if admission is not None:
                admission.stop()
            raise _fail(f"--listen-address {listen_address}: cannot listen there (address in use or not "
                        "local)", 1) from None
        print(f"pumice run: metrics on {metrics_server.url}/metrics", flush=True)  # type: ignore[attr-defined]
    from pumice.runtime.components import LEASE_NAMES, Components, RunSettings

    settings = RunSettings(components=tuple(c for c in chosen if c != "admission"), scheduler_names=names,
                           conf_file=conf_file, discovery=discovery,
                           leader_elect=leader_elect, lock_namespace=lock_namespace, period=schedule_period,
                           time_scale=time_scale, metrics=metrics.scheduler if metrics is not None else None,
                           get_json=_api_getter(kubeconfig, context), descheduler=policy)
    parts = Components(store, WallClock(time_scale), settings)
    stop = threading.Event()

    def _signal(signum: int, frame: object) -> None:
        stop.set()
        parts.done.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _signal)
    print(f"pumice run: {', '.join(chosen)} on {connection.server} ({version}); scheduler names "
          f"{', '.join(names)}", flush=True)
    parts.start()
    try:
        while not parts.wait(0.5):
            pass
    finally:
        parts.stop()
        store.close(flush_timeout=STOP_FLUSH)
        if admission is not None:
            admission.stop()
        if metrics_server is not None:
            metrics_server.stop()  # type: ignore[attr-defined]
    if parts.lost is not None and not stop.is_set():  # asked to stop: a renewal failing meanwhile is no loss
        raise _fail(f"{parts.lost}: lost its lease {lock_namespace}/{LEASE_NAMES[parts.lost]}: exiting, as "
                    "Volcano's components do, so that only the new leader acts", 1)
    if parts.failure is not None and not stop.is_set():
        raise _fail(parts.failure, 1)
    print("pumice run stopped", flush=True)
