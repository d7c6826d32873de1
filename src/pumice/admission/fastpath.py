"""Defaults for plain PodGroups without the pydantic round trip (``default_object``'s fast path).

``default_object`` parses the wire dict into its model, fills in the defaults and dumps it back. For a
PodGroup whose every field is one the model declares, holding exactly the JSON type the model reads
(no null, no number for a string, no unknown key), that round trip gives back the same document: same
keys, same order, same values. Its defaults can then be filled in on the dict itself, at a fraction of
the cost. Anything else (and every kind but PodGroup) is left to the model: ``podgroup_defaults`` answers
None, and the caller takes the slow path, with its errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pumice.api.defaults import DEFAULT_QUEUE
from pumice.api.quantity import is_valid_quantity_text
from pumice.api.scheduling import PodGroup
from pumice.store.jsonutil import copy_json

__all__ = ["fill_podgroup_defaults", "plain_podgroup", "podgroup_defaults"]

Check = Callable[[Any], bool]


def _str(value: Any) -> bool:
    return type(value) is str


def _int(value: Any) -> bool:
    return type(value) is int  # Int is strict: no bool, no float, no "3"


def _bool(value: Any) -> bool:
    return type(value) is bool


def _quantity(value: Any) -> bool:
    return type(value) is str and is_valid_quantity_text(value)  # a number would be dumped as its text


def _str_map(value: Any) -> bool:
    if type(value) is not dict:
        return False
    for k, v in value.items():  # noqa: SIM110 - hot path, no generator
        if type(k) is not str or type(v) is not str:
            return False
    return True


def _map(check: Check) -> Check:
    def fits(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for k, v in value.items():  # noqa: SIM110 - hot path, no generator
            if type(k) is not str or not check(v):
                return False
        return True

    return fits


def _list(check: Check) -> Check:
    def fits(value: Any) -> bool:
        if type(value) is not list:
            return False
        for v in value:  # noqa: SIM110 - hot path, no generator
            if not check(v):
                return False
        return True

    return fits


def _record(fields: dict[str, Check]) -> Check:
    """A model: every key one of its fields' wire names (unknown keys would be kept as extras)."""
    strings = frozenset(k for k, check in fields.items() if check is _str)  # checked inline: most fields

    def fits(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for k, v in value.items():
            if k in strings:
                if type(v) is not str:
                    return False
                continue
            check = fields.get(k)
            if check is None or not check(v):
                return False
        return True

    return fits


#: Wire name -> check, for the fields of ``ObjectMeta``, ``PodGroupSpec`` and ``PodGroupStatus`` covered here.
OWNER_REFERENCE_FIELDS: dict[str, Check] = {
    "apiVersion": _str, "kind": _str, "name": _str, "uid": _str, "controller": _bool, "blockOwnerDeletion": _bool,
}
METADATA_FIELDS: dict[str, Check] = {
    "name": _str, "generateName": _str, "namespace": _str, "uid": _str, "resourceVersion": _str,
    "generation": _int, "creationTimestamp": _str, "deletionTimestamp": _str, "deletionGracePeriodSeconds": _int,
    "labels": _str_map, "annotations": _str_map, "ownerReferences": _list(_record(OWNER_REFERENCE_FIELDS)),
    "finalizers": _list(_str),
}
SPEC_FIELDS: dict[str, Check] = {  # networkTopology and subGroupPolicy (which have defaults) are not covered
    "minMember": _int, "minTaskMember": _map(_int), "queue": _str, "priorityClassName": _str,
    "minResources": _map(_quantity),
}
STATUS_FIELDS: dict[str, Check] = {"phase": _str, "running": _int, "succeeded": _int, "failed": _int}
PODGROUP_FIELDS: dict[str, Check] = {
    "apiVersion": _str, "kind": _str, "metadata": _record(METADATA_FIELDS), "spec": _record(SPEC_FIELDS),
    "status": _record(STATUS_FIELDS),
}
_PLAIN_PODGROUP = _record(PODGROUP_FIELDS)


def plain_podgroup(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` is a PodGroup whose model round trip would give it back unchanged."""
    return (obj.get("kind") == PodGroup.KIND and obj.get("apiVersion") == PodGroup.API_VERSION
            and "metadata" in obj and _PLAIN_PODGROUP(obj))


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
