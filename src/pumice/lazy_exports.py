"""Package names imported on first use (PEP 562), for packages whose ``__init__`` re-exports many modules.

``from pumice.api import Pod`` then imports ``pumice.api.core`` alone, not every model: a command pays only for
what it uses. Type checkers read each package's ``TYPE_CHECKING`` imports instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str],
                 names: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each name to the module that defines it."""

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        setattr(sys.modules[package], name, value)  # found once: later lookups are plain attribute reads
        return value

    def dir_() -> list[str]:
        return sorted(names)

    return getattr_, dir_
