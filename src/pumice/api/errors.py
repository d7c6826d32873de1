"""Errors meant for people: their ``str()`` is one line that a CLI prints before exiting 2."""

from __future__ import annotations

import json

__all__ = ["ManifestError", "UnknownResourceError"]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _printable(text: str) -> str:
    """``text``, JSON-quoted when it holds characters that do not print (an object named ``"\n"``)."""
    return text if text.isprintable() else json.dumps(text)


class ManifestError(ValueError):
    """A manifest that cannot be read, e.g.::

        cluster.yaml: document 3 (Pod c1/p1): spec.containers[0].resources.requests.cpu: invalid quantity "1x"

    Attributes: ``source`` (file name or ``<stdin>``), ``document`` (1-based, or None when
    the whole file is at fault), ``obj`` (``Kind ns/name`` as far as known), ``path`` (field
    path in wire names with list indices) and ``message``.
    """

    def __init__(
        self,
        source: str,
        message: str,
        *,
        document: int | None = None,
        obj: str | None = None,
        path: str | None = None,
    ) -> None:
        self.source = source
        self.message = _one_line(message)
        self.document = document
        self.obj = obj
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [_printable(self.source)]
        if self.document is not None:
            where = f"document {self.document}"
            if self.obj:
                where += f" ({_printable(self.obj)})"
            parts.append(where)
        if self.path:
            parts.append(self.path)
        parts.append(self.message)
        return ": ".join(parts)


class UnknownResourceError(LookupError):
    """A CLI resource word (``pods``, ``vj``...) that names no known kind."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f'unknown resource type "{self.name}"'
