"""``pumice apply`` / ``get`` / ``delete``: any object, kubectl-style.

``get`` prints the same columns as ``job list``, ``queue list`` and ``pod list`` for those kinds; ``apply_one``
(create, or merge-patch onto the live object) also serves ``pumice up -f``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from pumice.api.reader import file_size_limit
from pumice.cli import jobs, pods, queues
from pumice.cli.limits import MaxFileSize
from pumice.cli.tables import print_table
from pumice.cli.toolkit import (
    AllNamespaces,
    Context,
    Kubeconfig,
    Namespace,
    Obj,
    Server,
    UsageError,
    age,
    client,
    error,
    failures,
    meta,
    name_of,
    nothing_found,
    print_objects,
    quantity,
    read_manifests,
)
from pumice.client import ApiError, KubeClient, Resource, UnknownResource

_SERVER_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink")


def desired_state(obj: Mapping[str, Any]) -> tuple[Obj, Obj | None]:
    """Split a manifest object into what to merge-patch onto the object and its status (if any)."""
    body = {k: v for k, v in obj.items() if k != "status"}
    body["metadata"] = {k: v for k, v in meta(obj).items() if k not in _SERVER_FIELDS}
    status = obj.get("status")
    return body, status if isinstance(status, dict) and status else None


def contained(desired: Any, live: Any) -> bool:
    """True when applying ``desired`` would change nothing in ``live`` (server-added fields allowed)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return False
        for key, value in desired.items():
            if value is None:
                if live.get(key) is not None:
                    return False
            elif key not in live or not contained(value, live[key]):
                return False
        return True
    if isinstance(desired, list):
        return isinstance(live, list) and len(desired) == len(live) and all(
            contained(d, x) for d, x in zip(desired, live, strict=True))
    if desired == live:
        return True
    if isinstance(desired, str | int | float) and isinstance(live, str | int | float) and not isinstance(
            desired, bool):
        a, b = quantity(desired), quantity(live)  # "1000m" and "1" are the same CPU
        return a is not None and a == b
    return False


def object_namespace(res: Resource, obj: Obj, flag: str | None, kc: KubeClient) -> str | None:
    if not res.namespaced:
        return None
    own = meta(obj).get("namespace")
    if own and flag and own != flag:
        raise UsageError(
            f'the namespace from the provided object "{own}" does not match the namespace "{flag}": '
            "drop --namespace or change the manifest")
    return own or flag or kc.namespace


def apply_one(kc: KubeClient, obj: Obj, namespace: str | None) -> str:
    """Create ``obj`` or merge-patch it onto the live object; ``TYPE/NAME created|configured|unchanged``."""
    res = kc.resource_for(str(obj.get("apiVersion")), str(obj.get("kind")))
    ns = object_namespace(res, obj, namespace, kc)
    body, status = desired_state(obj)
    if ns is not None:
        body["metadata"]["namespace"] = ns
    name = meta(obj).get("name")
    if not name:  # generateName: always a new object
        created = kc.create(res, {**body, **({"status": status} if status else {})}, ns)
        return f"{res.type_name}/{name_of(created)} created"
    try:
        live = kc.get(res, name, ns)
    except ApiError as err:
        if not err.not_found:
            raise
        created = kc.create(res, {**body, **({"status": status} if status else {})}, ns)
        if status and not contained(status, created.get("status")):
            _patch_status(kc, res, name, ns, status)
        return f"{res.type_name}/{name} created"
    changed = False
    if not contained(body, live):
        live = kc.patch(res, name, body, ns)
        changed = True
    if status and not contained(status, live.get("status")):
        _patch_status(kc, res, name, ns, status)
        changed = True
    return f"{res.type_name}/{name} {'configured' if changed else 'unchanged'}"


def _patch_status(kc: KubeClient, res: Resource, name: str, ns: str | None, status: Obj) -> None:
    try:
        kc.patch(res, name, {"status": status}, ns, subresource="status")
    except ApiError as err:
        if err.code not in (404, 405):
            raise
        kc.patch(res, name, {"status": status}, ns)  # no status subresource: status is part of the object


# ---------------------------------------------------------------------------- tables per kind

Row = list[str]


def _default_row(obj: Obj) -> Row:
    return [name_of(obj), age(meta(obj).get("creationTimestamp"))]


def _podgroup_row(obj: Obj) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [name_of(obj), str(status.get("phase") or ""), str(spec.get("minMember", "")),
            str(status.get("running") or 0), str(status.get("succeeded") or 0), str(status.get("failed") or 0),
            str(spec.get("queue") or ""), age(meta(obj).get("creationTimestamp"))]


def _node_row(obj: Obj) -> Row:
    status = obj.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Ready" if ready and ready.get("status") == "True" else ("NotReady" if ready else "Unknown")
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    alloc = status.get("allocatable") or {}
    return [name_of(obj), state, str(alloc.get("cpu", "")), str(alloc.get("memory", "")),
            age(meta(obj).get("creationTimestamp"))]


def _hypernode_row(obj: Obj) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [name_of(obj), str(spec.get("tier", "")), str(status.get("nodeCount", len(spec.get("members") or []))),
            age(meta(obj).get("creationTimestamp"))]


def _command_row(obj: Obj) -> Row:
    target = obj.get("target") or {}
    return [name_of(obj), str(obj.get("action") or ""), f"{target.get('kind', '')}/{target.get('name', '')}",
            age(meta(obj).get("creationTimestamp"))]


def _event_row(obj: Obj) -> Row:
    involved = obj.get("involvedObject") or {}
    return [age(obj.get("lastTimestamp") or obj.get("eventTime") or meta(obj).get("creationTimestamp")),
            str(obj.get("type") or ""), str(obj.get("reason") or ""),
            f"{str(involved.get('kind') or '').lower()}/{involved.get('name', '')}", str(obj.get("message") or "")]


def table_for(kc: KubeClient, res: Resource, objs: list[Obj], wide: bool, all_namespaces: bool) -> tuple[
        list[str], list[Row]]:
    """Headers and rows for ``pumice get``: the same columns as ``job list`` / ``queue list`` / ``pod list``."""
    headers: list[str]
    make: Callable[[Obj], Row]
    if res.kind == "Job" and res.group == "batch.volcano.sh":
        headers, make = jobs.list_columns(wide)
    elif res.kind == "Queue":
        headers, make = queues.list_columns(queues.podgroup_counts(kc))
    elif res.kind == "Pod":
        headers, make = pods.list_columns(wide)
    elif res.kind == "PodGroup":
        headers, make = ["Name", "Phase", "MinMember", "Running", "Succeeded", "Failed", "Queue", "Age"], _podgroup_row
    elif res.kind == "Node":
        headers, make = ["Name", "Status", "CPU", "Memory", "Age"], _node_row
    elif res.kind == "HyperNode":
        headers, make = ["Name", "Tier", "NodeCount", "Age"], _hypernode_row
    elif res.kind == "Command":
        headers, make = ["Name", "Action", "Target", "Age"], _command_row
    elif res.kind == "Event":
        headers, make = ["Last Seen", "Type", "Reason", "Object", "Message"], _event_row
    else:
        headers, make = ["Name", "Age"], _default_row
    rows = [make(o) for o in objs]
    if all_namespaces and res.namespaced:
        headers = ["Namespace", *headers]
        rows = [[str(meta(o).get("namespace") or ""), *r] for o, r in zip(objs, rows, strict=True)]
    return headers, rows


# ---------------------------------------------------------------------------- commands


def apply(
    filename: Annotated[list[Path], typer.Option("--filename", "-f", help="Manifest file(s), directories, - (stdin)")],
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
    max_file_size: MaxFileSize = None,
) -> None:
    """Create or update (merge-patch) the objects in FILE, like kubectl apply."""
    code = 0
    with failures():
        with file_size_limit(max_file_size):
            objects = read_manifests(filename)
        kc = client(kubeconfig, server, context)
        for obj in objects:
            try:
                print(apply_one(kc, obj, namespace))
            except (ApiError, UnknownResource) as err:  # one object refused: say so, go on with the others
                error(f"{obj.get('kind')} {name_of(obj)}: {err}")
                code = max(code, err.exit_code)
    if code:
        raise typer.Exit(code)


def get(
    kind: Annotated[str, typer.Argument(help="Resource type: jobs (vj), queues (q), pods (po), podgroups (pg), ...")],
    names: Annotated[list[str] | None, typer.Argument(help="Object name(s)")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", help="yaml, json, wide or name")] = None,
    namespace: Namespace = None,
    all_namespaces: AllNamespaces = False,
    selector: Annotated[str | None, typer.Option("--selector", "-l", help="label selector")] = None,
    field_selector: Annotated[str | None, typer.Option("--field-selector", help="field selector")] = None,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="then print a row for every change")] = False,
    timeout: Annotated[int | None, typer.Option("--timeout", help="stop watching after SECONDS")] = None,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
) -> None:
    """Show objects of one kind as a table, or as YAML/JSON; -w keeps watching."""
    if output not in (None, "yaml", "json", "wide", "name"):
        error(f'unknown output format "{output}": use yaml, json, wide or name')
        raise typer.Exit(2)
    with failures():
        kc = client(kubeconfig, server, context)
        res = kc.resource(kind)
        ns = None if (all_namespaces or not res.namespaced) else (namespace or kc.namespace)
        version = ""
        if names:
            objs = [kc.get(res, n, ns) for n in names]
        else:
            objs, version = kc.list_with_version(res, ns, all_namespaces=all_namespaces, label_selector=selector,
                                                 field_selector=field_selector)
            objs.sort(key=lambda o: (meta(o).get("namespace") or "", name_of(o)))
        if watch and output in ("yaml", "json", "name"):
            raise UsageError("--watch prints tables: leave out -o yaml/json/name")
        if output in ("yaml", "json"):
            print_objects(objs, output, single=names is not None and len(names) == 1)
            return
        if output == "name":
            for o in objs:
                print(f"{res.type_name}/{name_of(o)}")
            return
        wide, every_ns = output == "wide", all_namespaces and not names
        if not objs:
            nothing_found(ns)
        else:
            headers, rows = table_for(kc, res, objs, wide, every_ns)
            print_table(headers, rows)
        if watch:
            watch_rows(kc, res, ns, every_ns, wide, version, names or [], selector, field_selector, timeout)


def watch_rows(kc: KubeClient, res: Resource, ns: str | None, every_ns: bool, wide: bool, version: str,
               names: list[str], selector: str | None, field_selector: str | None, timeout: int | None) -> None:
    """``get -w``: one table row per change, until ``timeout`` seconds (or Ctrl-C)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while deadline is None or time.monotonic() < deadline:
            left = 300 if deadline is None else max(1, int(deadline - time.monotonic() + 0.999))
            try:
                for event in kc.watch(res, ns, all_namespaces=every_ns, resource_version=version or None,
                                      label_selector=selector, field_selector=field_selector, timeout_seconds=left):
                    obj = event.get("object") or {}
                    version = str(meta(obj).get("resourceVersion") or version)
                    if event.get("type") == "BOOKMARK" or (names and name_of(obj) not in names):
                        continue
                    _, rows = table_for(kc, res, [obj], wide, every_ns)
                    sys.stdout.write("   ".join(rows[0]) + ("   (deleted)" if event["type"] == "DELETED" else "")
                                     + "\n")
                    sys.stdout.flush()
                    if deadline is not None and time.monotonic() >= deadline:
                        return
            except ApiError as err:
                if err.code != 410:
                    raise
                _, version = kc.list_with_version(res, ns, all_namespaces=every_ns, label_selector=selector,
                                                  field_selector=field_selector)  # too old: start from now
    except KeyboardInterrupt:
        return


def delete(
    args: Annotated[list[str] | None, typer.Argument(help="KIND NAME... (or use -f)")] = None,
    filename: Annotated[list[Path] | None, typer.Option("--filename", "-f", help="Manifest file(s)")] = None,
    namespace: Namespace = None,
    ignore_not_found: Annotated[bool, typer.Option("--ignore-not-found", help="not found is not an error")] = False,
    kubeconfig: Kubeconfig = None,
    server: Server = None,
    context: Context = None,
    max_file_size: MaxFileSize = None,
) -> None:
    """Delete the objects of FILE, or KIND NAME..."""
    failed = False
    with failures():
        targets: list[tuple[str | None, str | None, str | None, str]] = []  # (word, apiVersion, kind, name)
        objects: list[Obj] = []
        if filename:
            if args:
                raise UsageError("give either -f FILE or KIND NAME..., not both")
            with file_size_limit(max_file_size):
                objects = read_manifests(filename)
        else:
            if not args or len(args) < 2:
                raise UsageError("give -f FILE, or KIND NAME...")
            targets = [(args[0], None, None, n) for n in args[1:]]
        kc = client(kubeconfig, server, context)
        work: list[tuple[Resource, str, str | None]] = []
        for obj in objects:
            res = kc.resource_for(str(obj.get("apiVersion")), str(obj.get("kind")))
            work.append((res, name_of(obj), object_namespace(res, obj, namespace, kc)))
        for word, _, _, name in targets:
            res = kc.resource(str(word))
            work.append((res, name, (namespace or kc.namespace) if res.namespaced else None))
        for res, name, ns in work:
            try:
                kc.delete(res, name, ns)
                print(f'{res.type_name} "{name}" deleted')
            except ApiError as err:
                if err.not_found and ignore_not_found:
                    continue
                error(str(err))
                failed = True
    if failed:
        raise typer.Exit(1)
