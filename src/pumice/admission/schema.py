"""Structural OpenAPI v3 schemas as kube-apiserver applies them to custom resources: defaults, pruning, checks.

For each custom resource written: ``default`` values are filled in where a field is absent, fields the schema
does not declare are dropped (unless ``x-kubernetes-preserve-unknown-fields``), then the object is checked
(types, ``required``, ``enum``, bounds, lengths, ``pattern``, ``nullable``, ``x-kubernetes-int-or-string``).
``apiVersion``, ``kind`` and ``metadata`` are the server's, not the schema's, at the top level and in
``x-kubernetes-embedded-resource`` objects. CEL rules (``x-kubernetes-validations``) are not evaluated.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["apply_schema"]

Schema = dict[str, Any]
_META_KEYS = ("apiVersion", "kind", "metadata")


@lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str] | None:
    try:
        return re.compile(text)
    except re.error:
        return None


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _copy_default(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_default(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_default(v) for v in value]
    return value


def _walk(value: Any, schema: Schema, path: str, problems: list[str], *, top: bool = False) -> Any:
    """The value defaulted and pruned (a new object where anything changed); problems appended."""
    if value is None:
        if not schema.get("nullable"):
            problems.append(f'{path}: Invalid value: "null": {path} in body must be of type '
                            f'{schema.get("type") or "object"}: "null"')
        return value
    if schema.get("x-kubernetes-int-or-string"):
        if _type_of(value) not in ("integer", "string"):
            problems.append(f"{path}: Invalid value: {_show(value)}: {path} in body must be of type "
                            "integer-or-string")
        return value
    kind = schema.get("type")
    actual = _type_of(value)
    if kind and kind != actual and not (kind == "number" and actual == "integer"):
        problems.append(f'{path}: Invalid value: "{actual}": {path} in body must be of type {kind}: "{actual}"')
        return value
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_show(v) for v in schema["enum"])
        problems.append(f"{path}: Unsupported value: {_show(value)}: supported values: {allowed}")
    if actual in ("integer", "number"):
        _bounds(value, schema, path, problems)
    elif actual == "string":
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{path}: Too long: may not be more than {schema['maxLength']} bytes")
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be at least "
                            f"{schema['minLength']} chars long")
        pattern = _pattern(str(schema["pattern"])) if "pattern" in schema else None
        if pattern is not None and not pattern.search(value):
            problems.append(f"{path}: Invalid value: {_show(value)}: {path} in body should match "
                            f"'{schema['pattern']}'")
    elif actual == "array":
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path}: Too many: {len(value)}: must have at most {schema['maxItems']} items")
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{path}: Invalid value: {len(value)}: {path} in body should have at least "
                            f"{schema['minItems']} items")
        items = schema.get("items")
        if isinstance(items, dict):
            value = [_walk(v, items, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    elif actual == "object":
        value = _object(value, schema, path, problems, top=top)
    return value


def _object(value: dict[str, Any], schema: Schema, path: str, problems: list[str], *, top: bool) -> dict[str, Any]:
    properties: dict[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = top or bool(schema.get("x-kubernetes-embedded-resource"))
    out: dict[str, Any] = {}
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if embedded and key in _META_KEYS:
            out[key] = item
        elif key in properties:
            out[key] = _walk(item, properties[key], where, problems)
        elif isinstance(extra, dict):
            out[key] = _walk(item, extra, where, problems)
        elif extra is True or keep_unknown:
            out[key] = item
        # else: pruned, as kube-apiserver drops fields its structural schema does not declare
    for key, sub in properties.items():
        if key not in out and "default" in sub:
            out[key] = _copy_default(sub["default"])
    for key in schema.get("required") or ():
        if key not in out:
            where = f"{path}.{key}" if path else key
            problems.append(f"{where}: Required value")
    if "maxProperties" in schema and len(out) > schema["maxProperties"]:
        problems.append(f"{path}: Too many: {len(out)}: must have at most {schema['maxProperties']} items")
    return out


def _bounds(value: float, schema: Schema, path: str, problems: list[str]) -> None:
    if "minimum" in schema:
        low = schema["minimum"]
        if value < low or (schema.get("exclusiveMinimum") and value == low):
            problems.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be greater than or "
                            f"equal to {low}")
    if "maximum" in schema:
        high = schema["maximum"]
        if value > high or (schema.get("exclusiveMaximum") and value == high):
            problems.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be less than or "
                            f"equal to {high}")


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def apply_schema(obj: dict[str, Any], schema: Schema) -> tuple[dict[str, Any], list[str]]:
    """``obj`` defaulted and pruned by ``schema`` (the version's ``openAPIV3Schema``), and the problems found."""
    problems: list[str] = []
    out = _walk(obj, schema, "", problems, top=True)
    return (out if isinstance(out, dict) else obj), problems
