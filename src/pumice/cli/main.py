"""Entry point of the ``pumice`` command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pumice.cli.lazy import LazyGroup
from pumice.cli.limits import MaxFileSize

app = typer.Typer(
    name="pumice",
    cls=LazyGroup,
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
    config: Annotated[Path | None, typer.Option(
        "--config", help="volcano-scheduler.conf (default: Volcano's plus network-topology-aware)")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="json or table")] = "table",
    show_scores: Annotated[
        bool, typer.Option("--node-scores", help="Also score every task on every node (no action runs for them)")
    ] = False,
    show_predicates: Annotated[
        bool, typer.Option("--predicates", help="Also run every enabled predicate for every pending task on every node")
    ] = False,
    discover_topology: Annotated[
        Path | None,
        typer.Option("--discover-topology", help="Label discovery config: build HyperNodes from the Nodes' labels"),
    ] = None,
    max_file_size: MaxFileSize = None,
) -> None:
    """Run exactly one scheduling session on the objects in FILE and print its decisions."""
    from pumice.api.reader import file_size_limit
    from pumice.cli import schedule as schedule_cmd
    from pumice.gctune import no_collection_at_exit, no_collections

    no_collection_at_exit()
    try:
        with file_size_limit(max_file_size), no_collections():
            text = schedule_cmd.run(file, config, output, show_scores, None, discover_topology, show_predicates)
    except schedule_cmd.UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None
    if text is not None:
        sys.stdout.write(text + "\n")



# Further commands live in their own modules, listed in pumice.cli.lazy and imported when they run.


if __name__ == "__main__":  # pragma: no cover
    app()
