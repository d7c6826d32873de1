"""Entry point of the ``pumice`` command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from pumice.cli import admission as admission_cmd
from pumice.cli import crds as crds_cmd
from pumice.cli import describe as describe_cmd
from pumice.cli import federation as federation_cmd
from pumice.cli import flows as flows_cmd
from pumice.cli import jobs as jobs_cmd
from pumice.cli import kubectl as kubectl_cmd
from pumice.cli import pods as pods_cmd
from pumice.cli import queues as queues_cmd
from pumice.cli import run as run_cmd
from pumice.cli import schedule as schedule_cmd
from pumice.cli import sim as sim_cmd
from pumice.cli import up as up_cmd
from pumice.cli import validate
from pumice.cli.limits import MaxFileSize

app = typer.Typer(
    name="pumice",
    help="A Volcano-compatible batch scheduler: the same policy code live and offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main() -> None:
    """pumice: Volcano's scheduling, embedded."""


@app.command()
def schedule(
    file: Annotated[list[Path], typer.Option("--file", "-f", help="Manifest(s): Nodes, Pods, PodGroups, Queues, ...")],
    config: Annotated[Path | None, typer.Option("--config", help="volcano-scheduler.conf (default: Volcano's)")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="json or table")] = "table",
    show_scores: Annotated[
        bool, typer.Option("--node-scores", help="Also score every pending task on every node")
    ] = False,
    discover_topology: Annotated[
        Path | None,
        typer.Option("--discover-topology", help="Label discovery config: build HyperNodes from the Nodes' labels"),
    ] = None,
    max_file_size: MaxFileSize = None,
) -> None:
    """Run exactly one scheduling session on the objects in FILE and print its decisions."""
    from pumice.api.reader import file_size_limit

    console = Console()
    try:
        with file_size_limit(max_file_size):
            text = schedule_cmd.run(file, config, output, show_scores, console, discover_topology)
    except schedule_cmd.UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None
    if text is not None:
        sys.stdout.write(text + "\n")


# Further commands live in their own modules and are registered here, one line each.
app.add_typer(jobs_cmd.app, name="job")
app.add_typer(queues_cmd.app, name="queue")
app.add_typer(pods_cmd.app, name="pod")
app.add_typer(flows_cmd.jobflow_app, name="jobflow")
app.add_typer(flows_cmd.jobtemplate_app, name="jobtemplate")
app.add_typer(describe_cmd.app, name="describe")
app.add_typer(federation_cmd.app, name="federation")
app.command("apply")(kubectl_cmd.apply)
app.command("get")(kubectl_cmd.get)
app.command("delete")(kubectl_cmd.delete)
app.command("validate")(validate.validate)
app.command("sim")(sim_cmd.sim)
app.command("up")(up_cmd.up)
app.command("crds")(crds_cmd.crds)
app.add_typer(admission_cmd.app, name="admission")
app.command("down")(up_cmd.down)
app.command("run")(run_cmd.run)


if __name__ == "__main__":  # pragma: no cover
    app()
