"""What a plugin and an action are (the built-in ones are listed in :mod:`pumice.scheduler.registry`).

A plugin is a class whose methods are its callbacks: every session builds a new instance from the
plugin's configured arguments, calls ``on_session_open``, where the plugin sets its per-session
state (typed fields) and registers its methods at extension points (``ssn.add(POINT, self.name,
self.method)``), and ``on_session_close`` at the end. See "Writing a plugin" in docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pumice.api.arguments import Arguments

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session


class Plugin:
    """A scheduling policy."""

    #: The name configurations use (``tiers[].plugins[].name``).
    name: ClassVar[str] = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None


class Action:
    """One step of a scheduling cycle (enqueue, allocate, ...), run in configured order."""

    name: ClassVar[str] = ""

    def execute(self, ssn: Session) -> None:  # pragma: no cover - interface
        raise NotImplementedError
