"""``pumice job run|list|view|suspend|resume|delete``: vcctl's job verbs, flags and columns."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from pumice.api import load_file
from pumice.api.resources import COMMANDS, JOBS
from pumice.cli.tables import print_table
from pumice.cli.toolkit import (
    Context,
    Kubeconfig,
    Namespace,
    Obj,
    Server,
    UsageError,
    age,
    client,
    describe_resources,
    failures,
    meta,
    name_of,
    nothing_found,
    parse_resources,
    parse_time,
)
from pumice.client import ApiError, KubeClient

app = typer.Typer(help="Volcano jobs: run, list, view, suspend, resume, delete.", no_args_is_help=True)

JOB_API = "batch.volcano.sh/v1alpha1"
RECENT_EVENTS = 10

Name = Annotated[str, typer.Option("--name", "-N", help="job name")]


def job_replicas(job: Obj) -> int:
    return sum(int(t.get("replicas") or 0) for t in (job.get("spec") or {}).get("tasks") or [])


def job_phase(job: Obj) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def creation_day(obj: Obj) -> str:
    when = parse_time(meta(obj).get("creationTimestamp"))
    return when.strftime("%Y-%m-%d") if isinstance(when, datetime) else ""


def list_columns(wide: bool = False) -> tuple[list[str], Callable[[Obj], list[str]]]:
    """vcctl's ``job list`` columns (``-o wide`` adds Queue, Scheduler, Age)."""
    headers = ["Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending", "Running", "Succeeded",
               "Failed", "Unknown", "RetryCount"]
    if wide:
        headers += ["Queue", "Scheduler", "Age"]

    def row(job: Obj) -> list[str]:
        spec, status = job.get("spec") or {}, job.get("status") or {}
        labels = meta(job).get("labels") or {}
        minimum = status.get("minAvailable", spec.get("minAvailable", 0))
        cells = [name_of(job), creation_day(job), job_phase(job), labels.get("volcano.sh/job-type", "Batch"),
                 str(job_replicas(job)), str(minimum or 0)]
        cells += [str(status.get(k) or 0) for k in ("pending", "running", "succeeded", "failed", "unknown",
                                                     "retryCount")]
        if wide:
            cells += [str(spec.get("queue") or "default"), str(spec.get("schedulerName") or ""),
                      age(meta(job).get("creationTimestamp"))]
        return cells

    return headers, row


def build_job(name: str, namespace: str, image: str, replicas: int, min_available: int,
              requests: dict[str, str] | None, limits: dict[str, str] | None, scheduler: str,
              queue: str | None) -> Obj:
    """The one-task job ``vcctl job run`` builds."""
    resources: Obj = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    spec: Obj = {"minAvailable": min_available, "schedulerName": scheduler}
    if queue:
        spec["queue"] = queue
    spec["tasks"] = [{
        "replicas": replicas,
        "name": "default0",
        "template": {
            "metadata": {"name": name, "labels": {"volcano.sh/job-name": name}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
                                "resources": resources}],
            },
        },
    }]
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def controller_ref(obj: Obj) -> Obj:
    """``metav1.NewControllerRef``: what vcctl puts in a Command's ownerReferences and target."""
    m = meta(obj)
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": m.get("name"),
            "uid": m.get("uid"), "controller": True, "blockOwnerDeletion": True}


def create_command(kc: KubeClient, target: Obj, action: str, namespace: str) -> Obj:
    """A ``bus.volcano.sh/v1alpha1`` Command asking the controllers to ``action`` the target object."""
    ref = controller_ref(target)
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": f"{name_of(target)}-{action.lower()}-", "namespace": namespace,
                     "ownerReferences": [ref]},
        "target": ref,
        "action": action,
    }
    return kc.create(COMMANDS, command, namespace)


# ---------------------------------------------------------------------------- commands


@app.command("run")
def run(
    name: Annotated[str | None, typer.Option("--name", "-N", help="job name (required unless -f)")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="namespace")] = None,
    image: Annotated[str, typer.Option("--image", "-i", help="container image")] = "busybox",
    replicas: Annotated[int, typer.Option("--replicas", "-r", help="number of pods")] = 1,
    min_available: Annotated[int, typer.Option("--min", "-m", help="gang size (minAvailable)")] = 1,
    requests: Annotated[str, typer.Option("--requests", "-R", help="requests per pod")] = "cpu=1000m,memory=100Mi",
    limits: Annotated[str | None, typer.Option(
        "--limits", "-L", help="limits per pod (default: the requests)")] = None,
    scheduler: Annotated[str, typer.Option("--scheduler", "-S", help="scheduler name")] = "volcano",
    queue: Annotated[str | None, typer.Option("--queue", "-q", help="queue (default: default)")] = None,
    filename: Annotated[Path | None, typer.Option("--filename", "-f", help="a job YAML file instead")] = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Create a one-task Volcano job (or the job in -f FILE)."""
    with failures():
        if filename is not None:
            if not filename.is_file():
                raise UsageError(f"{filename}: no such file")
            objs = [o.to_dict() for o in load_file(filename)]
            jobs = [o for o in objs if o.get("kind") == "Job" and o.get("apiVersion") == JOB_API]
            if len(objs) != 1 or len(jobs) != 1:
                raise UsageError(f"{filename}: expected exactly one {JOB_API} Job")
            job = jobs[0]
            if name:
                job["metadata"]["name"] = name
        else:
            if not name:
                raise UsageError("job name cannot be left blank: give --name/-N (or -f FILE)")
            if replicas < 1 or min_available < 0 or min_available > replicas:
                raise UsageError(f"--min {min_available} must be between 0 and --replicas {replicas}")
            # vcctl's limits default to cpu=1000m,memory=100Mi whatever the requests: any request above that is a
            # pod Kubernetes refuses (requests may not exceed limits). Here they default to the requests.
            job = build_job(name, namespace or "", image, replicas, min_available,
                            parse_resources(requests, "--requests"),
                            parse_resources(requests if limits is None else limits, "--limits"), scheduler, queue)
        if queue and filename is not None:
            job.setdefault("spec", {})["queue"] = queue
        kc = client(kubeconfig, server, context)
        ns = namespace or meta(job).get("namespace") or kc.namespace
        job["metadata"]["namespace"] = ns
        created = kc.create(JOBS, job, ns)
        print(f"run job {name_of(created)} successfully")


@app.command("list")
def list_jobs(
    namespace: Namespace = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="all namespaces")] = False,
    selector: Annotated[str | None, typer.Option("--selector", help="part of the job name (vcctl)")] = None,
    queue: Annotated[str | None, typer.Option("--queue", "-q", help="only jobs of this queue")] = None,
    scheduler: Annotated[str | None, typer.Option("--scheduler", "-S", help="only jobs of this scheduler")] = None,
    labels: Annotated[str | None, typer.Option("--labels", "-l", help="label selector")] = None,
    wide: Annotated[bool, typer.Option("--wide", "-w", help="also Queue, Scheduler, Age")] = False,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """List jobs (vcctl's columns)."""
    with failures():
        kc = client(kubeconfig, server, context)
        ns = None if all_namespaces else (namespace or kc.namespace)
        jobs = kc.list(JOBS, ns, all_namespaces=all_namespaces, label_selector=labels)
        if selector:
            jobs = [j for j in jobs if selector in name_of(j)]
        if queue:
            jobs = [j for j in jobs if ((j.get("spec") or {}).get("queue") or "default") == queue]
        if scheduler:
            jobs = [j for j in jobs if (j.get("spec") or {}).get("schedulerName") == scheduler]
        if not jobs:
            nothing_found(ns)
            return
        jobs.sort(key=lambda j: (meta(j).get("namespace") or "", name_of(j)))
        headers, make = list_columns(wide)
        rows = [make(j) for j in jobs]
        if all_namespaces:
            headers = ["Namespace", *headers]
            rows = [[str(meta(j).get("namespace") or ""), *r] for j, r in zip(jobs, rows, strict=True)]
        print_table(headers, rows)


def _field(label: str, value: Any, indent: int = 0) -> None:
    print(f"{' ' * indent}{label + ':':<{max(24 - indent, len(label) + 2)}}{'' if value is None else value}")


def print_job(kc: KubeClient, job: Obj) -> None:
    """vcctl ``job view``: the job's metadata, spec, status and events."""
    m, spec, status = meta(job), job.get("spec") or {}, job.get("status") or {}
    _field("Name", m.get("name"))
    _field("Namespace", m.get("namespace"))
    _field("Labels", ", ".join(f"{k}={v}" for k, v in (m.get("labels") or {}).items()) or "<none>")
    _field("Annotations", ", ".join(f"{k}={v}" for k, v in (m.get("annotations") or {}).items()) or "<none>")
    _field("API Version", job.get("apiVersion"))
    _field("Kind", job.get("kind"))
    print("Metadata:")
    _field("Creation Timestamp", m.get("creationTimestamp"), 2)
    _field("Resource Version", m.get("resourceVersion"), 2)
    _field("UID", m.get("uid"), 2)
    print("Spec:")
    _field("Min Available", spec.get("minAvailable"), 2)
    _field("Queue", spec.get("queue") or "default", 2)
    _field("Scheduler Name", spec.get("schedulerName"), 2)
    _field("Max Retry", spec.get("maxRetry", 3), 2)
    plugins = spec.get("plugins") or {}
    if plugins:
        _field("Plugins", ", ".join(f"{k}{v if v else ''}" for k, v in plugins.items()), 2)
    if spec.get("networkTopology"):
        nt = spec["networkTopology"]
        _field("Network Topology", f"mode={nt.get('mode', 'hard')} highestTierAllowed="
               f"{nt.get('highestTierAllowed', nt.get('highestTierName', '-'))}", 2)
    print("  Tasks:")
    for task in spec.get("tasks") or []:
        _field("Name", task.get("name"), 4)
        _field("Replicas", task.get("replicas"), 4)
        if task.get("minAvailable") is not None:
            _field("Min Available", task.get("minAvailable"), 4)
        for c in ((task.get("template") or {}).get("spec") or {}).get("containers") or []:
            res = c.get("resources") or {}
            _field("Container", f"{c.get('name')} ({c.get('image')})", 6)
            _field("Requests", describe_resources(res.get("requests")), 8)
            _field("Limits", describe_resources(res.get("limits")), 8)
    print("Status:")
    state = status.get("state") or {}
    _field("Phase", state.get("phase") or "<none>", 2)
    if state.get("reason") or state.get("message"):
        _field("Reason", f"{state.get('reason') or ''} {state.get('message') or ''}".strip(), 2)
    for key, label in (("minAvailable", "Min Available"), ("pending", "Pending"), ("running", "Running"),
                       ("succeeded", "Succeeded"), ("failed", "Failed"), ("terminating", "Terminating"),
                       ("unknown", "Unknown"), ("retryCount", "Retry Count"), ("version", "Version")):
        _field(label, status.get(key) or 0, 2)
    for cond in status.get("conditions") or []:
        _field("Condition", f"{cond.get('status')} at {cond.get('lastTransitionTime')}", 2)
    print_events(kc, [job])


def print_events(kc: KubeClient, objs: list[Obj]) -> None:
    """``Events:`` of the given objects (by kind and name), oldest first; ``<none>`` when none."""
    rows = []
    for obj in objs:
        m = meta(obj)
        try:
            events = kc.list("events", m.get("namespace") or "default",
                             field_selector=f"involvedObject.name={m.get('name')}")
        except ApiError:
            events = []
        for ev in events:
            inv = ev.get("involvedObject") or {}
            if inv.get("kind") and inv.get("kind") != obj.get("kind"):
                continue
            if inv.get("name") and inv.get("name") != m.get("name"):
                continue
            when = ev.get("lastTimestamp") or ev.get("eventTime") or meta(ev).get("creationTimestamp")
            source = (ev.get("source") or {}).get("component") or ev.get("reportingComponent") or ""
            rows.append((str(when or ""), [str(ev.get("type") or ""), str(ev.get("reason") or ""), age(when),
                                           source, str(ev.get("message") or "")]))
    if not rows:
        print("Events: <none>")
        return
    rows.sort(key=lambda r: r[0])
    shown = rows[-RECENT_EVENTS:]
    print("Events:" if len(shown) == len(rows) else f"Events (the last {len(shown)} of {len(rows)}):")
    print_table(["Type", "Reason", "Age", "From", "Message"], [r for _, r in shown])


@app.command("view")
def view(
    name: Name,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Show one job in detail (see also: pumice describe job)."""
    with failures():
        kc = client(kubeconfig, server, context)
        print_job(kc, kc.get(JOBS, name, namespace))


def _command(name: str, namespace: str | None, action: str, verb: str, kubeconfig: str | None, server: str | None,
             context: str | None) -> None:
    with failures():
        kc = client(kubeconfig, server, context)
        job = kc.get(JOBS, name, namespace)
        cmd = create_command(kc, job, action, str(meta(job).get("namespace") or namespace or kc.namespace))
        print(f"{verb} job {name}: {action} requested (command.bus.volcano.sh/{name_of(cmd)})")


@app.command("suspend")
def suspend(
    name: Name,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Suspend a job: a Command AbortJob (its pods are deleted, the job kept)."""
    _command(name, namespace, "AbortJob", "suspend", kubeconfig, server, context)


@app.command("resume")
def resume(
    name: Name,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Resume a suspended job: a Command ResumeJob."""
    _command(name, namespace, "ResumeJob", "resume", kubeconfig, server, context)


@app.command("delete")
def delete(
    name: Name,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Delete a job."""
    with failures():
        kc = client(kubeconfig, server, context)
        kc.delete(JOBS, name, namespace)
        print(f"delete job {name} successfully")

