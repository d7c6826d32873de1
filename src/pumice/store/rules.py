"""What Kubernetes' registry does to an object on each write, as plain functions over JSON dicts.

System fields (names, uids, timestamps, type), what an update may and may not change, and the pod conditions
a binding sets. No state and no locks: ``WritePath`` calls these under the store's lock.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from .errors import BadRequest, Invalid
from .jsonutil import copy_json
from .resources import ResourceInfo

__all__ = [
    "body_changed",
    "check_metadata",
    "check_name",
    "check_update",
    "describe",
    "finalized",
    "format_timestamp",
    "generated_name",
    "metadata",
    "prepare_update",
    "qualified",
    "set_condition",
    "set_type",
    "uuid4_text",
]

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # as Kubernetes: no vowels, no look-alikes
_MAX_GENERATED_BASE = 58
#: what a create drops from the caller's metadata (the store sets it, or it is not the caller's to set)
SYSTEM_CREATE_DROPS = ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds")
#: what an update keeps from the stored metadata, whatever the caller sent
SYSTEM_UPDATE_KEEPS = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
)
_UUID4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET = (0x8000 << 48) | (4 << 76)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes timestamps (naive means UTC)."""
    tz = moment.tzinfo
    if tz is None:
        moment = moment.replace(tzinfo=UTC)
    m = moment if tz is UTC else moment.astimezone(UTC)
    if m.year < 1000:  # how strftime writes such years depends on the platform
        return m.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{m.year}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}Z"  # strftime's, faster


def uuid4_text(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))``, without building the ``UUID`` (a store write makes many)."""
    bits = bits & _UUID4_CLEAR | _UUID4_SET  # RFC 4122 variant, version 4
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def generated_name(base: str, rng: random.Random) -> str:
    """``metadata.generateName`` plus five random characters, as Kubernetes' ``SimpleNameGenerator``."""
    suffix = "".join(rng.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))
    return base[:_MAX_GENERATED_BASE] + suffix


def metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj["metadata"]``, created if absent; ``BadRequest`` if it is no object."""
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    elif not isinstance(meta, dict):
        raise BadRequest("metadata must be an object")
    return meta


def check_metadata(meta: dict[str, Any]) -> None:
    """The metadata fields the store itself reads (selectors, finalizers, owners) must have their types."""
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if type(value) is dict and None in value.values():  # Go decodes null into a map of strings as ""
            value = meta[key] = {k: "" if v is None else v for k, v in value.items()}
        if value is not None and (type(value) is not dict or not all(type(v) is str for v in value.values())):
            raise BadRequest(f"metadata.{key}: expected a map of strings to strings, got {_shape(value, dict)}")
    finalizers = meta.get("finalizers")
    if finalizers is not None and (type(finalizers) is not list or not all(type(f) is str for f in finalizers)):
        raise BadRequest(f"metadata.finalizers: expected a list of strings, got {_shape(finalizers, list)}")
    owners = meta.get("ownerReferences")
    if owners is not None and (type(owners) is not list or not all(type(o) is dict for o in owners)):
        raise BadRequest(f"metadata.ownerReferences: expected a list of objects, got {_shape(owners, list)}")


def _shape(value: Any, expected: type) -> str:
    if type(value) is expected:
        return "an item of another type" if expected is list else "a value that is not a string"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def qualified(resource: str, subresource: str | None) -> str:
    """The resource string of a (sub)resource write, as admission sees it: ``pods`` or ``pods/status``."""
    return resource if subresource is None else f"{resource}/{subresource}"


def describe(resource: str, namespace: str, name: str) -> str:
    """How errors name an object: ``pods "a" in namespace "ns"``."""
    where = f' in namespace "{namespace}"' if namespace else ""
    return f'{resource} "{name}"{where}'


def check_name(name: Any) -> str:
    """``name`` if it is a valid object name, else ``Invalid``."""
    if not isinstance(name, str) or not name:
        raise Invalid("metadata.name: Required value: name or generateName is required")
    if "/" in name or "%" in name or name in (".", ".."):  # one URL path segment (lengths: each kind's rules)
        raise Invalid(f"metadata.name: Invalid value: {name!r}: not a valid object name")
    return name


def finalized(resource: str, obj: dict[str, Any]) -> bool:
    """Whether nothing holds ``obj`` back from deletion: no ``metadata.finalizers`` and, for a Namespace, no
    ``spec.finalizers`` either (``kubernetes``: the namespace controller deletes its content first)."""
    if obj["metadata"].get("finalizers"):
        return False
    if resource == "namespaces":
        spec = obj.get("spec")
        return not (isinstance(spec, dict) and spec.get("finalizers"))
    return True


def set_type(info: ResourceInfo, obj: dict[str, Any]) -> None:
    """Fill in ``apiVersion`` and ``kind`` (kept first, as on the wire); ``BadRequest`` if they are another's."""
    if not obj.get("kind") or not obj.get("apiVersion"):
        rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        head = {
            "apiVersion": obj.get("apiVersion") or info.api_version,
            "kind": obj.get("kind") or info.kind,
        }
        obj.clear()
        obj.update(head)
        obj.update(rest)
    kind = obj["kind"]
    if kind != info.kind:
        raise BadRequest(f"kind {kind!r} does not belong to resource {info.name!r} (expected {info.kind!r})")
    api_version = obj["apiVersion"]
    if not isinstance(api_version, str) or api_version.rpartition("/")[0] != info.group:
        raise BadRequest(
            f"apiVersion {api_version!r} does not belong to resource {info.name!r} (expected {info.api_version!r})"
        )
    if info.other_versions and api_version != info.api_version and info.serves(api_version):
        obj["apiVersion"] = info.api_version  # stored in the storage version, as Kubernetes converts it


def prepare_update(
    info: ResourceInfo,
    old: dict[str, Any],
    incoming: dict[str, Any],
    subresource: str | None,
    *,
    owned: bool,
) -> dict[str, Any]:
    """Apply the rules of an update to ``incoming``: what the caller may and may not change.

    ``incoming``'s top level and its ``metadata`` are the caller's to modify; deeper parts may be shared
    with ``old`` (stored objects are immutable). With ``owned`` the result shares nothing with ``old``
    (it goes to an admission hook, which may modify it in place).
    """
    if subresource == "status":
        new = copy_json(old) if owned else {**old, "metadata": dict(old["metadata"])}
        if "status" in incoming:
            new["status"] = incoming["status"]
        else:
            new.pop("status", None)
        return new
    meta = metadata(incoming)
    old_meta = old["metadata"]
    for key in SYSTEM_UPDATE_KEEPS:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if info.has_status:
        if "status" in old:
            incoming["status"] = copy_json(old["status"]) if owned else old["status"]
        else:
            incoming.pop("status", None)
    set_type(info, incoming)
    return incoming


def check_update(info: ResourceInfo, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Invariants no update may break, checked after admission."""
    if info.name == "pods":
        old_spec = old.get("spec")
        old_node = (old_spec.get("nodeName") if isinstance(old_spec, dict) else None) or ""
        new_spec = new.get("spec")
        new_node = (new_spec.get("nodeName") if isinstance(new_spec, dict) else None) or ""
        if old_node != new_node:
            raise Invalid(
                f"spec.nodeName: Forbidden: cannot change from {old_node!r} to {new_node!r} by update; "
                "use bind() to assign an unbound pod"
            )
    old_meta = old["metadata"]
    if old_meta.get("deletionTimestamp"):
        added = set(new["metadata"].get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if added:
            raise Invalid(
                f"metadata.finalizers: Forbidden: no new finalizers can be added if the object is "
                f"being deleted, found new finalizers {sorted(added)}"
            )


def body_changed(info: ResourceInfo, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether anything but metadata (and status, for resources with a status subresource) changed: what
    bumps ``metadata.generation``."""
    skip = ("metadata", "status") if info.has_status else ("metadata",)
    keys = (old.keys() | new.keys()).difference(skip)
    return any(old.get(key) != new.get(key) for key in keys)


def set_condition(pod: dict[str, Any], condition: dict[str, Any], now: str) -> None:
    """Set a pod condition as Kubernetes' ``UpdatePodCondition``: replaced whole, its transition time kept
    when its status did not change."""
    status = pod.get("status")
    if not isinstance(status, dict):
        status = pod["status"] = {}
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    condition = {**condition, "lastTransitionTime": now}
    for index, existing in enumerate(conditions):
        if isinstance(existing, dict) and existing.get("type") == condition["type"]:
            if existing.get("status") == condition["status"]:
                condition["lastTransitionTime"] = existing.get("lastTransitionTime")
            conditions[index] = condition
            return
    conditions.append(condition)
