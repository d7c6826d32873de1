"""The shared CLI toolkit: what every command that talks to an API server uses.

The connection options (``--kubeconfig/-k``, ``--server/--master/-s``, ``--context``, ``--namespace/-n``),
:func:`failures` (one-line errors: exit 1 when the server refuses or cannot be reached, 2 for bad input),
object accessors, ages, vcctl's resource syntax, ``-o yaml|json`` and reading manifests (tables are
``tables``). Command modules (``kubectl``, ``jobs``, ``queues``, ``pods``, ``describe``, ``up``) import it; it
imports none of them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from pumice.api import ManifestError, UnknownResourceError, is_valid_quantity, load_file, load_text, milli_value
from pumice.api.reader import max_file_bytes
from pumice.client import ClientError, KubeClient, connect

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
