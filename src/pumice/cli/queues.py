"""``pumice queue create|delete|operate|list|get``: vcctl's queue verbs, flags and columns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Annotated

import typer

from pumice.api.resources import PODGROUPS, QUEUES
from pumice.cli.jobs import create_command
from pumice.cli.tables import print_table
from pumice.cli.toolkit import (
    Context,
    Kubeconfig,
    Obj,
    Server,
    UsageError,
    client,
    failures,
    name_of,
    nothing_found,
    parse_resources,
)
from pumice.client import KubeClient

app = typer.Typer(help="Volcano queues: create, delete, operate (open/close/update), list, get.",
                  no_args_is_help=True)

QUEUE_API = "scheduling.volcano.sh/v1beta1"

Name = Annotated[str, typer.Option("--name", "-n", help="queue name")]
PHASES = ("Inqueue", "Pending", "Running", "Unknown", "Completed")


def podgroup_counts(kc: KubeClient) -> Counter[tuple[str, str]]:
    """``(queue, phase) -> number of PodGroups``, counted client-side like vcctl (status counters are gone)."""
    counts: Counter[tuple[str, str]] = Counter()
    for pg in kc.list(PODGROUPS, all_namespaces=True):
        queue = str((pg.get("spec") or {}).get("queue") or "default")
        phase = str((pg.get("status") or {}).get("phase") or "Pending")
        counts[(queue, phase)] += 1
    return counts


def list_columns(counts: Counter[tuple[str, str]]) -> tuple[list[str], Callable[[Obj], list[str]]]:
    headers = ["Name", "Weight", "State", "Parent", *PHASES]

    def row(q: Obj) -> list[str]:
        spec, status = q.get("spec") or {}, q.get("status") or {}
        name = name_of(q)
        parent = spec.get("parent") or ("" if name == "root" else "root")
        return [name, str(spec.get("weight", 1)), str(status.get("state") or "Open"), str(parent),
                *(str(counts.get((name, p), 0)) for p in PHASES)]

    return headers, row


@app.command("create")
def create(
    name: Annotated[str, typer.Option("--name", "-n", help="queue name")] = "test",
    weight: Annotated[int, typer.Option("--weight", "-w", help="share weight (1..65535)")] = 1,
    state: Annotated[str, typer.Option("--state", "-S", help="Open or Closed")] = "Open",
    parent: Annotated[str | None, typer.Option("--parent", "-p", help="parent queue (hierarchy)")] = None,
    capability: Annotated[str | None, typer.Option("--capability", "-c", help="hard limit: cpu=8,memory=16Gi")] = None,
    deserved: Annotated[str | None, typer.Option("--deserved", "-d", help="elastic share: cpu=4,memory=8Gi")] = None,
    guarantee: Annotated[str | None, typer.Option("--guarantee", "-g", help="reserved: cpu=2,memory=4Gi")] = None,
    priority: Annotated[int | None, typer.Option("--priority", help="queue priority")] = None,
    reclaimable: Annotated[bool | None, typer.Option("--reclaimable/--no-reclaimable",
                                                     help="may others reclaim from it")] = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Create a queue."""
    with failures():
        if not 1 <= weight <= 65535:
            raise UsageError(f"--weight {weight}: must be between 1 and 65535")
        if state not in ("Open", "Closed"):
            raise UsageError(f"--state {state}: must be Open or Closed")
        spec: Obj = {"weight": weight}
        for key, value, flag in (("capability", capability, "--capability"), ("deserved", deserved, "--deserved")):
            parsed = parse_resources(value, flag)
            if parsed:
                spec[key] = parsed
        parsed = parse_resources(guarantee, "--guarantee")
        if parsed:
            spec["guarantee"] = {"resource": parsed}
        if parent:
            spec["parent"] = parent
        if priority is not None:
            spec["priority"] = priority
        if reclaimable is not None:
            spec["reclaimable"] = reclaimable
        queue = {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec,
                 "status": {"state": state}}
        kc = client(kubeconfig, server, context)
        kc.create(QUEUES, queue)
        print(f"create queue {name} successfully")


@app.command("delete")
def delete(
    name: Name,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Delete a queue."""
    with failures():
        kc = client(kubeconfig, server, context)
        kc.delete(QUEUES, name)
        print(f"delete queue {name} successfully")


@app.command("operate")
def operate(
    name: Name,
    action: Annotated[str, typer.Option("--action", "-a", help="open, close or update")],
    weight: Annotated[int, typer.Option("--weight", "-w", help="new weight (update)")] = 0,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Open or close a queue (a Command OpenQueue/CloseQueue), or update its weight."""
    with failures():
        if action not in ("open", "close", "update"):
            raise UsageError(f"action {action} invalid, valid actions are open, close and update")
        if action == "update" and weight <= 0:
            raise UsageError(f"when update queue {name}, weight must be specified, the value must be greater than 0")
        kc = client(kubeconfig, server, context)
        if action == "update":
            kc.patch(QUEUES, name, {"spec": {"weight": weight}})
            print(f"update queue {name}: weight {weight}")
            return
        queue = kc.get(QUEUES, name)
        verb = "OpenQueue" if action == "open" else "CloseQueue"
        cmd = create_command(kc, queue, verb, "default")
        print(f"{action} queue {name}: {verb} requested (command.bus.volcano.sh/{name_of(cmd)})")


@app.command("list")
def list_queues(
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """List queues with their PodGroup counts per phase."""
    with failures():
        kc = client(kubeconfig, server, context)
        queues = sorted(kc.list(QUEUES), key=name_of)
        if not queues:
            nothing_found(None)
            return
        headers, row = list_columns(podgroup_counts(kc))
        print_table(headers, [row(q) for q in queues])


@app.command("get")
def get(
    name: Name,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Show one queue (one row)."""
    with failures():
        kc = client(kubeconfig, server, context)
        queue = kc.get(QUEUES, name)
        headers, row = list_columns(podgroup_counts(kc))
        print_table(headers, [row(queue)])
