"""``--max-file-size``: the limit on one manifest file (or stdin) that every reading command takes.

The default is :data:`pumice.api.sizes.DEFAULT_MAX_FILE_BYTES` (64 MiB); a command runs its reading
inside :func:`pumice.api.reader.file_size_limit` with the value given.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pumice.api.quantity import QuantityError, int_value
from pumice.api.sizes import DEFAULT_MAX_FILE_BYTES, format_bytes

__all__ = ["MaxFileSize", "parse_size"]


def parse_size(text: str) -> int:
    """``64Mi``, ``100M``, ``1Gi``, ``5000000`` -> bytes (a positive whole number)."""
    try:
        value = int_value(text.strip())
    except (QuantityError, ValueError):
        raise typer.BadParameter(f"{text!r} is not a size (use bytes or a quantity such as 64Mi, 1Gi)") from None
    if value <= 0:
        raise typer.BadParameter(f"{text!r}: the size must be positive")
    return value


MaxFileSize = Annotated[
    int | None,
    typer.Option(
        "--max-file-size",
        parser=parse_size,
        metavar="SIZE",
        help=f"Largest manifest file (or stdin) read, e.g. 200Mi (default {format_bytes(DEFAULT_MAX_FILE_BYTES)})",
    ),
]
