"""Defaults for plain PodGroups without the pydantic round trip (``default_object``'s fast path).

``default_object`` parses the wire dict into its model, fills in the defaults and dumps it back. For a
PodGroup the model would give back unchanged (``pumice.api.plain``: the readers' check, derived from the
models) and without the spec fields whose nested defaults only the model fills in, the round trip gives back
the same document with the queue defaulted: that default can be filled in on the dict itself, at a fraction
of the cost. Anything else (and every kind but PodGroup) is left to the model: ``podgroup_defaults`` answers
None, and the caller takes the slow path, with its errors.
"""

from __future__ import annotations

from typing import Any

from pumice.api.defaults import DEFAULT_QUEUE
from pumice.api.plain import plain_check
from pumice.api.scheduling import PodGroup
from pumice.store.jsonutil import copy_json

__all__ = ["fill_podgroup_defaults", "plain_podgroup", "podgroup_defaults"]

#: Spec fields whose nested defaults (a topology's mode, a SubGroupPolicy's sizes) only the model fills in.
_MODEL_DEFAULTED = ("networkTopology", "subGroupPolicy")


def plain_podgroup(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` is a PodGroup whose model round trip would give it back unchanged (``pumice.api.plain``)
    and whose only defaults are the ones :func:`fill_podgroup_defaults` fills in."""
    if obj.get("kind") != PodGroup.KIND or obj.get("apiVersion") != PodGroup.API_VERSION or "metadata" not in obj:
        return False
    spec = obj.get("spec")
    if type(spec) is dict and any(key in spec for key in _MODEL_DEFAULTED):
        return False
    return plain_check(PodGroup)(obj)


def fill_podgroup_defaults(obj: dict[str, Any]) -> None:
    """Fill in a plain PodGroup's defaults, in place (``plain_podgroup(obj)`` must hold)."""
    spec = obj.get("spec")
    if spec is None:
        obj["spec"] = {"queue": DEFAULT_QUEUE}
    elif not spec.get("queue"):
        spec["queue"] = DEFAULT_QUEUE


def podgroup_defaults(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A plain PodGroup with its defaults (a new document), or None when the model must decide."""
    if not plain_podgroup(obj):
        return None
    out: dict[str, Any] = copy_json(obj)
    fill_podgroup_defaults(out)
    return out
