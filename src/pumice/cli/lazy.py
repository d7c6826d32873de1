"""The ``pumice`` command group, importing a command's module only when that command runs.

Every command module pulls in what it works with (the API server, the simulator, the Kubernetes
client, ...): importing them all cost about half a second on each start, which a one-shot command
such as ``pumice schedule`` or a scheduler process racing to its first bind pays for nothing.
``--help`` still lists every command (it loads them all).
"""

from __future__ import annotations

from importlib import import_module

import typer
import typer.main
from typer._click.core import Command, Context
from typer.core import TyperGroup

__all__ = ["COMMANDS", "LazyGroup"]

#: name -> (module, attribute, "group" for a Typer app of subcommands or "command" for one function),
#: in the order ``--help`` lists them.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "job": ("pumice.cli.jobs", "app", "group"),
    "queue": ("pumice.cli.queues", "app", "group"),
    "pod": ("pumice.cli.pods", "app", "group"),
    "jobflow": ("pumice.cli.flows", "jobflow_app", "group"),
    "jobtemplate": ("pumice.cli.flows", "jobtemplate_app", "group"),
    "describe": ("pumice.cli.describe", "app", "group"),
    "federation": ("pumice.cli.federation", "app", "group"),
    "apply": ("pumice.cli.kubectl", "apply", "command"),
    "get": ("pumice.cli.kubectl", "get", "command"),
    "delete": ("pumice.cli.kubectl", "delete", "command"),
    "validate": ("pumice.cli.validate", "validate", "command"),
    "sim": ("pumice.cli.sim", "sim", "command"),
    "up": ("pumice.cli.up", "up", "command"),
    "crds": ("pumice.cli.crds", "crds", "command"),
    "admission": ("pumice.cli.admission", "app", "group"),
    "down": ("pumice.cli.up", "down", "command"),
    "run": ("pumice.cli.run", "run", "command"),
}


def load_command(name: str) -> Command:
    """The click command ``name`` of :data:`COMMANDS`, built from its module as ``add_typer``/``command`` would."""
    module, attr, how = COMMANDS[name]
    target = getattr(import_module(module), attr)
    if how == "group":
        group = typer.main.get_group(target)
        group.name = name
        return group
    holder = typer.Typer()
    holder.command(name)(target)
    return typer.main.get_command(holder)


class LazyGroup(TyperGroup):
    """The top-level group: commands defined in ``main`` first, then those of :data:`COMMANDS`."""

    def list_commands(self, ctx: Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in COMMANDS if n not in self.commands)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in COMMANDS:
            command = self.commands[cmd_name] = load_command(cmd_name)
        return command
