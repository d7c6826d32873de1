"""``pumice describe job NAME``: the job, its tasks, pods and events — and, first, why it waits.

"Why it waits" reads what the scheduler wrote (the PodGroup's ``Unschedulable`` condition, pods'
``PodScheduled=False`` messages, ``Unschedulable`` events) and what the queue says about itself
(state, capability / deserved / guarantee against ``status.allocated``), and says it in a few
plain lines: which predicate failed on how many nodes, whether the queue quota or the cluster's
overcommit kept the job from being admitted, and which topology tier falls short.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any

import typer

from pumice.api import format_quantity
from pumice.api.group_name import group_name
from pumice.api.resources import PODGROUPS, QUEUES
from pumice.cli.jobs import JOBS, print_events
from pumice.cli.pods import pod_ready, pod_restarts, pod_status
from pumice.cli.tables import print_table
from pumice.cli.toolkit import (
    Context,
    Kubeconfig,
    Namespace,
    Obj,
    Server,
    age,
    client,
    describe_resources,
    failures,
    meta,
    name_of,
    quantity,
)
from pumice.client import ApiError, KubeClient

app = typer.Typer(help="Show an object in detail, starting with why it waits.", no_args_is_help=True)

FINISHED = ("Completed", "Failed", "Terminated", "Aborted")
NEVER = "The gang needs more than the whole cluster"

_GANG = re.compile(r"^(?P<missing>\d+)/(?P<total>\d+) tasks in gang unschedulable(?::\s*(?P<detail>.*))?$", re.S)
_NODES = re.compile(r"(?P<fit>\d+)/(?P<nodes>\d+) nodes are (?:un)?available(?::\s*(?P<why>.*))?", re.S)


# ---------------------------------------------------------------------------- gathering


def find_podgroup(kc: KubeClient, job: Obj) -> Obj | None:
    """The job's PodGroup: ``<job>-<uid>`` (Volcano's name), else one the job owns."""
    m = meta(job)
    ns = m.get("namespace")
    try:
        return kc.get(PODGROUPS, f"{m.get('name')}-{m.get('uid')}", ns)
    except ApiError as err:
        if not err.not_found:
            raise
    for pg in kc.list(PODGROUPS, ns):
        owners = meta(pg).get("ownerReferences") or []
        if any(o.get("uid") == m.get("uid") for o in owners):
            return pg
    return None


def job_pods(kc: KubeClient, job: Obj) -> list[Obj]:
    m = meta(job)
    pods = kc.list("pods", m.get("namespace"), label_selector=f"volcano.sh/job-name={m.get('name')}")
    return sorted(pods, key=name_of)


def condition(obj: Obj | None, kind: str) -> Obj | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


# ---------------------------------------------------------------------------- explaining


def explain_message(message: str) -> list[str]:
    """A scheduler message, in plain words (one line per reason)."""
    message = " ".join(message.split())
    lines: list[str] = []
    gang = _GANG.match(message)
    detail = message
    if gang:
        missing, total = int(gang["missing"]), int(gang["total"])
        lines.append(f"{missing} of {total} pods of the gang cannot be placed together (minAvailable not met).")
        detail = gang["detail"] or ""
    parts: list[str] = []
    for part in (p.strip() for p in detail.split("; ")):
        if part.startswith("best has") and parts:  # "no tier-1 HyperNode has ...; best has 12 (leaf-3)"
            parts[-1] += f"; {part}"
        elif part:
            parts.append(part)
    lines.extend(_explain_part(part) for part in parts)
    return lines


def _explain_part(part: str) -> str:
    nodes = _NODES.search(part)
    if nodes:
        fit, total = int(nodes["fit"]), int(nodes["nodes"])
        why = (nodes["why"] or "").rstrip(".")
        if fit == 0:
            return f"No node fits a pod (0 of {total} nodes): {why}." if why else f"No node fits a pod (0 of {total})."
        return f"{fit} of {total} nodes fit a pod, but not the whole gang at once."
    low = part.lower()
    if "hypernode" in low or "tier" in low:
        return f"Network topology: {part}."
    if "overused" in low or "overcommit" in low:
        return f"The cluster is too full to admit the gang: {part}."
    if "quota" in low or "capacity" in low or "deserved" in low:
        return f"Queue quota: {part}."
    if "not open" in low or "closed" in low:
        return f"Queue state: {part}."
    return part[:1].upper() + part[1:] + ("" if part.endswith(".") else ".")


def queue_shortfall(queue: Obj, need: dict[str, Any] | None) -> list[str]:
    """Dimensions where the queue's capability leaves no room for ``need`` (admission), or, with no
    ``need`` (admitted, waiting for nodes), where capability or deserved is used up."""
    spec, status = queue.get("spec") or {}, queue.get("status") or {}
    allocated = status.get("allocated") or {}
    out: list[str] = []
    limit_sets = [("capability", spec.get("capability") or {})]
    if not need:  # deserved does not gate admission, but an overused queue gets no more allocations
        limit_sets.append(("deserved", spec.get("deserved") or {}))
    for label, limits in limit_sets:
        for dim, limit in limits.items():
            lim = quantity(limit)
            used = quantity(allocated.get(dim, 0)) or 0
            want = quantity((need or {}).get(dim)) if need else None
            if lim is None or lim <= 0:
                continue
            if want is not None and want > 0 and used + want > lim:
                out.append(f"{dim}: {label} {limit}, allocated {allocated.get(dim, 0)}, "
                           f"this job needs {need[dim]} more")  # type: ignore[index]
            elif want is None and used >= lim:
                out.append(f"{dim}: {label} {limit} is used up (allocated {allocated.get(dim, 0)})")
        if out:
            break
    return out


def cluster_room(nodes: list[Obj], pods: list[Obj]) -> tuple[dict[str, int], dict[str, int], int]:
    """``(allocatable, free, usable nodes)`` in milli-units over Ready, schedulable nodes."""
    total: dict[str, int] = {}
    usable = set()
    for node in nodes:
        ready = condition(node, "Ready")
        if (node.get("spec") or {}).get("unschedulable") or (ready is not None and ready.get("status") != "True"):
            continue
        usable.add(name_of(node))
        for dim, value in ((node.get("status") or {}).get("allocatable") or {}).items():
            total[dim] = total.get(dim, 0) + (quantity(value) or 0)
    used: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") not in usable or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for c in spec.get("containers") or []:
            for dim, value in ((c.get("resources") or {}).get("requests") or {}).items():
                used[dim] = used.get(dim, 0) + (quantity(value) or 0)
        used["pods"] = used.get("pods", 0) + 1000
    free = {dim: amount - used.get(dim, 0) for dim, amount in total.items()}
    return total, free, len(usable)


def cluster_shortfall(need: dict[str, Any] | None, total: dict[str, int], free: dict[str, int],
                      nodes: int) -> str:
    """A plain sentence when the gang's minResources exceed what the nodes have free (or have at all)."""
    if not need:
        return ""
    never, later = [], []
    for dim, value in need.items():
        want = quantity(value)
        if not want or want <= 0:
            continue
        have, idle = total.get(dim, 0), free.get(dim, 0)
        if want > have:
            never.append(f"{dim} {value} (all {nodes} nodes together have {_fmt(dim, have)})")
        elif want > idle:
            later.append(f"{dim} {value} ({_fmt(dim, max(idle, 0))} free of {_fmt(dim, have)})")
    if never:
        return NEVER + ": " + "; ".join(never) + "; it cannot start as is."
    if later:
        return "The cluster is too full to admit the gang now: it needs " + "; ".join(later) + "."
    return ""


def _fmt(dim: str, milli: int) -> str:
    return format_quantity(milli, milli=True)


def why_it_waits(job: Obj, pg: Obj | None, queue: Obj | None, queue_name: str, pods: list[Obj],
                 events: list[Obj], room: Callable[[], tuple[dict[str, int], dict[str, int], int]] | None = None,
                 ) -> list[str]:
    """The short section at the top: plain reasons, most specific first; [] when nothing waits."""
    phase = str(((job.get("status") or {}).get("state") or {}).get("phase") or "Pending")
    if phase in FINISHED:
        return []
    pending_pods = [p for p in pods if str((p.get("status") or {}).get("phase") or "Pending") == "Pending"
                    and not (p.get("spec") or {}).get("nodeName")]
    pg_phase = str(((pg or {}).get("status") or {}).get("phase") or "Pending")
    if pg is not None and pg_phase in ("Running", "Completed") and not pending_pods:
        return []
    lines: list[str] = []
    if phase in ("Aborting", "Aborted"):
        lines.append(f"The job is {phase} (suspended): resume it with `pumice job resume`.")
    queue_open = False
    if queue is None:
        lines.append(f"Queue {queue_name} does not exist: create it or submit to an existing queue.")
    else:
        state = str((queue.get("status") or {}).get("state") or "Open")
        queue_open = state == "Open"
        if not queue_open:
            lines.append(f"Queue {queue_name} is {state}: only Open queues admit and place jobs.")
    if pg is None:
        if phase not in ("Aborting", "Aborted"):
            lines.append("No PodGroup exists yet: the job controller has not picked the job up (is it running?).")
        return lines
    unsched = condition(pg, "Unschedulable")
    message = str(unsched.get("message") or "") if unsched and unsched.get("status") == "True" else ""
    if not message:  # fall back to the scheduler's latest Unschedulable event
        warn = [e for e in events if e.get("reason") == "Unschedulable" and e.get("message")]
        if warn:
            message = str(warn[-1]["message"])
    if pg_phase == "Pending":
        lines.append("Not admitted yet (PodGroup Pending): the enqueue step has not let the job in, "
                     "so no pods are created.")
    if message:
        lines.extend(explain_message(message))
    need = (pg.get("spec") or {}).get("minResources")
    found = bool(message)
    if queue is not None:
        short = queue_shortfall(queue, need if pg_phase == "Pending" else None)
        if short:
            lines.append(f"Queue {queue_name} has no room: " + "; ".join(short) + ".")
            found = True
    if pg_phase == "Pending" and room is not None:
        sentence = cluster_shortfall(need, *room())
        if sentence and (not found or sentence.startswith(NEVER)):  # "never fits" is worth saying anyway
            lines.append(sentence)
            found = True
    if pg_phase == "Pending" and queue_open and not found:
        touched = bool((pg.get("status") or {}).get("conditions"))
        lines.append("The scheduler recorded no reason." if touched else
                     "No reason recorded yet: the scheduler has not looked at this job (is it running?).")
    if pending_pods and not message:
        msgs = Counter(str((condition(p, "PodScheduled") or {}).get("message") or "") for p in pending_pods)
        msgs.pop("", None)
        for msg, count in msgs.most_common(2):
            lines.append(f"{count} pod{'s' if count != 1 else ''}: {msg}")
    if not lines and pending_pods:
        lines.append(f"{len(pending_pods)} pods wait for the next scheduling cycle; no reason recorded yet.")
    return list(dict.fromkeys(lines))  # each line once, in order


# ---------------------------------------------------------------------------- printing


def _kv(label: str, value: Any, indent: int = 0) -> None:
    print(f"{' ' * indent}{label + ':':<{max(22 - indent, len(label) + 2)}}{value}")


def describe_job(kc: KubeClient, name: str, namespace: str | None) -> None:
    job = kc.get(JOBS, name, namespace)
    m, spec, status = meta(job), job.get("spec") or {}, job.get("status") or {}
    ns = m.get("namespace") or namespace or kc.namespace
    pg = find_podgroup(kc, job)
    queue_name = str(spec.get("queue") or (pg or {}).get("spec", {}).get("queue") or "default")
    try:
        queue: Obj | None = kc.get(QUEUES, queue_name)
    except ApiError as err:
        if not err.not_found:
            raise
        queue = None
    pods = job_pods(kc, job)
    events = _events(kc, [job, *([pg] if pg else [])])
    phase = str((status.get("state") or {}).get("phase") or "Pending")

    _kv("Name", f"{ns}/{m.get('name')}")
    _kv("Phase", phase + (f" ({status['state'].get('reason')})" if (status.get("state") or {}).get("reason")
                          else ""))
    def room() -> tuple[dict[str, int], dict[str, int], int]:
        return cluster_room(kc.list("nodes"), kc.list("pods", all_namespaces=True))

    reasons = why_it_waits(job, pg, queue, queue_name, pods, events, room)
    if reasons:
        print("Why it waits:")
        for line in reasons:
            print(f"  - {line}")
    print()
    _kv("Queue", queue_name)
    _kv("Scheduler", spec.get("schedulerName") or "volcano")
    _kv("Min Available", spec.get("minAvailable", ""))
    _kv("Created", f"{m.get('creationTimestamp', '')} ({age(m.get('creationTimestamp'))} ago)")
    counts = " ".join(f"{k}={status.get(k) or 0}" for k in ("pending", "running", "succeeded", "failed",
                                                             "terminating", "unknown"))
    _kv("Pods", counts)
    _kv("Retry Count", f"{status.get('retryCount') or 0} of maxRetry {spec.get('maxRetry', 3)}")
    if spec.get("networkTopology"):
        nt = spec["networkTopology"]
        tier = nt.get("highestTierAllowed", nt.get("highestTierName", "-"))
        _kv("Network Topology", f"{nt.get('mode', 'hard')}, highest tier {tier}")

    print("\nTasks:")
    rows = []
    for task in spec.get("tasks") or []:
        containers = ((task.get("template") or {}).get("spec") or {}).get("containers") or []
        requests = ", ".join(describe_resources((c.get("resources") or {}).get("requests")) for c in containers)
        rows.append([str(task.get("name") or ""), str(task.get("replicas", "")),
                     str(task.get("minAvailable", task.get("replicas", ""))),
                     ", ".join(str(c.get("image") or "") for c in containers), requests or "<none>"])
    print_table(["Name", "Replicas", "Min", "Image", "Requests"], rows)

    print("\nPodGroup:")
    if pg is None:
        print("  <none>")
    else:
        pgs, pgst = pg.get("spec") or {}, pg.get("status") or {}
        _kv("Name", name_of(pg), 2)
        _kv("Phase", pgst.get("phase") or "Pending", 2)
        _kv("Min Member", pgs.get("minMember", ""), 2)
        _kv("Min Resources", describe_resources(pgs.get("minResources")), 2)
        for cond in pgst.get("conditions") or []:
            text = f"{cond.get('type')}={cond.get('status')}"
            if cond.get("reason"):
                text += f" ({cond['reason']})"
            if cond.get("message"):
                text += f": {cond['message']}"
            _kv("Condition", text, 2)

    print("\nQueue:")
    if queue is None:
        print(f"  {queue_name}: <not found>")
    else:
        qs, qst = queue.get("spec") or {}, queue.get("status") or {}
        _kv("Name", queue_name, 2)
        _kv("State", qst.get("state") or "Open", 2)
        _kv("Weight", qs.get("weight", 1), 2)
        _kv("Capability", describe_resources(qs.get("capability")), 2)
        _kv("Deserved", describe_resources(qs.get("deserved")), 2)
        _kv("Guarantee", describe_resources((qs.get("guarantee") or {}).get("resource")), 2)
        _kv("Allocated", describe_resources(qst.get("allocated")), 2)

    print("\nPods:")
    if not pods:
        print("  <none>")
    else:
        print_table(["Name", "Ready", "Status", "Restart", "Age", "Node"],
                    [[name_of(p), pod_ready(p), pod_status(p), str(pod_restarts(p)),
                      age(meta(p).get("creationTimestamp")), str((p.get("spec") or {}).get("nodeName") or "<none>")]
                     for p in pods])
    print()
    print_events(kc, [job, *([pg] if pg else [])])


def _events(kc: KubeClient, objs: list[Obj]) -> list[Obj]:
    out: list[Obj] = []
    for obj in objs:
        m = meta(obj)
        try:
            events = kc.list("events", m.get("namespace"), field_selector=f"involvedObject.name={m.get('name')}")
        except ApiError:
            continue
        out.extend(e for e in events if (e.get("involvedObject") or {}).get("name") == m.get("name"))
    out.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return out


@app.command("job")
def job(
    name: Annotated[str, typer.Argument(help="job name")],
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """A job in detail: why it waits, spec, tasks, PodGroup, queue, pods, events."""
    with failures():
        kc = client(kubeconfig, server, context)
        describe_job(kc, name, namespace)


def describe_queue(kc: KubeClient, name: str) -> None:
    from pumice.cli.queues import PHASES, podgroup_counts

    queue = kc.get(QUEUES, name)
    spec, status = queue.get("spec") or {}, queue.get("status") or {}
    _kv("Name", name)
    _kv("State", status.get("state") or "Open")
    _kv("Parent", spec.get("parent") or ("" if name == "root" else "root"))
    _kv("Weight", spec.get("weight", 1))
    _kv("Priority", spec.get("priority", 0))
    _kv("Reclaimable", spec.get("reclaimable", True))
    _kv("Capability", describe_resources(spec.get("capability")))
    _kv("Deserved", describe_resources(spec.get("deserved")))
    _kv("Guarantee", describe_resources((spec.get("guarantee") or {}).get("resource")))
    _kv("Allocated", describe_resources(status.get("allocated")))
    counts = podgroup_counts(kc)
    _kv("PodGroups", " ".join(f"{p}={counts.get((name, p), 0)}" for p in PHASES))
    jobs = [j for j in kc.list(JOBS, all_namespaces=True) if ((j.get("spec") or {}).get("queue") or "default") == name]
    print("\nJobs:")
    if not jobs:
        print("  <none>")
    else:
        print_table(["Namespace", "Name", "Phase", "Min", "Running", "Pending"],
                    [[str(meta(j).get("namespace") or ""), name_of(j),
                      str(((j.get("status") or {}).get("state") or {}).get("phase") or ""),
                      str((j.get("spec") or {}).get("minAvailable", "")),
                      str((j.get("status") or {}).get("running") or 0),
                      str((j.get("status") or {}).get("pending") or 0)]
                     for j in sorted(jobs, key=lambda j: (meta(j).get("namespace") or "", name_of(j)))])
    print()
    print_events(kc, [queue])


@app.command("queue")
def queue(
    name: Annotated[str, typer.Argument(help="queue name")],
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """A queue in detail: state, weight, quota against what is allocated, PodGroups and jobs in it."""
    with failures():
        kc = client(kubeconfig, server, context)
        describe_queue(kc, name)


def describe_pod(kc: KubeClient, name: str, namespace: str | None) -> None:
    from pumice.cli.pods import job_of, queue_of

    pod = kc.get("pods", name, namespace)
    m, spec, status = meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    _kv("Name", f"{m.get('namespace')}/{m.get('name')}")
    _kv("Status", pod_status(pod))
    scheduled = condition(pod, "PodScheduled")
    if not spec.get("nodeName") and scheduled and scheduled.get("status") == "False":
        print("Why it waits:")
        print(f"  - {scheduled.get('reason') or 'Unschedulable'}: {scheduled.get('message') or 'no message'}")
    _kv("Node", spec.get("nodeName") or "<none>")
    _kv("Job", job_of(pod) or "<none>")
    _kv("Queue", queue_of(pod) or "<none>")
    _kv("PodGroup", group_name(pod) or "<none>")
    _kv("Scheduler", spec.get("schedulerName") or "default-scheduler")
    _kv("Priority", spec.get("priority", 0))
    _kv("Created", f"{m.get('creationTimestamp', '')} ({age(m.get('creationTimestamp'))} ago)")
    _kv("Ready", f"{pod_ready(pod)}, restarts {pod_restarts(pod)}")
    print("\nContainers:")
    print_table(["Name", "Image", "Requests", "Limits"],
                [[str(c.get("name") or ""), str(c.get("image") or ""),
                  describe_resources((c.get("resources") or {}).get("requests")),
                  describe_resources((c.get("resources") or {}).get("limits"))]
                 for c in spec.get("containers") or []])
    conditions = status.get("conditions") or []
    if conditions:
        print("\nConditions:")
        print_table(["Type", "Status", "Reason", "Message"],
                    [[str(c.get("type") or ""), str(c.get("status") or ""), str(c.get("reason") or ""),
                      str(c.get("message") or "")] for c in conditions])
    print()
    print_events(kc, [pod])


@app.command("pod")
def pod(
    name: Annotated[str, typer.Argument(help="pod name")],
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """A pod in detail: why it is not placed (its PodScheduled condition), node, job, queue, containers."""
    with failures():
        kc = client(kubeconfig, server, context)
        describe_pod(kc, name, namespace)
