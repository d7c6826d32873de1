"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), applied to copies.

Neither function mutates its inputs; both return a new document. Any failure raises ``BadRequest`` and,
since the document is only stored after the whole patch applied, leaves the store untouched.

A JSON patch is bounded as kube-apiserver bounds it: at most :data:`MAX_JSON_PATCH_OPERATIONS` operations
(413), and what its ``copy`` operations duplicate adds up to at most :data:`MAX_JSON_PATCH_COPY_BYTES` (422),
so that a few bytes of patch cannot double an object again and again. Its result may not nest deeper than
:data:`MAX_DEPTH` (``add`` at a deep path, or a copy of a subtree into itself, could otherwise deepen an
object past what the recursive code reading it can take). A merge patch cannot do either: its result is no
deeper and no larger than the object and the patch together.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import BadRequest, Invalid, TooLarge
from .jsonutil import copy_json, json_equal, normalize_json

__all__ = [
    "PATCH_TYPES",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_patch",
    "merge_patch_shared",
    "merge_status_shared",
    "normalize_patch_type",
]

#: kube-apiserver's ``maxJSONPatchOperations``.
MAX_JSON_PATCH_OPERATIONS = 10_000
#: How much a JSON patch's ``copy`` operations may duplicate in all (Kubernetes' 3 MiB object limit).
MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024
#: Deepest nesting of objects/arrays a JSON patch may leave (see ``pumice.api.reader.MAX_DEPTH``).
MAX_DEPTH = 100

PATCH_TYPES: dict[str, str] = {
    "merge": "merge",
    "application/merge-patch+json": "merge",
    "json": "json",
    "application/json-patch+json": "json",
}


def normalize_patch_type(patch_type: str) -> str:
    """Map a short name or a content type to ``"merge"`` or ``"json"``; others are refused."""
    try:
        return PATCH_TYPES[patch_type]
    except KeyError:
        raise BadRequest(
            f"unsupported patch type {patch_type!r} (supported: merge / application/merge-patch+json, "
            "json / application/json-patch+json)"
        ) from None


def apply_patch(document: Any, patch: Any, patch_type: str) -> Any:
    """Apply a patch of the given type (see ``normalize_patch_type``)."""
    if normalize_patch_type(patch_type) == "merge":
        return apply_merge_patch(document, patch)
    return apply_json_patch(document, patch)


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return normalize_json(patch)
    return _merge(copy_json(target) if isinstance(target, dict) else {}, patch)


def merge_patch_shared(target: dict[str, Any], patch: dict[Any, Any], *, owned: bool = False) -> dict[str, Any]:
    """``apply_merge_patch`` for an immutable ``target``: the result shares what the patch leaves alone.

    Only the objects along the patched paths are new (as are ``metadata`` and the top level, which the
    store modifies); everything else is ``target``'s own. For the store, whose objects never change.

    With ``owned`` the patch is plain JSON handed over by its maker, who never touches it again: its lists
    and numbers go into the result as they are, neither checked nor copied (its objects are merged, as always).
    """
    result = _merge_shared(target, patch, owned)
    meta = result.get("metadata")
    if meta is target.get("metadata") and isinstance(meta, dict):
        result["metadata"] = dict(meta)
    return result


_ABSENT: Any = object()


def merge_status_shared(target: dict[str, Any], status: Any, *, owned: bool = False) -> dict[str, Any] | None:
    """``merge_patch_shared(target, {"status": status}, owned=owned)``, or None when that would give back a
    document equal to ``target`` (a write that changes nothing): found by comparing the statuses alone, since
    nothing else changes."""
    current = target.get("status", _ABSENT)
    if status is None:
        if current is _ABSENT:
            return None
        result = dict(target)
        del result["status"]
    else:
        kind = type(status)
        if kind is dict or isinstance(status, dict):
            merged = _merge_shared(current if isinstance(current, dict) else {}, status, owned)
        elif kind is str or kind is int or kind is bool or owned:
            merged = status
        else:
            merged = normalize_json(status)
        if merged == current:
            return None
        result = dict(target)
        result["status"] = merged
    meta = result.get("metadata")
    if meta is target.get("metadata") and isinstance(meta, dict):
        result["metadata"] = dict(meta)
    return result


def _merge_shared(target: dict[str, Any], patch: dict[Any, Any], owned: bool) -> dict[str, Any]:
    result = dict(target)
    for key, value in patch.items():
        if type(key) is not str:
            raise BadRequest(f"merge patch: key {key!r} is not a string")
        kind = type(value)
        if kind is str or kind is int or kind is bool:  # the common leaves, already plain JSON
            result[key] = value
        elif value is None:
            result.pop(key, None)
        elif kind is dict or isinstance(value, dict):
            current = result.get(key)
            result[key] = _merge_shared(current if isinstance(current, dict) else {}, value, owned)
        elif owned:
            result[key] = value  # plain JSON, the store's from now on (see ``merge_patch_shared``)
        else:
            result[key] = normalize_json(value)
    return result


def _merge(result: dict[str, Any], patch: dict[Any, Any]) -> dict[str, Any]:
    """Merge ``patch`` into ``result``, which the caller owns and which is modified in place."""
    for key, value in patch.items():
        if type(key) is not str:
            raise BadRequest(f"merge patch: key {key!r} is not a string")
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            result[key] = _merge(current if isinstance(current, dict) else {}, value)
        else:
            result[key] = normalize_json(value)
    return result


# --- RFC 6902 ---------------------------------------------------------------------------------------------


def _parse_pointer(pointer: Any) -> tuple[str, list[str]]:
    """RFC 6901: ``/a/b~1c`` -> ``("/a/b~1c", ["a", "b/c"])``; ``""`` is the whole document."""
    if not isinstance(pointer, str):
        raise BadRequest(f"JSON patch: path {pointer!r} is not a string")
    if pointer == "":
        return pointer, []
    if not pointer.startswith("/"):
        raise BadRequest(f"JSON patch: path {pointer!r} must start with '/'")
    return pointer, [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _index(container: list[Any], token: str, pointer: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise BadRequest(f"JSON patch: {token!r} in {pointer!r} is not an array index")
    index = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if index > limit:
        raise BadRequest(f"JSON patch: index {index} in {pointer!r} is out of range")
    return index


def _resolve(doc: Any, tokens: list[str], pointer: str) -> Any:
    node = doc
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                raise BadRequest(f"JSON patch: path {pointer!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, pointer, allow_end=False)]
        else:
            raise BadRequest(f"JSON patch: path {pointer!r} does not exist")
    return node


def _parent(doc: Any, tokens: list[str], pointer: str) -> Any:
    parent = _resolve(doc, tokens[:-1], pointer)
    if not isinstance(parent, dict | list):
        raise BadRequest(f"JSON patch: parent of {pointer!r} is not an object or array")
    return parent


def _add(doc: Any, tokens: list[str], value: Any, pointer: str) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, pointer)
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    else:
        parent.insert(_index(parent, tokens[-1], pointer, allow_end=True), value)
    return doc


def _remove(doc: Any, tokens: list[str], pointer: str) -> tuple[Any, Any]:
    if not tokens:
        raise BadRequest("JSON patch: cannot remove the whole document")
    parent = _parent(doc, tokens, pointer)
    if isinstance(parent, dict):
        if tokens[-1] not in parent:
            raise BadRequest(f"JSON patch: path {pointer!r} does not exist")
        return doc, parent.pop(tokens[-1])
    return doc, parent.pop(_index(parent, tokens[-1], pointer, allow_end=False))


def _replace(doc: Any, tokens: list[str], value: Any, pointer: str) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, pointer)
    if isinstance(parent, dict):
        if tokens[-1] not in parent:
            raise BadRequest(f"JSON patch: path {pointer!r} does not exist")
        parent[tokens[-1]] = value
    else:
        parent[_index(parent, tokens[-1], pointer, allow_end=False)] = value
    return doc


def _operation_value(op: dict[str, Any], index: int) -> Any:
    if "value" not in op:
        raise BadRequest(f"JSON patch: operation {index} ({op.get('op')}) needs a 'value'")
    return normalize_json(op["value"])


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _depth(value: Any) -> int:
    """How deeply objects/arrays nest in ``value`` (iterative: the value may be deeper than the stack)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        children: Any
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def apply_json_patch(document: Any, patch: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test, applied in order, all or nothing (see the limits in
    the module docstring)."""
    if not isinstance(patch, list):
        raise BadRequest("JSON patch must be an array of operations")
    if len(patch) > MAX_JSON_PATCH_OPERATIONS:
        raise TooLarge(f"Request entity too large: The allowed maximum operations in a JSON patch is "
                       f"{MAX_JSON_PATCH_OPERATIONS}, got {len(patch)}")
    copied = 0
    deepened = False
    doc = copy_json(document)
    for index, op in enumerate(patch):
        if not isinstance(op, dict):
            raise BadRequest(f"JSON patch: operation {index} is not an object")
        name = op.get("op")
        pointer, tokens = _parse_pointer(op.get("path"))
        if name == "add":
            doc = _add(doc, tokens, _operation_value(op, index), pointer)
        elif name == "remove":
            doc, _ = _remove(doc, tokens, pointer)
        elif name == "replace":
            doc = _replace(doc, tokens, _operation_value(op, index), pointer)
        elif name in ("move", "copy"):
            source, from_tokens = _parse_pointer(op.get("from"))
            if name == "move":
                if from_tokens == tokens:
                    continue
                if tokens[: len(from_tokens)] == from_tokens:
                    raise BadRequest(f"JSON patch: cannot move {source!r} into its own child {pointer!r}")
                doc, value = _remove(doc, from_tokens, source)
            else:
                value = _resolve(doc, from_tokens, source)
                if isinstance(value, dict | list) or (isinstance(value, str) and len(value) > 64):
                    copied += _json_size(value)
                    if copied > MAX_JSON_PATCH_COPY_BYTES:
                        raise Invalid(f"JSON patch: its copy operations would add {copied} bytes or more, more than "
                                      f"the limit of {MAX_JSON_PATCH_COPY_BYTES}")
                value = copy_json(value)
            deepened = deepened or isinstance(value, dict | list)
            doc = _add(doc, tokens, value, pointer)
        elif name == "test":
            if not json_equal(_resolve(doc, tokens, pointer), _operation_value(op, index)):
                raise BadRequest(f"JSON patch: test of {pointer!r} failed")
        else:
            raise BadRequest(f"JSON patch: operation {index} has unknown op {name!r}")
        if name in ("add", "replace") and isinstance(op.get("value"), dict | list):
            deepened = True
    if deepened and _depth(doc) > MAX_DEPTH:
        raise Invalid(f"JSON patch: the patched object would nest more than {MAX_DEPTH} levels of objects and "
                      "arrays")
    return doc
