"""The one error of bad simulator input: it names the file and the field, in one line."""

from __future__ import annotations

__all__ = ["ScenarioError"]


class ScenarioError(ValueError):
    """Bad scenario or trace input; ``str()`` is ``file: field: problem``."""

    def __init__(self, source: str, field: str, message: str) -> None:
        self.source = source
        self.field = field
        self.message = message
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(" ".join(f"{where}{message}".split()))
