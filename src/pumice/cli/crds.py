"""``pumice crds``: the CustomResourceDefinitions of every custom kind pumice serves.

``pumice crds | kubectl apply -f -`` prepares a cluster: Volcano's kinds with structural schemas made from
pumice's models (``pumice.api.schema``), status subresources, printer columns and short names.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from pumice.api import GenericObject, dump_yaml
from pumice.api.schema import crds as all_crds

__all__ = ["crds", "render"]


def render(output: str = "yaml") -> str:
    """The CRDs as multi-document YAML, or as one JSON ``v1`` ``List``."""
    objects = all_crds()
    if output == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n"
    return dump_yaml([GenericObject.model_validate(obj) for obj in objects])


def crds(
    output: Annotated[str, typer.Option("--output", "-o", help="yaml (documents) or json (a v1 List)")] = "yaml",
) -> None:
    """Print the CRDs of Volcano's kinds (pipe them to ``kubectl apply -f -``)."""
    if output not in ("yaml", "json"):
        print(f"error: --output must be yaml or json, not {output!r}", file=sys.stderr)
        raise typer.Exit(2)
    sys.stdout.write(render(output))
