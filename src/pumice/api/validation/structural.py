"""Structural OpenAPI v3 schemas, applied to custom resources as kube-apiserver applies a CRD's schema.

Three steps, in kube-apiserver's order: fields the schema does not declare are pruned (unless
``x-kubernetes-preserve-unknown-fields``) and ``null`` is dropped where the schema is not ``nullable``;
``default`` values fill in absent fields; then the object is checked: JSON types (an integral float is an
integer), ``enum``, bounds, lengths, ``pattern``, ``required``, item and property counts, ``uniqueItems``,
``x-kubernetes-int-or-string``, ``anyOf``/``allOf``/``oneOf``/``not`` in their value-validation form.
``apiVersion``, ``kind`` and ``metadata`` at the top (and in ``x-kubernetes-embedded-resource`` objects) are the
API server's, not the schema's. Errors name fields as kube-apiserver 1.20 does (``spec.tasks.replicas``:
list indexes left out) with its messages, so that a refusal reads the same embedded and on a cluster.

Compiled schemas are cached by identity: callers pass the same schema object for every object of a kind.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from .errors import FieldError, invalid, not_supported, required

__all__ = ["SchemaResult", "apply_structural_schema", "prune_and_default"]

Schema = dict[str, Any]
_META_KEYS = frozenset({"apiVersion", "kind", "metadata"})


@lru_cache(maxsize=512)
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
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _fits(kind: str, actual: str) -> bool:
    return kind == actual or (kind == "number" and actual == "integer")


def _shown(value: Any) -> Any:
    """A bad value as the errors show it: numbers as numbers, everything else as text."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ---------------------------------------------------------------------------- prune, nulls, defaults


def prune_and_default(value: Any, schema: Schema, *, top: bool = False) -> Any:
    """``value`` with unknown fields pruned, ``null`` dropped where not nullable, defaults filled in.

    Returns a new object wherever anything changes (the input is not modified).
    """
    if isinstance(value, dict):
        kind = schema.get("type")
        if kind not in (None, "object"):
            return value
        properties: dict[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keep = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = top or bool(schema.get("x-kubernetes-embedded-resource"))
        out: dict[str, Any] = {}
        for key, item in value.items():
            if embedded and key in _META_KEYS:
                out[key] = item
                continue
            sub = properties.get(key)
            if sub is None and isinstance(extra, dict):
                sub = extra
            if sub is None:
                if keep or extra is True:
                    out[key] = item
                continue  # pruned
            if item is None and not sub.get("nullable"):
                continue  # a null where the schema allows none is dropped
            out[key] = prune_and_default(item, sub)
        for key, sub in properties.items():
            if key not in out and "default" in sub:
                out[key] = json.loads(json.dumps(sub["default"]))
        return out
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            return [prune_and_default(v, items) for v in value]
    elif isinstance(value, float) and value.is_integer() and schema.get("type") == "integer":
        return int(value)  # 2.0 is the integer 2, stored as such
    return value


# ---------------------------------------------------------------------------- validation


def _int_or_string(value: Any, path: str, errors: list[FieldError]) -> bool:
    """The three errors kube-apiserver gives a value of an ``x-kubernetes-int-or-string`` field of another type
    (True if the value is an integer or a string)."""
    actual = _type_of(value)
    if actual in ("integer", "string"):
        return True
    errors.append(invalid(path, actual, f'{path} in body must be of type integer,string: "{actual}"'))
    errors.append(invalid("<nil>", "", f'"{path}" must validate at least one schema (anyOf)'))
    errors.append(invalid(path, actual, f'{path} in body must be of type integer: "{actual}"'))
    return False


def _check(value: Any, schema: Schema, path: str, errors: list[FieldError], *, top: bool = False) -> None:
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            errors.append(invalid(path, "null", f'{path} in body must be of type {schema["type"]}: "null"'))
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not _int_or_string(value, path, errors):
            return
    else:
        kind = schema.get("type")
        actual = _type_of(value)
        if kind and not _fits(kind, actual):
            errors.append(invalid(path, actual, f'{path} in body must be of type {kind}: "{actual}"'))
            return
    actual = _type_of(value)
    if "enum" in schema and value not in schema["enum"]:
        errors.append(not_supported(path, _shown(value), [str(v) for v in schema["enum"]]))
    if actual in ("integer", "number"):
        _bounds(value, schema, path, errors)
    elif actual == "string":
        _string(value, schema, path, errors)
    elif actual == "array":
        _array(value, schema, path, errors)
    elif actual == "object":
        _object(value, schema, path, errors, top=top)
    for sub in schema.get("allOf") or ():
        _check(value, sub, path, errors)
    if schema.get("anyOf") and not schema.get("x-kubernetes-int-or-string") and \
            not any(_passes(value, sub, path) for sub in schema["anyOf"]):
        errors.append(invalid("<nil>", "", f'"{path}" must validate at least one schema (anyOf)'))
    if schema.get("oneOf"):
        matched = sum(1 for sub in schema["oneOf"] if _passes(value, sub, path))
        if matched != 1:
            errors.append(invalid("<nil>", "", f'"{path}" must validate one and only one schema (oneOf)'))
    if isinstance(schema.get("not"), dict) and _passes(value, schema["not"], path):
        errors.append(invalid(path, _shown(value), f"{path} in body should not validate the schema"))


def _passes(value: Any, schema: Schema, path: str) -> bool:
    trial: list[FieldError] = []
    _check(value, schema, path, trial)
    return not trial


def _bounds(value: float, schema: Schema, path: str, errors: list[FieldError]) -> None:
    shown = _shown(value)
    if "minimum" in schema:
        low = _shown(schema["minimum"])
        if schema.get("exclusiveMinimum") and value <= low:
            errors.append(invalid(path, shown, f"{path} in body should be greater than {low}"))
        elif value < low:
            errors.append(invalid(path, shown, f"{path} in body should be greater than or equal to {low}"))
    if "maximum" in schema:
        high = _shown(schema["maximum"])
        if schema.get("exclusiveMaximum") and value >= high:
            errors.append(invalid(path, shown, f"{path} in body should be less than {high}"))
        elif value > high:
            errors.append(invalid(path, shown, f"{path} in body should be less than or equal to {high}"))
    step = schema.get("multipleOf")
    if step and (value / step) != int(value / step):
        errors.append(invalid(path, shown, f"{path} in body should be a multiple of {_shown(step)}"))


def _string(value: str, schema: Schema, path: str, errors: list[FieldError]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(FieldError("FieldValueTooLong", path, value, f"may not be longer than {schema['maxLength']}"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(invalid(path, value, f"{path} in body should be at least {schema['minLength']} chars long"))
    if "pattern" in schema:
        pattern = _pattern(str(schema["pattern"]))
        if pattern is not None and not pattern.search(value):
            errors.append(invalid(path, value, f"{path} in body should match '{schema['pattern']}'"))


def _array(value: list[Any], schema: Schema, path: str, errors: list[FieldError]) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(FieldError("FieldValueTooMany", path, len(value),
                                 f"must have at most {schema['maxItems']} items"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(invalid(path, len(value), f"{path} in body should have at least {schema['minItems']} items"))
    if schema.get("uniqueItems"):
        seen = [json.dumps(v, sort_keys=True) for v in value]
        if len(set(seen)) != len(seen):
            errors.append(invalid(path, value, f"{path} in body shouldn't contain duplicates"))
    items = schema.get("items")
    if isinstance(items, dict):
        for item in value:
            _check(item, items, path, errors)  # kube-apiserver 1.20 names list items without their index


def _object(value: dict[str, Any], schema: Schema, path: str, errors: list[FieldError], *, top: bool) -> None:
    properties: dict[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    embedded = top or bool(schema.get("x-kubernetes-embedded-resource"))
    for key, item in value.items():
        if embedded and key in _META_KEYS:
            continue
        sub = properties.get(key)
        if sub is None and isinstance(extra, dict):
            sub = extra
        if sub is not None:
            _check(item, sub, _join(path, key), errors)
    for key in schema.get("required") or ():
        if key not in value and not (embedded and key in _META_KEYS):  # the API server's, always there
            errors.append(required(_join(path, key)))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(FieldError("FieldValueTooMany", path, len(value),
                                 f"must have at most {schema['maxProperties']} items"))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(invalid(path, len(value),
                              f"{path} in body should have at least {schema['minProperties']} properties"))


class SchemaResult:
    """What a schema made of an object: the pruned and defaulted object, and the problems found in it."""

    __slots__ = ("errors", "object")

    def __init__(self, obj: dict[str, Any], errors: list[FieldError]) -> None:
        self.object = obj
        self.errors = errors


def apply_structural_schema(obj: dict[str, Any], schema: Schema, *, skip: tuple[str, ...] = ()) -> SchemaResult:
    """``obj`` pruned and defaulted by ``schema`` (a version's ``openAPIV3Schema``), and checked against it.

    ``skip``: top-level fields not checked (a create's ``status``, which the API server does not keep).
    """
    out = prune_and_default(obj, schema, top=True)
    errors: list[FieldError] = []
    checked = {k: v for k, v in out.items() if k not in skip} if skip else out
    _check(checked, schema, "", errors, top=True)
    return SchemaResult(out, errors)
