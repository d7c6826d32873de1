"""``pumice apply`` / ``get`` / ``delete``: any object, kubectl-style; and what the API commands share.

Shared by ``job``, ``queue``, ``pod`` and ``describe``: the connection options (``--kubeconfig/-k``,
``--server/--master/-s``, ``--context``), :func:`failures` (one-line errors: exit 1 when the
server refuses or cannot be reached, 2 for bad input), tables and ages.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pumice.api import ManifestError, UnknownResourceError, is_valid_quantity, load_file, load_text, milli_value
from pumice.api.reader import file_size_limit, max_file_bytes
from pumice.client import ApiError, ClientError, KubeClient, Resource, UnknownResource, connect

from .limits import MaxFileSize

Obj = dict[str, Any]


class UsageError(Exception):
    """Bad input, named in one line; the command exits 2."""


# ---------------------------------------------------------------------------- options

Kubeconfig = Annotated[
    str | None,
    typer.Option("--kubeconfig", "-k", help="kubeconfig file (default: $KUBECONFIG, ./.pumice, ~/.pumice, ~/.kube)"),
]
Server = Annotated[str | None, typer.Option("--server", "--master", "-s", help="API server URL (overrides kubeconfig)")]
Context = Annotated[str | None, typer.Option("--context", help="kubeconfig context to use")]
Namespace = Annotated[str | None, typer.Option("--namespace", "-n", help="namespace (default: the context's)")]
AllNamespaces = Annotated[bool, typer.Option("--all-namespaces", "-A", help="all namespaces")]


def client(kubeconfig: str | None, server: str | None, context: str | None) -> KubeClient:
    return connect(kubeconfig, context=context, server=server)


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


@contextmanager
def failures() -> Iterator[None]:
    """Turn client/manifest/usage errors into one line on stderr and the right exit code."""
    try:
        yield
    except ClientError as err:
        error(str(err))
        raise typer.Exit(err.exit_code) from None
    except ManifestError as err:
        error(str(err))
        raise typer.Exit(2) from None
    except (UsageError, UnknownResourceError) as err:
        error(str(err))
        raise typer.Exit(2) from None


# ---------------------------------------------------------------------------- small helpers


def meta(obj: Mapping[str, Any]) -> Obj:
    return obj.get("metadata") or {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def parse_time(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """kubectl's (and vcctl's) ``HumanDuration``: 5s, 3m20s, 4h, 2d3h, 1y30d."""
    s = int(seconds)
    if s < 0:  # a cluster clock ahead of this machine's (``pumice up --time-scale``): call it now
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return f"{hours // 24 // 365}y{(hours // 24) % 365}d"
    return f"{hours // 24 // 365}y"


def age(ts: str | None, now: datetime | None = None) -> str:
    when = parse_time(ts)
    if when is None:
        return "<unknown>"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return human_duration(((now or datetime.now(UTC)) - when).total_seconds())


def parse_resources(spec: str | None, flag: str) -> dict[str, str] | None:
    """``cpu=1000m,memory=100Mi`` -> ``{"cpu": "1000m", "memory": "100Mi"}`` (vcctl's syntax)."""
    if spec is None or not spec.strip():
        return None
    out: dict[str, str] = {}
    for statement in spec.split(","):
        if not statement.strip():
            continue
        parts = statement.split("=")
        if len(parts) != 2 or not parts[0].strip():
            raise UsageError(f"{flag}: invalid argument syntax {statement!r}, expected <resource>=<value>")
        key, value = parts[0].strip(), parts[1].strip()
        if not is_valid_quantity(value):
            raise UsageError(f"{flag}: invalid quantity {value!r} for {key}")
        out[key] = value
    return out


def describe_resources(resources: Mapping[str, Any] | None) -> str:
    if not resources:
        return "<none>"
    return ", ".join(f"{k}={v}" for k, v in resources.items())


def quantity(value: Any) -> int | None:
    """Milli-units of a quantity (None when missing or unreadable)."""
    if value is None:
        return None
    try:
        return milli_value(str(value))
    except Exception:
        return None


# ---------------------------------------------------------------------------- output


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None) -> None:
    """A kubectl-like table: no borders, columns never wrapped or cut (wider than the terminal: it wraps)."""
    cells = [[str(c) if c is not None else "" for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    needed = sum(widths) + 3 * len(widths) + 2
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(needed, 80))
    elif console.width < needed:
        console = Console(highlight=False, width=needed)
    table = Table(box=None, pad_edge=False, padding=(0, 3, 0, 0), show_edge=False, header_style="bold",
                  title=title, title_justify="left")
    for header in headers:
        table.add_column(Text(header), no_wrap=True, overflow="ignore")
    for row in cells:
        table.add_row(*(Text(c) for c in row))
    with console.capture() as captured:
        console.print(table)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def print_objects(objs: list[Obj], output: str, single: bool) -> None:
    """``-o yaml|json``: one object as itself, several as a ``v1`` ``List``."""
    for obj in objs:
        meta(obj).pop("managedFields", None)
    data: Any = objs[0] if single and len(objs) == 1 else {"apiVersion": "v1", "kind": "List", "items": objs,
                                                            "metadata": {"resourceVersion": ""}}
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True,
                                        width=10_000))


def nothing_found(namespace: str | None) -> None:
    where = f" in {namespace} namespace" if namespace else ""
    print(f"No resources found{where}.", file=sys.stderr)


# ---------------------------------------------------------------------------- manifests


def _read_stdin() -> str:
    """Standard input as text, refused past the file size limit (``--max-file-size``)."""
    limit = max_file_bytes()
    data = sys.stdin.buffer.read(limit + 1) if hasattr(sys.stdin, "buffer") else sys.stdin.read(limit + 1).encode()
    if len(data) > limit:
        raise ManifestError("<stdin>", f"input too large: more than {limit} bytes (--max-file-size raises the limit)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ManifestError("<stdin>", f"not UTF-8 text: {err.reason} at byte {err.start}") from err


def read_manifests(files: Sequence[Path]) -> list[Obj]:
    """Every object of every file (``-`` reads stdin); all read before anything is sent."""
    objects: list[Obj] = []
    for path in files:
        if str(path) == "-":
            loaded = load_text(_read_stdin(), "<stdin>")
        else:
            if not path.exists():
                raise UsageError(f"{path}: no such file")
            if path.is_dir():
                loaded = []
                for child in sorted(path.iterdir()):
                    if child.suffix in (".yaml", ".yml", ".json") and child.is_file():
                        loaded.extend(load_file(child))
            else:
                loaded = load_file(path)
        objects.extend(obj.to_dict() for obj in loaded)
    if not objects:
        raise UsageError("no objects passed to the command")
    return objects


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
    from pumice.cli import jobs, pods, queues

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
            print_objects(objs, output, single=bool(names) and len(names) == 1)
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
    import time

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
