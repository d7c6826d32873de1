"""Strategic merge patch for built-in kinds: a JSON merge patch that merges known lists by their merge keys.

Covers what kubectl sends: lists merged by key (``containers`` by ``name``, ``ports`` by ``containerPort`` or
``port``, ``env``/``volumes`` by ``name``, ``conditions``/``addresses`` by ``type``, ...), ``finalizers``
merged as a set, and the directives ``$patch`` (``replace``/``delete``/``merge``), ``$retainKeys``,
``$setElementOrder/<list>`` and ``$deleteFromPrimitiveList/<list>``. Other lists are replaced, as in a
merge patch. The inputs are never modified.
"""

from __future__ import annotations

from typing import Any

from pumice.store import BadRequest
from pumice.store.jsonutil import copy_json, normalize_json

__all__ = ["MERGE_KEYS", "apply_strategic_merge_patch"]

#: list field name -> the key its items merge by (``None`` for lists of scalars merged as sets).
MERGE_KEYS: dict[str, tuple[str, ...] | None] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "resourceClaims": ("name",),
    "schedulingGates": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "ports": ("containerPort", "port"),
    "conditions": ("type",),
    "addresses": ("type",),
    "taints": ("key",),
    "ownerReferences": ("uid",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey",),
    "finalizers": None,
}

_DELETE = object()
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def apply_strategic_merge_patch(document: dict[str, Any], patch: Any) -> dict[str, Any]:
    """The document with ``patch`` applied; ``BadRequest`` for a patch that is not an object."""
    if not isinstance(patch, dict):
        raise BadRequest("a strategic merge patch must be a JSON object")
    result = _merge_map(copy_json(document), normalize_json(patch))
    if result is _DELETE:
        raise BadRequest("a strategic merge patch cannot delete the whole object")
    return result


def _strip(patch: dict[str, Any]) -> dict[str, Any]:
    """A patch without directives, as stored when it replaces a value."""
    out: dict[str, Any] = {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        out[key] = _strip(value) if isinstance(value, dict) else value
    return out


def _merge_map(target: dict[str, Any], patch: dict[str, Any]) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _strip(patch)
    if directive not in (None, "merge"):
        raise BadRequest(f"strategic merge patch: unknown $patch directive {directive!r}")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith(_ORDER):
            orders[key[len(_ORDER):]] = value if isinstance(value, list) else []
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE):]
            current = target.get(field)
            if isinstance(current, list) and isinstance(value, list):
                target[field] = [item for item in current if item not in value]
            continue
        if key.startswith("$"):
            raise BadRequest(f"strategic merge patch: unknown directive {key!r}")
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            merged = _merge_map(current if isinstance(current, dict) else {}, value)
            if merged is _DELETE:
                target.pop(key, None)
            else:
                target[key] = merged
        elif isinstance(value, list):
            target[key] = _merge_list(key, target.get(key), value)
        else:
            target[key] = value
    for field, order in orders.items():
        if isinstance(target.get(field), list):
            target[field] = _reorder(field, target[field], order)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        for key in [k for k in target if k not in retain]:
            del target[key]
    return target


def _merge_key(field: str, items: list[Any]) -> str | None:
    keys = MERGE_KEYS.get(field, ())
    if not keys:
        return None
    for key in keys:
        if all(isinstance(item, dict) and key in item for item in items if not _is_directive(item)):
            return key
    return keys[0]


def _is_directive(item: Any) -> bool:
    return isinstance(item, dict) and "$patch" in item


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    if field not in MERGE_KEYS:
        if any(_is_directive(item) for item in patch):
            return [_strip(i) if isinstance(i, dict) else i for i in patch if not _is_directive(i)]
        return [_strip(i) if isinstance(i, dict) else i for i in patch]
    base = list(current) if isinstance(current, list) else []
    if MERGE_KEYS[field] is None:  # a set of scalars
        return base + [item for item in patch if item not in base]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip(i) for i in patch if isinstance(i, dict) and i.get("$patch") != "replace"]
    key = _merge_key(field, base + patch)
    if key is None:
        return patch
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise BadRequest(f"strategic merge patch: items of {field!r} must be objects with {key!r}")
        index = next((i for i, old in enumerate(base) if isinstance(old, dict) and old.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del base[index]
            continue
        if index is None:
            base.append(_strip(item))
        else:
            merged = _merge_map(base[index], item)
            if merged is _DELETE:
                del base[index]
            else:
                base[index] = merged
    return base


def _reorder(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    keys = MERGE_KEYS.get(field)

    def ident(item: Any) -> Any:
        if keys and isinstance(item, dict):
            for key in keys:
                if key in item:
                    return item[key]
        return item

    wanted = [ident(o) for o in order]
    ranked = [item for w in wanted for item in items if ident(item) == w]
    rest = [item for item in items if ident(item) not in wanted]
    return ranked + rest
