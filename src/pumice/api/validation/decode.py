"""Would kube-apiserver decode this body into its kind's Go type? (The ``400 BadRequest`` of a real cluster.)

A built-in kind's body is decoded field by field into typed Go structs: a string where a number belongs, a
float for an integer, a quantity that does not parse, a time that is not RFC 3339 or a list where an object
belongs fail the whole request with 400 before any rule is checked; ``null`` is the zero value and an unknown
field is ignored. :func:`decode_problem` walks an object with the field types of :mod:`.kubetypes` and names
the first such field, so that pumice answers 400 exactly where a real cluster does.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime
from typing import Any

from pumice.api.quantity import is_valid_quantity_text

from .kubetypes import TypeTable

__all__ = ["QUANTITY_DECODE_MESSAGE", "decode_field", "decode_problem", "plain_metadata"]

QUANTITY_DECODE_MESSAGE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$", re.ASCII)
_TIME_LAYOUT = "2006-01-02T15:04:05Z07:00"


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "number"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value[:40]}"' + ("..." if len(value) > 40 else "")
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return str(value).lower() if isinstance(value, bool) else str(value)


_TIMES: dict[str, bool] = {}  # text -> RFC 3339? (objects written in the same second share their timestamps)


def _time(text: str) -> bool:
    valid = _TIMES.get(text)
    if valid is None:
        valid = bool(_RFC3339.match(text))
        if valid:
            try:
                datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                valid = False
        if len(_TIMES) >= 4096:
            _TIMES.clear()
        _TIMES[text] = valid
    return valid


def _integer(value: Any, bounds: tuple[int, int], name: str) -> str | None:
    if type(value) is int:
        if bounds[0] <= value <= bounds[1]:
            return None
        return f"Read{name.capitalize()}: overflow: {value}"
    if isinstance(value, float):
        return "assertInteger: can not decode float as int"
    return f"expected an integer ({name}), found {_json_type(value)} {_shown(value)}"


def _scalar(kind: str, value: Any) -> str | None:
    """The problem decoding ``value`` as the scalar type ``kind`` (None if it decodes)."""
    if kind == "string":
        return None if type(value) is str else f'ReadString: expects " or n, but found {_shown(value)}'
    if kind == "int32":
        return _integer(value, _INT32, "int32")
    if kind == "int64":
        return _integer(value, _INT64, "int64")
    if kind == "boolean":
        return None if type(value) is bool else f"ReadBool: expect t or f, but found {_shown(value)}"
    if kind == "number":
        return None if type(value) in (int, float) else f"expected a number, found {_json_type(value)} {_shown(value)}"
    if kind == "quantity":
        if type(value) is str:
            return None if is_valid_quantity_text(value) else QUANTITY_DECODE_MESSAGE
        if type(value) in (int, float):
            return None
        return QUANTITY_DECODE_MESSAGE
    if kind == "int-or-string":
        if type(value) is str:
            return None
        if type(value) is int:
            return None if _INT32[0] <= value <= _INT32[1] else f"json: cannot unmarshal number {value} into int32"
        return f"json: cannot unmarshal {_json_type(value)} into Go value of type int32"
    if kind == "time":
        if type(value) is not str:
            return f"json: cannot unmarshal {_json_type(value)} into Go value of type string"
        return None if _time(value) else f'parsing time "{value[:40]}" as "{_TIME_LAYOUT}": cannot parse'
    if kind == "byte":
        if type(value) is list:  # Go reads a JSON array into a []byte element by element
            if all(type(v) is int and 0 <= v <= 255 for v in value):
                return None
            return "decode []byte: expects numbers from 0 to 255"
        if type(value) is not str:
            return f"decode base64: expects a string, found {_json_type(value)}"
        try:
            base64.b64decode(value.replace("\n", "").replace("\r", ""), validate=True)
        except (binascii.Error, ValueError):
            return "illegal base64 data"
        return None
    return None  # "any"


def _walk(table: TypeTable, kind: str, value: Any, path: str) -> str | None:
    if value is None:
        return None  # the zero value
    head = kind[0]
    if head == "@":
        definition = table.definitions.get(kind[1:])
        if definition is None:
            return None
        special = definition.get("type")
        if special is not None:
            return _walk(table, special, value, path)
        if type(value) is not dict:
            return f"{path or 'the object'}: readObjectStart: expect {{ or n, but found {_shown(value)}"
        properties = definition["properties"]
        for key, item in value.items():
            field_kind = properties.get(key)
            if field_kind is None or item is None:
                continue  # unknown fields are dropped by the decoder
            problem = _walk(table, field_kind, item, f"{path}.{key}" if path else key)
            if problem is not None:
                return problem
        return None
    if head == "[":
        if type(value) is not list:
            return f"{path}: decode slice: expect [ or n, but found {_shown(value)}"
        element = kind[1:]
        for index, item in enumerate(value):
            problem = _walk(table, element, item, f"{path}[{index}]")
            if problem is not None:
                return problem
        return None
    if head == "{":
        if type(value) is not dict:
            return f"{path}: ReadMapCB: expect {{ or n, but found {_shown(value)}"
        element = kind[1:]
        for key, item in value.items():
            problem = _walk(table, element, item, f"{path}[{key}]")
            if problem is not None:
                return problem
        return None
    problem = _scalar(kind, value)
    return None if problem is None else f"{path}: {problem}"


def decode_field(table: TypeTable, kind: str, value: Any, path: str) -> str | None:
    """Why ``value`` (at ``path``) cannot be decoded as the field type ``kind`` (see ``kubetypes``), or None."""
    return _walk(table, kind, value, path)


def decode_problem(table: TypeTable, definition: str, obj: dict[str, Any]) -> str | None:
    """Why ``obj`` cannot be decoded as the type ``definition`` (``path: problem``), or None if it can."""
    return _walk(table, "@" + definition, obj, "")


_META_STRINGS = frozenset({"name", "generateName", "namespace", "uid", "resourceVersion", "selfLink"})
_META_STRING_MAPS = frozenset({"labels", "annotations"})


def plain_metadata(meta: Any) -> bool:
    """Whether ``meta`` is metadata that surely decodes (the common shape: names, label and annotation maps,
    a timestamp, a generation): a shortcut past the walk, which decides every other case."""
    if type(meta) is not dict:
        return False
    for key, value in meta.items():
        if key in _META_STRINGS:
            if type(value) is not str:
                return False
        elif key in _META_STRING_MAPS:
            if type(value) is not dict:
                return False
            for item in value.values():
                if type(item) is not str:
                    return False
        elif key == "generation":
            if type(value) is not int or not _INT64[0] <= value <= _INT64[1]:
                return False
        elif key == "creationTimestamp":
            if type(value) is not str or not _time(value):
                return False
        else:
            return False  # owner references, finalizers, ...: the walk decides
    return True
