"""``AdmissionGate``: how an embedded store runs its admission hook (see ``pumice.store.protocol.Admission``).

Which writes the hook sees (its ``resources``, ``updates`` and ``deletes``, read on every write: a hook may be given
them after the store is built), the copies that protect the stored objects from it, and what its answer
becomes (normalized JSON, or ``new`` itself for a hook with ``plain_results``).
"""

from __future__ import annotations

from typing import Any

from .jsonutil import copy_json, normalize_json
from .protocol import Admission

__all__ = ["AdmissionGate"]


class AdmissionGate:
    """The store's admission hook (``None``: every write passes) and the rules of calling it."""

    __slots__ = ("hook",)

    def __init__(self, hook: Admission | None) -> None:
        self.hook = hook

    def vets(self, resource: str) -> bool:
        """Whether the hook wants to see writes to ``resource`` (qualified with a subresource).

        A hook may declare the resources it vets (``resources``); every other write skips it, and with it
        the copies that protect the stored objects from it.
        """
        hook = self.hook
        if hook is None:
            return False
        scope = getattr(hook, "resources", None)
        return scope is None or resource in scope

    def vets_update(self, resource: str) -> bool:
        """Whether the hook wants to see updates of ``resource`` (its ``updates``, if declared)."""
        scope = getattr(self.hook, "updates", None)
        return self.vets(resource) if scope is None else resource in scope

    def vets_delete(self, resource: str) -> bool:
        """Whether the hook wants to see deletions of ``resource`` (its ``deletes``, if declared)."""
        scope = getattr(self.hook, "deletes", None)
        return self.vets(resource) if scope is None else resource in scope

    def admit(
        self, operation: str, resource: str, new: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """Run the hook on a write: the object to store instead of ``new`` (``None`` for a deletion).

        ``old`` is the stored object: the hook gets a copy. Whatever the hook raises refuses the write.
        """
        hook = self.hook
        if hook is None or not self.vets(resource):
            return new
        result = hook(operation, resource, new, None if old is None else copy_json(old))
        if operation == "DELETE":
            return None
        if result is None:
            result = new
        if not isinstance(result, dict):
            raise TypeError(f"admission returned {type(result).__name__}, expected a dict or None")
        if result is new and getattr(hook, "plain_results", False):
            return new  # plain JSON, changed in place at most, as the hook promises: no copy needed
        return normalize_json(result)

    def admit_delete(self, resource: str, old: dict[str, Any]) -> None:
        """Run the hook on a deletion it wants to see (``vets_delete``): it may only refuse it."""
        hook = self.hook
        if hook is not None and self.vets_delete(resource):
            hook("DELETE", resource, None, copy_json(old))
