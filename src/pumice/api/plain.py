"""Objects the model round trip would give back unchanged, recognised without pydantic (the readers' fast path).

Reading a manifest validates each object into its pydantic model and dumps it back (``to_dict``). For an
object whose every field holds exactly the JSON type its model declares (a string where a ``str`` is, an
``int`` where an ``Int`` is, a valid quantity string where a ``Quantity`` is, ...), and whose other keys
are kept as unknown fields, that round trip gives back the same document: same keys, same order, same
values. ``is_plain`` says so by walking the document once with checks derived from the models themselves,
at a fraction of pydantic's cost; anything it does not recognise (a number for a quantity, a null where
the model would replace it, a model with validators of its own, ...) is left to the model, with its
errors. ``tests/api/test_plain.py`` checks the two paths against each other over random documents.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Strict

from pumice.api.base import ApiModel, Quantity
from pumice.api.meta import KubeObject
from pumice.api.quantity import is_valid_quantity

__all__ = ["is_plain", "plain_check"]

Check = Callable[[Any], bool]

_QUANTITY_VALIDATOR = typing.get_args(Quantity)[1]
#: The decorators every ApiModel has (key order in, key order out); a model with any other is opaque.
_BASE_VALIDATORS = frozenset({"_remember_key_order"})
_BASE_SERIALIZERS = frozenset({"_restore_key_order"})
#: ``model_post_init`` of a plain model: pydantic's (private attributes) or KubeObject's (fills in apiVersion
#: and kind when missing: a manifest's objects always have them) .
_BASE_POST_INITS = frozenset({"init_private_attributes", "BaseModel.model_post_init", "KubeObject.model_post_init"})
_QUANTITIES: dict[str, bool] = {}  # quantity text -> valid? (a manifest repeats a few hundred of them)


def _never(value: Any) -> bool:
    return False


def _any(value: Any) -> bool:
    return True


def _quantity(value: Any) -> bool:
    if type(value) is not str:  # a number would be dumped as its text
        return False
    valid = _QUANTITIES.get(value)
    if valid is None:
        if len(_QUANTITIES) >= 4096:
            _QUANTITIES.clear()
        valid = _QUANTITIES[value] = is_valid_quantity(value)
    return valid


def _exact(tp: type) -> Check:
    def fits(value: Any) -> bool:
        return type(value) is tp

    return fits


def _optional(check: Check) -> Check:
    def fits(value: Any) -> bool:
        return value is None or check(value)

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


def _map(check: Check) -> Check:
    if check is _STR:
        def fits_str(value: Any) -> bool:
            if type(value) is not dict:
                return False
            for k, v in value.items():  # noqa: SIM110 - hot path, no generator
                if type(k) is not str or type(v) is not str:
                    return False
            return True

        return fits_str

    def fits(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for k, v in value.items():  # noqa: SIM110 - hot path, no generator
            if type(k) is not str or not check(v):
                return False
        return True

    return fits


_STR = _exact(str)
_SIMPLE: dict[Any, Check] = {str: _STR, int: _exact(int), bool: _exact(bool), float: _exact(float)}


def _check_for(tp: Any, metadata: tuple[Any, ...] = ()) -> Check:
    """The check of one declared type (``_never`` for a type the model would change or this does not know)."""
    if metadata:
        if metadata == (_QUANTITY_VALIDATOR,) and tp is str:
            return _quantity
        if all(isinstance(m, Strict) and m.strict for m in metadata) and tp in _SIMPLE:
            return _SIMPLE[tp]  # exact types are what strict mode accepts unchanged
        return _never
    if tp is Any:
        return _any
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _check_for(args[0], tuple(tp.__metadata__))
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            return _never
        inner = _check_for(rest[0])
        return _optional(inner) if len(rest) < len(args) and inner is not _never else inner
    if origin is list and len(args) == 1:
        inner = _check_for(args[0])
        return _never if inner is _never else _list(inner)
    if origin is dict and len(args) == 2 and args[0] is str:
        inner = _check_for(args[1])
        return _never if inner is _never else _map(inner)
    if origin is typing.Literal:
        allowed = {(type(a), a) for a in args}
        return lambda value: (type(value), value) in allowed
    if tp in _SIMPLE:
        return _SIMPLE[tp]
    if isinstance(tp, type) and issubclass(tp, ApiModel):
        return plain_check(tp)
    return _never


_CHECKS: dict[type[BaseModel], Check] = {}


def plain_check(model: type[ApiModel]) -> Check:
    """The check of a model's wire form (built once per model, lazily for recursive models)."""
    check = _CHECKS.get(model)
    if check is not None:
        return check
    built: list[Check] = []

    def deferred(value: Any) -> bool:  # the model refers to itself while its check is being built
        return built[0](value)

    _CHECKS[model] = deferred
    built.append(_record(model))
    _CHECKS[model] = built[0]
    return built[0]


def _opaque(model: type[ApiModel]) -> bool:
    """Whether the model may change what it reads beyond its fields' types (validators, serializers,
    computed fields, its own ``model_post_init``, unknown keys refused or dropped)."""
    decorators = model.__pydantic_decorators__
    if (decorators.validators or decorators.field_validators or decorators.root_validators
            or decorators.field_serializers or decorators.computed_fields
            or set(decorators.model_validators) - _BASE_VALIDATORS
            or set(decorators.model_serializers) - _BASE_SERIALIZERS):
        return True
    if model.model_post_init.__qualname__ not in _BASE_POST_INITS:
        return True
    return model.model_config.get("extra") != "allow"


def _record(model: type[ApiModel]) -> Check:
    if _opaque(model):
        return _never
    fields: dict[str, Check] = {}
    required: list[str] = []
    names: set[str] = set()
    for name, info in model.model_fields.items():
        wire = info.alias or name
        if info.exclude or info.validation_alias not in (None, wire) or info.serialization_alias not in (None, wire):
            return _never
        fields[wire] = _check_for(info.annotation, tuple(info.metadata))
        if info.is_required():
            required.append(wire)
        if name != wire:
            names.add(name)  # a field's Python name is not read from the wire: keep the model's word on it
    strings = frozenset(k for k, c in fields.items() if c is _STR)

    def fits(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for k, v in value.items():
            if k in strings:
                if type(v) is not str:
                    return False
                continue
            check = fields.get(k)
            if check is None:
                if type(k) is not str or k in names:
                    return False
                continue  # an unknown field, kept as it is
            if not check(v):
                return False
        for k in required:  # noqa: SIM110 - hot path, no generator
            if k not in value:
                return False
        return True

    return fits


def is_plain(model: type[KubeObject], obj: dict[str, Any]) -> bool:
    """Whether ``model``'s round trip gives ``obj`` back unchanged, and it names itself (``metadata.name``
    or ``generateName``), as every object read from a manifest must."""
    meta = obj.get("metadata")
    if type(meta) is not dict:
        return False
    name, generate = meta.get("name"), meta.get("generateName")
    if not ((type(name) is str and name) or (type(generate) is str and generate)):
        return False
    return plain_check(model)(obj)
