"""``pumice pod list``: vcctl's pod listing (by job or queue), with the node each pod runs on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from pumice.cli.tables import print_table
from pumice.cli.toolkit import (
    Context,
    Kubeconfig,
    Namespace,
    Obj,
    Server,
    age,
    client,
    failures,
    meta,
    name_of,
    nothing_found,
)

app = typer.Typer(help="Pods of Volcano jobs and queues.", no_args_is_help=True)

JOB_NAME = "volcano.sh/job-name"
QUEUE_KEYS = ("volcano.sh/queue-name", "scheduling.volcano.sh/queue-name")


def pod_status(pod: Obj) -> str:
    """kubectl's STATUS column, simplified: Terminating, a container's waiting/terminated reason, or the phase."""
    status = pod.get("status") or {}
    if meta(pod).get("deletionTimestamp"):
        return "Terminating"
    if status.get("reason"):
        return str(status["reason"])
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        for key in ("waiting", "terminated"):
            reason = (state.get(key) or {}).get("reason")
            if reason and reason not in ("Completed",):
                return str(reason)
    phase = str(status.get("phase") or "Pending")
    if phase == "Succeeded":
        return "Completed"
    return phase


def pod_ready(pod: Obj) -> str:
    containers = ((pod.get("spec") or {}).get("containers")) or []
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    return f"{ready}/{len(containers)}"


def pod_restarts(pod: Obj) -> int:
    return sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or [])


def list_columns(wide: bool = False) -> tuple[list[str], Callable[[Obj], list[str]]]:
    headers = ["Name", "Ready", "Status", "Restart", "Age", "Node"]
    if wide:
        headers += ["IP", "Job", "Queue"]

    def row(pod: Obj) -> list[str]:
        m = meta(pod)
        cells = [name_of(pod), pod_ready(pod), pod_status(pod), str(pod_restarts(pod)),
                 age(m.get("creationTimestamp")), str((pod.get("spec") or {}).get("nodeName") or "<none>")]
        if wide:
            cells += [str((pod.get("status") or {}).get("podIP") or "<none>"), job_of(pod) or "", queue_of(pod) or ""]
        return cells

    return headers, row


def job_of(pod: Obj) -> str | None:
    m = meta(pod)
    return (m.get("labels") or {}).get(JOB_NAME) or (m.get("annotations") or {}).get(JOB_NAME)


def queue_of(pod: Obj) -> str | None:
    m = meta(pod)
    for source in (m.get("labels") or {}, m.get("annotations") or {}):
        for key in QUEUE_KEYS:
            if source.get(key):
                return str(source[key])
    return None


@app.command("list")
def list_pods(
    namespace: Namespace = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="all namespaces")] = False,
    job: Annotated[str | None, typer.Option("--job", "-j", help="only pods of this job")] = None,
    queue: Annotated[str | None, typer.Option("--queue", "-q", help="only pods of this queue")] = None,
    wide: Annotated[bool, typer.Option("--wide", "-w", help="also IP, Job, Queue")] = False,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """List pods (Name, Ready, Status, Restart, Age, Node)."""
    with failures():
        kc = client(kubeconfig, server, context)
        ns = None if all_namespaces else (namespace or kc.namespace)
        pods = kc.list("pods", ns, all_namespaces=all_namespaces,
                       label_selector=f"{JOB_NAME}={job}" if job else None)
        if job:
            pods = [p for p in pods if job_of(p) == job]
        if queue:
            pods = [p for p in pods if queue_of(p) == queue]
        if not pods:
            nothing_found(ns)
            return
        pods.sort(key=lambda p: (meta(p).get("namespace") or "", name_of(p)))
        headers, row = list_columns(wide)
        rows = [row(p) for p in pods]
        if all_namespaces:
            headers = ["Namespace", *headers]
            rows = [[str(meta(p).get("namespace") or ""), *r] for p, r in zip(pods, rows, strict=True)]
        print_table(headers, rows)
