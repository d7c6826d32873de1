"""Size limits on what is read, and their wording (no dependencies: the CLI's options name them)."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_FILE_BYTES", "DEFAULT_MAX_OBJECT_BYTES", "format_bytes"]

#: Kubernetes' limit on a request body (``MaxRequestBodyBytes``, 3 MiB), and so on one object.
DEFAULT_MAX_OBJECT_BYTES = 3 * 1024 * 1024
#: Default limit on one manifest file (or stdin) read by the CLI.
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024


def format_bytes(count: int) -> str:
    """``3145728`` -> ``3 MiB``; ``1000`` -> ``1000 bytes``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"
