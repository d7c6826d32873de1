"""``pumice jobflow|jobtemplate create|list|get|delete|describe``: vcctl's verbs, flags and output.

As ``vcctl jobflow`` / ``vcctl jobtemplate``: ``create -f FILE`` (every document of the file), ``list``
(``-n``, for flows also ``--all-namespaces``), ``get -N NAME``, ``delete -N NAME`` or ``-f FILE``,
``describe [-N NAME] [-o yaml|json]``. Tables are vcctl's: columns as wide as their longest cell plus
four spaces. Unlike vcctl, a refused create or delete makes the command exit non-zero (after the others).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
import yaml

from pumice.api.resources import JOBFLOWS, JOBTEMPLATES
from pumice.cli.toolkit import (
    Context,
    Kubeconfig,
    Obj,
    Server,
    UsageError,
    age,
    client,
    failures,
    meta,
    name_of,
    read_manifests,
)
from pumice.client import ClientError, KubeClient

__all__ = ["jobflow_app", "jobtemplate_app", "vcctl_table"]

jobflow_app = typer.Typer(help="Volcano JobFlows: create, list, get, delete, describe (vcctl's).", no_args_is_help=True)
jobtemplate_app = typer.Typer(help="Volcano JobTemplates: create, list, get, delete, describe (vcctl's).",
                              no_args_is_help=True)

Namespace = Annotated[str, typer.Option("--namespace", "-n", help="namespace")]
File = Annotated[Path, typer.Option("--file", "-f", help="YAML file of the objects")]
OptionalFile = Annotated[Path | None, typer.Option("--file", "-f", help="YAML file of the objects")]
OptionalName = Annotated[str | None, typer.Option("--name", "-N", help="object name")]
Format = Annotated[str, typer.Option("--format", "-o", help="yaml or json")]


def vcctl_table(headers: list[str], rows: list[list[str]]) -> str:
    """vcctl's table: every column padded to its widest cell plus four spaces."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) + 4 for i, h in enumerate(headers)]
    return "".join("".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + "\n" for line in [headers, *rows])


def _flow_row(obj: Obj) -> list[str]:
    phase = str(((obj.get("status") or {}).get("state") or {}).get("phase") or "")
    return [name_of(obj), str(meta(obj).get("namespace") or ""), phase, age(meta(obj).get("creationTimestamp"))]


def _template_row(obj: Obj) -> list[str]:
    return [name_of(obj), str(meta(obj).get("namespace") or "")]


class _Kind:
    """What differs between the JobFlow and the JobTemplate commands."""

    def __init__(self, resource: str, kind: str, label: str, headers: list[str], row: Callable[[Obj], list[str]]):
        self.resource, self.kind, self.label, self.headers, self.row = resource, kind, label, headers, row

    def objects_of(self, path: Path) -> list[Obj]:
        objs = read_manifests([path])
        for i, obj in enumerate(objs):
            if obj.get("kind") != self.kind:
                raise UsageError(f"{path}: document {i + 1} is a {obj.get('kind') or 'object without kind'}, "
                                 f"not a {self.kind}")
        return objs


FLOW = _Kind(JOBFLOWS, "JobFlow", "jobflow", ["Name", "Namespace", "Phase", "Age"], _flow_row)
TEMPLATE = _Kind(JOBTEMPLATES, "JobTemplate", "job template", ["Name", "Namespace"], _template_row)


def _create(kind: _Kind, file: Path, kubeconfig: str | None, server: str | None, context: str | None) -> None:
    with failures():
        objs = kind.objects_of(file)
        kc = client(kubeconfig, server, context)
        failed = 0
        for obj in objs:
            ns = meta(obj).get("namespace") or kc.namespace
            try:
                kc.create(kind.resource, obj, ns)
            except ClientError as err:
                print(f"Failed to create {kind.kind}: {err}")
                failed += 1
                continue
            print(f"Created {kind.kind}: {ns}/{name_of(obj)}")
        if failed:
            raise typer.Exit(1)


def _list(kind: _Kind, namespace: str, all_namespaces: bool, kc: KubeClient) -> None:
    objs = kc.list(kind.resource, None if all_namespaces else namespace, all_namespaces=all_namespaces)
    if not objs:
        print("No resources found")
        return
    objs.sort(key=lambda o: (meta(o).get("namespace") or "", name_of(o)))
    sys.stdout.write(vcctl_table(kind.headers, [kind.row(o) for o in objs]))


def _get(kind: _Kind, name: str | None, namespace: str, kc: KubeClient) -> None:
    if not name:
        raise UsageError(f"name is mandatory to get the particular {kind.label} details")
    sys.stdout.write(vcctl_table(kind.headers, [kind.row(kc.get(kind.resource, name, namespace))]))


def _delete(kind: _Kind, name: str | None, namespace: str, file: Path | None, kc_of: Callable[[], KubeClient]) -> None:
    if file is not None:
        objs = kind.objects_of(file)
        kc = kc_of()
        failed = 0
        for obj in objs:
            ns = meta(obj).get("namespace") or "default"
            try:
                kc.delete(kind.resource, name_of(obj), ns)
            except ClientError as err:
                print(f"Failed to delete {kind.kind}: {err}")
                failed += 1
                continue
            print(f"Deleted {kind.kind}: {ns}/{name_of(obj)}")
        if failed:
            raise typer.Exit(1)
        return
    if not name:
        raise UsageError(f"{kind.label} name must be specified")
    kc_of().delete(kind.resource, name, namespace)
    print(f"Deleted {kind.kind}: {namespace}/{name}")


def _describe(kind: _Kind, name: str | None, namespace: str, output: str, kc: KubeClient) -> None:
    if output not in ("yaml", "json"):
        raise UsageError(f"--format {output}: Unsupported format (use yaml or json)")
    objs = [kc.get(kind.resource, name, namespace)] if name else kc.list(kind.resource, namespace)
    texts = []
    for obj in objs:
        meta(obj).pop("managedFields", None)
        obj.setdefault("apiVersion", "flow.volcano.sh/v1alpha1")
        obj.setdefault("kind", kind.kind)
        if output == "json":
            texts.append(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
        else:
            texts.append(yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=True))
    sys.stdout.write("\n\n".join(texts))


def _register(app: typer.Typer, kind: _Kind) -> None:
    noun = kind.label

    @app.command("create")
    def create(file: File, kubeconfig: Kubeconfig = None, server: Server = None, context: Context = None) -> None:
        _create(kind, file, kubeconfig, server, context)

    create.__doc__ = f"Create the {noun}s of a YAML file."

    if kind is FLOW:
        @app.command("list")
        def list_flows(namespace: Namespace = "default",
                       all_namespaces: Annotated[bool, typer.Option("--all-namespaces", help="all namespaces")] = False,
                       kubeconfig: Kubeconfig = None, server: Server = None, context: Context = None) -> None:
            """List jobflows (Name, Namespace, Phase, Age)."""
            with failures():
                _list(kind, namespace, all_namespaces, client(kubeconfig, server, context))
    else:
        @app.command("list")
        def list_templates(namespace: Namespace = "default", kubeconfig: Kubeconfig = None, server: Server = None,
                           context: Context = None) -> None:
            """List job templates (Name, Namespace)."""
            with failures():
                _list(kind, namespace, False, client(kubeconfig, server, context))

    @app.command("get")
    def get(name: OptionalName = None, namespace: Namespace = "default", kubeconfig: Kubeconfig = None,
            server: Server = None, context: Context = None) -> None:
        with failures():
            _get(kind, name, namespace, client(kubeconfig, server, context))

    get.__doc__ = f"Show one {noun}."

    @app.command("delete")
    def delete(name: OptionalName = None, namespace: Namespace = "default", file: OptionalFile = None,
               kubeconfig: Kubeconfig = None, server: Server = None, context: Context = None) -> None:
        with failures():
            _delete(kind, name, namespace, file, lambda: client(kubeconfig, server, context))

    delete.__doc__ = f"Delete a {noun} (-N), or the {noun}s of a file (-f)."

    @app.command("describe")
    def describe(name: OptionalName = None, namespace: Namespace = "default", output: Format = "yaml",
                 kubeconfig: Kubeconfig = None, server: Server = None, context: Context = None) -> None:
        with failures():
            _describe(kind, name, namespace, output, client(kubeconfig, server, context))

    describe.__doc__ = f"Print a {noun} (or every one of the namespace) as YAML or JSON."


_register(jobflow_app, FLOW)
_register(jobtemplate_app, TEMPLATE)
