"""``pumice federation``: the federation as an independent component, and ``explain`` for one job.

``pumice federation --kubeconfig HOST [--config federation.yaml]`` runs the federation against a host API server
(any Kubernetes API server with pumice's CRDs, or ``pumice up``): the host's Clusters name the members, users
submit Volcano Jobs and Queues to the host. ``pumice federation explain JOB`` prints why each member was kept
or rejected for the job, with the plugins' scores, as the federation last decided it.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from .toolkit import Context, Kubeconfig, Namespace, Server, client, failures

__all__ = ["app", "explain_lines"]

app = typer.Typer(help="Run the federation, or explain its choice for a job (docs/federation.md).",
                  no_args_is_help=False)

#: The host resources the federation reads and writes.
HOST_RESOURCES = ("clusters.federation.pumice.io", "jobs.batch.volcano.sh", "queues.scheduling.volcano.sh",
                  "priorityclasses.scheduling.k8s.io", "events")


@app.callback(invoke_without_command=True)
def run(
    ctx: typer.Context,
    kubeconfig: Annotated[str | None, typer.Option("--kubeconfig", "-k", help="kubeconfig of the host")] = None,
    context: Annotated[str | None, typer.Option("--context", help="kubeconfig context of the host")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="federation.yaml (default: built in)")] = None,
    queues: Annotated[
        bool, typer.Option("--queue-controller/--no-queue-controller",
                           help="Keep the host's queues (root/default, Open/Closed) as Volcano's controller does")
    ] = True,
) -> None:
    """Run the federation against the host at KUBECONFIG until stopped (SIGINT/SIGTERM)."""
    if ctx.invoked_subcommand is not None:
        return
    from pumice.clock import WallClock
    from pumice.federation.config import FederationConfigError, default_config, load_config
    from pumice.federation.federation import Federation
    from pumice.federation.host import HostControlPlane
    from pumice.federation.kubeconnect import EmbeddedOrKube
    from pumice.store import StoreError

    try:
        cfg = load_config(config) if config is not None else default_config()
    except FederationConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None
    try:
        from pumice.store.kube import KubeStore, from_kubeconfig  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        print("error: pumice federation needs the Kubernetes store (pumice.store.kube), which this build does not "
              "have; host a federation with `pumice up --federation` instead", file=sys.stderr)
        raise typer.Exit(1) from None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        host = KubeStore(from_kubeconfig(kubeconfig, context))
        host.check(HOST_RESOURCES)
    except StoreError as err:
        print(f"error: host {kubeconfig or '(default kubeconfig)'}: {err.message}", file=sys.stderr)
        raise typer.Exit(1) from None
    clock = WallClock()
    plane = HostControlPlane(host, clock) if queues else None
    federation = Federation(host, clock, cfg, connector=EmbeddedOrKube())
    done = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        done.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    print(f"pumice federation is running against {host.connection.server}", flush=True)
    try:
        while not done.is_set():
            for _ in range(100):
                moved = plane.sync() if plane is not None else False
                moved |= federation.sync()
                if not moved:
                    break
            nxt = federation.next_wakeup()
            done.wait(1.0 if nxt is None else min(1.0, max(0.05, nxt - clock.now())))
    finally:
        federation.close(release=True)
        if plane is not None:
            plane.close()
        host.close()
    print("pumice federation stopped", flush=True)


def explain_lines(job: dict[str, Any]) -> tuple[str, list[list[str]]]:
    """The headline and the rows of ``explain`` for a host Job (its decision annotation)."""
    from pumice.federation import names

    meta = job.get("metadata") or {}
    key = f"{meta.get('namespace')}/{meta.get('name')}"
    text = (meta.get("annotations") or {}).get(names.DECISION)
    if not text:
        return f"job {key}: the federation has not decided anything about it yet", []
    decision = json.loads(text)
    outcome = decision.get("outcome", "?")
    head = f"job {key}: {outcome}"
    if decision.get("cluster"):
        head += f" to {decision['cluster']}"
    if decision.get("reason"):
        head += f" — {decision['reason']}"
    if decision.get("time"):
        head += f" (decided {decision['time']})"
    rows = []
    for v in decision.get("clusters") or []:
        if v.get("kept"):
            scores = ", ".join(f"{k} {s:g}" for k, s in (v.get("scores") or {}).items() if s)
            rows.append([v["cluster"], "kept", "", scores or "-", " / ".join(f"{t:g}" for t in v.get("tiers") or [])])
        else:
            rows.append([v["cluster"], "rejected", v.get("plugin") or "-", v.get("reason") or "", ""])
    return head, rows


@app.command()
def explain(
    job: Annotated[str, typer.Argument(help="The Job on the host (name)")],
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
    output: Annotated[str, typer.Option("--output", "-o", help="table or json")] = "table",
) -> None:
    """Why the federation sent JOB where it did (or why it waits): every member kept or rejected, and the scores."""
    from pumice.federation import names

    if output not in ("table", "json"):
        print(f"error: --output: unknown format {output!r} (use table or json)", file=sys.stderr)
        raise typer.Exit(2)
    with failures():
        kc = client(kubeconfig, server, context)
        obj = kc.get("jobs.batch.volcano.sh", job, namespace or kc.namespace)
    if output == "json":
        text = (obj.get("metadata", {}).get("annotations") or {}).get(names.DECISION)
        sys.stdout.write(json.dumps(json.loads(text) if text else {}, indent=2) + "\n")
        return
    head, rows = explain_lines(obj)
    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(head)
    if rows:
        table = Table(show_header=True, header_style="bold", box=None)
        for col in ("CLUSTER", "VERDICT", "PLUGIN", "REASON / SCORES", "TIER TOTALS"):
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
