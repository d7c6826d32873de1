"""Helpers for plain JSON values (dict / list / str / int / float / bool / None).

The store hands out and takes in copies; a type-dispatching copy is three times faster than
``copy.deepcopy`` for these trees, and ``normalize`` also refuses anything that is not JSON, so the memory
and SQLite stores accept exactly the same objects.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import BadRequest

__all__ = ["copy_json", "is_plain_json", "json_equal", "normalize_json"]


def copy_json(value: Any) -> Any:
    """Deep-copy a JSON value that is known to be valid (containers are rebuilt, scalars shared)."""
    kind = type(value)
    if kind is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if kind is list:
        return [copy_json(v) for v in value]
    return value


class _NotJson(Exception):
    pass


def normalize_json(value: Any) -> Any:
    """Deep-copy ``value`` as plain JSON (tuples become lists); raise ``BadRequest`` for anything else."""
    try:
        return _normalize(value)
    except _NotJson:
        raise BadRequest(_describe_bad(value, "")) from None


def _normalize(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _NotJson
            leaf = type(v)
            # the common leaves inline: most of a document, and a call each would double the cost
            out[k] = v if leaf is str or leaf is int or leaf is bool or v is None else _normalize(v)
        return out
    if kind is list or kind is tuple:
        return [v if type(v) is str else _normalize(v) for v in value]
    if kind is float:
        if not math.isfinite(value):
            raise _NotJson
        return value
    if isinstance(value, dict):
        return _normalize(dict(value))
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):  # IntEnum and friends
        return int(value)
    if isinstance(value, str):  # StrEnum and friends
        return str(value)
    raise _NotJson


def is_plain_json(value: Any) -> bool:
    """Whether ``value`` is plain JSON as ``normalize_json`` makes it (dicts with str keys, lists, str, int,
    bool, None, finite floats; no tuple, no subclass): what it would copy unchanged. Builds nothing."""
    kind = type(value)
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            leaf = type(v)
            if not (leaf is str or leaf is int or leaf is bool or v is None or is_plain_json(v)):
                return False
        return True
    if kind is list:
        for v in value:  # noqa: SIM110 - hot path, no generator
            if type(v) is not str and not is_plain_json(v):
                return False
        return True
    if kind is str or kind is int or kind is bool or value is None:
        return True
    return kind is float and math.isfinite(value)


def _describe_bad(value: Any, path: str) -> str:
    """Find the first non-JSON value again, slowly, to say where it is."""
    if isinstance(value, dict):
        for k, v in value.items():
            if type(k) is not str:
                return f"object key {k!r} at {path or '/'} is not a string"
            try:
                _normalize(v)
            except _NotJson:
                return _describe_bad(v, f"{path}/{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            try:
                _normalize(v)
            except _NotJson:
                return _describe_bad(v, f"{path}/{i}")
    return f"value {value!r} of type {type(value).__name__} at {path or '/'} is not valid JSON"


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``1 == 1.0`` but ``True != 1`` and ``"1" != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
