"""``pumice validate -f FILE...``: would the API accept these manifests, applied in order?

The objects go, in file order, into a fresh in-memory store guarded by Volcano's admission rules and
kube-apiserver's checks (with the ``root`` and ``default`` queues already there): a CustomResourceDefinition
makes its kind known to the objects after it, as on a cluster. Every refusal is printed on one line and
nothing is applied anywhere. Exit 0 if all are accepted, 1 if any is refused, 2 for unreadable input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from pumice.admission import admitted_memory_store
from pumice.api import KubeObject, ManifestError, load_file
from pumice.api.reader import file_size_limit
from pumice.controllers import ensure_default_queues
from pumice.store import MemoryStore, StoreError

from .limits import MaxFileSize

__all__ = ["Refusal", "check", "validate"]


class Refusal:
    """One object the API would refuse: where it came from and why."""

    def __init__(self, source: str, index: int, obj: KubeObject, message: str) -> None:
        self.source, self.index, self.obj, self.message = source, index, obj, message

    def __str__(self) -> str:
        return f"{self.source}: object {self.index} ({self.obj.kind} {self.obj.key}): {self.message}"


def _load(paths: list[Path]) -> list[tuple[str, int, KubeObject]]:
    loaded: list[tuple[str, int, KubeObject]] = []
    for path in paths:
        if not path.is_file():
            raise ManifestError(str(path), "no such file" if not path.exists() else "not a regular file")
        loaded.extend((str(path), i, obj) for i, obj in enumerate(load_file(path), start=1))
    return loaded


def check(objects: list[tuple[str, int, KubeObject]], store: MemoryStore | None = None) -> tuple[int, list[Refusal]]:
    """Apply ``objects`` in order to ``store`` (a fresh admitted one by default): accepted count, refusals."""
    if store is None:
        store = admitted_memory_store()
        ensure_default_queues(store)
    accepted, refusals = 0, []
    for source, index, obj in objects:
        data: dict[str, Any] = obj.to_dict()
        # the store's registry knows the custom resources of the CRDs accepted so far, as an API server does
        info = store.resources.for_type(str(data.get("apiVersion")), str(data.get("kind")))
        if info is None:
            message = (f'no matches for kind "{data.get("kind")}" in version "{data.get("apiVersion")}" '
                       "(is its CustomResourceDefinition applied first?)")
            refusals.append(Refusal(source, index, obj, message))
            continue
        try:
            store.create(info.name, data)
        except StoreError as err:
            refusals.append(Refusal(source, index, obj, err.message))
            continue
        accepted += 1
    return accepted, refusals


def validate(
    file: Annotated[list[Path], typer.Option("--file", "-f", help="Manifest(s), applied in order")],
    more: Annotated[list[Path] | None, typer.Argument(help="More manifests (so -f a.yaml b.yaml works)")] = None,
    max_file_size: MaxFileSize = None,
) -> None:
    """Check manifests against Volcano's admission rules, applied in order to an empty cluster."""
    try:
        with file_size_limit(max_file_size):
            objects = _load([*file, *(more or [])])
    except ManifestError as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None
    accepted, refusals = check(objects)
    for refusal in refusals:
        print(f"refused: {refusal}")
    print(f"{accepted} accepted, {len(refusals)} refused")
    if refusals:
        raise typer.Exit(1)
