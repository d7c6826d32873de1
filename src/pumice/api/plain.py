"""Objects the model round trip would give back unchanged, recognised without pydantic (the readers' fast path).

Reading a manifest validates each object into its pydantic model and dumps it back (``to_dict``). For an
object whose every field holds exactly the JSON type its model declares (a string where a ``str`` is, an
``int`` where an ``Int`` is, a valid quantity string where a ``Quantity`` is, ...), and whose other keys are
kept as unknown fields, that round trip gives back the same document: same keys, same order, same values.
``is_plain`` says so by walking the document once with checks derived from the models themselves (compiled
into one Python function per model), at a fraction of pydantic's cost; anything it does not recognise (a
number for a quantity, a null where the model would replace it, a model with validators of its own, ...) is
left to the model, with its errors. ``tests/api/test_plain.py`` checks the two paths against each other over
random documents.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import Strict

from pumice.api.base import ApiModel, Quantity
from pumice.api.meta import KubeObject
from pumice.api.quantity import is_valid_quantity_text

__all__ = ["is_plain", "plain_check"]

Check = Callable[[Any], bool]
#: What a declared type takes unchanged: ``("never",)``, ``("any",)``, ``("exact", type)``, ``("quantity",)``,
#: ``("literal", {(type, value)})``, ``("optional" | "list" | "map", inner)`` or ``("record", model)``.
Spec = tuple[Any, ...]

_NEVER: Spec = ("never",)  # any value there is left to the model
_ANY: Spec = ("any",)
_QUANTITY: Spec = ("quantity",)
_QUANTITY_VALIDATOR = typing.get_args(Quantity)[1]
_SIMPLE = (str, int, bool, float)
#: The decorators every ApiModel has (key order in, key order out); a model with any other is opaque.
_BASE_VALIDATORS = frozenset({"_remember_key_order"})
_BASE_SERIALIZERS = frozenset({"_restore_key_order"})
#: ``model_post_init`` of a plain model: pydantic's (private attributes) or KubeObject's (fills in apiVersion
#: and kind when missing: a manifest's objects always have them) .
_BASE_POST_INITS = frozenset({"init_private_attributes", "BaseModel.model_post_init", "KubeObject.model_post_init"})


def _never(value: Any) -> bool:
    return False


def _spec(tp: Any, metadata: tuple[Any, ...] = ()) -> Spec:
    """The spec of one declared type (``_NEVER`` for a type the model would change or this does not know)."""
    if metadata:
        if metadata == (_QUANTITY_VALIDATOR,) and tp is str:
            return _QUANTITY
        if all(isinstance(m, Strict) and m.strict for m in metadata) and tp in _SIMPLE:
            return ("exact", tp)  # exact types are what strict mode accepts unchanged
        return _NEVER
    if tp is Any:
        return _ANY
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _spec(args[0], tuple(tp.__metadata__))
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            return _NEVER
        inner = _spec(rest[0])
        return inner if len(rest) == len(args) or inner in (_NEVER, _ANY) else ("optional", inner)
    if origin is list and len(args) == 1:
        inner = _spec(args[0])
        return _NEVER if inner == _NEVER else ("list", inner)
    if origin is dict and len(args) == 2 and args[0] is str:
        inner = _spec(args[1])
        return _NEVER if inner == _NEVER else ("map", inner)
    if origin is typing.Literal:
        return ("literal", frozenset((type(a), a) for a in args))
    if tp in _SIMPLE:
        return ("exact", tp)
    if isinstance(tp, type) and issubclass(tp, ApiModel) and not _opaque(tp):
        return ("record", tp)
    return _NEVER


def _opaque(model: type[ApiModel]) -> bool:
    """Whether the model may change what it reads beyond its fields' types (validators, serializers,
    computed fields, its own ``model_post_init``, unknown keys refused or dropped, fields renamed or left out)."""
    decorators = model.__pydantic_decorators__
    if (decorators.validators or decorators.field_validators or decorators.root_validators
            or decorators.field_serializers or decorators.computed_fields
            or set(decorators.model_validators) - _BASE_VALIDATORS
            or set(decorators.model_serializers) - _BASE_SERIALIZERS):
        return True
    if model.model_post_init.__qualname__ not in _BASE_POST_INITS:
        return True
    if model.model_config.get("extra") != "allow":
        return True
    for name, info in model.model_fields.items():
        wire = info.alias or name
        if info.exclude or info.validation_alias not in (None, wire) or info.serialization_alias not in (None, wire):
            return True
    return False


class _Source:
    """The source of one model's check, a single function: the type tests, lists and maps are written inline and
    fields are dispatched on a dict of their wire names (a call per field was most of the cost of the walk); a
    nested model is a call to its own check (as fast as writing it inline, and compiled once)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"_quantity": is_valid_quantity_text}
        self.calls: dict[type[ApiModel], str] = {}  # nested model -> name of its check, bound once compiled

    def name(self, prefix: str, value: Any = None) -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def fails(self, spec: Spec, var: str) -> str | None:
        """An expression true when ``var`` does not fit ``spec``, for specs that need no loop."""
        kind = spec[0]
        if kind == "never":
            return "True"
        if kind == "exact":
            return f"type({var}) is not {spec[1].__name__}"
        if kind == "quantity":
            return f"type({var}) is not str or not _quantity({var})"
        if kind == "literal":  # the type first: a list or a dict is not hashable
            kinds = self.name("types", frozenset(tp for tp, _ in spec[1]))
            return f"type({var}) not in {kinds} or (type({var}), {var}) not in {self.name('allowed', spec[1])}"
        if kind == "record":
            call = self.calls.get(spec[1])
            if call is None:
                call = self.calls[spec[1]] = self.name("check")
            return f"not {call}({var})"
        if kind == "optional":
            inner = self.fails(spec[1], var)
            return None if inner is None else f"({inner}) and {var} is not None"  # the value is seldom None
        return None

    def check(self, spec: Spec, var: str, depth: int) -> None:
        """Lines that return False unless ``var`` fits ``spec``."""
        kind = spec[0]
        if kind == "any":
            return
        condition = self.fails(spec, var)
        if condition is not None:
            self.emit(depth, f"if {condition}:")
            self.emit(depth + 1, "return False")
        elif kind == "optional":
            self.emit(depth, f"if {var} is not None:")
            self.check(spec[1], var, depth + 1)
        elif kind == "list":
            self.emit(depth, f"if type({var}) is not list:")
            self.emit(depth + 1, "return False")
            if spec[1] != _ANY:
                item = self.name("item")
                self.emit(depth, f"for {item} in {var}:")
                self.check(spec[1], item, depth + 1)
        else:  # a map
            key, item = self.name("key"), self.name("item")
            self.emit(depth, f"if type({var}) is not dict:")
            self.emit(depth + 1, "return False")
            self.emit(depth, f"for {key}, {item} in {var}.items():")
            inner = None if spec[1] == _ANY else self.fails(spec[1], item)
            if inner is None:
                self.emit(depth + 1, f"if type({key}) is not str:")
                self.emit(depth + 2, "return False")
                self.check(spec[1], item, depth + 1)
            else:
                self.emit(depth + 1, f"if type({key}) is not str or {inner}:")
                self.emit(depth + 2, "return False")

    def record(self, model: type[ApiModel]) -> None:
        """The body of the model's check, its document in ``value``."""
        fields: dict[str, Spec] = {}
        required = []
        for name, info in model.model_fields.items():
            wire = info.alias or name
            fields[wire] = _spec(info.annotation, tuple(info.metadata))
            if info.is_required():
                required.append(wire)
        # a field's Python name is not read from the wire (unless it is another's wire name): the model's word on it
        names = frozenset(model.model_fields) - fields.keys()
        groups: dict[Spec, int] = {}  # fields of one spec share their check
        index = {wire: groups.setdefault(spec, len(groups)) for wire, spec in fields.items()}
        self.emit(1, "if type(value) is not dict:")
        self.emit(2, "return False")
        self.emit(1, "for key, field in value.items():")
        strings = frozenset(w for w, spec in fields.items() if spec in (("exact", str), ("optional", ("exact", str))))
        if strings:  # most fields: no dispatch
            self.emit(2, f"if type(field) is str and key in {self.name('strings', strings)}:")
            self.emit(3, "continue")
        self.emit(2, "try:")  # free unless raised, which takes an unknown field
        self.emit(3, f"group = {self.name('index', index)}[key]")
        self.emit(2, "except KeyError:")  # an unknown field, kept as it is
        self.emit(3, f"if type(key) is not str or key in {self.name('names', names)}:")
        self.emit(4, "return False")
        self.emit(3, "continue")
        self.branch(list(groups), 0, len(groups), 2)
        if required:
            self.emit(1, f"if {' or '.join(f'{k!r} not in value' for k in required)}:")
            self.emit(2, "return False")
        self.emit(1, "return True")

    def branch(self, specs: list[Spec], low: int, high: int, depth: int) -> None:
        """The checks of groups ``low`` to ``high`` (excluded): a binary search on the group's number."""
        if high - low == 1:
            size = len(self.lines)
            self.check(specs[low], "field", depth)
            if len(self.lines) == size:
                self.emit(depth, "pass")
            return
        middle = (low + high) // 2
        self.emit(depth, f"if group < {middle}:")
        self.branch(specs, low, middle, depth + 1)
        self.emit(depth, "else:")
        self.branch(specs, middle, high, depth + 1)


_CHECKS: dict[type[ApiModel], Check] = {}


def plain_check(model: type[ApiModel]) -> Check:
    """The check of a model's wire form, compiled once per model (see ``_Source``)."""
    check = _CHECKS.get(model)
    if check is not None:
        return check
    if _opaque(model):
        check = _CHECKS[model] = _never
        return check
    source = _Source()
    source.record(model)
    text = "\n".join([f"def check(value):  # {model.__qualname__}", *source.lines])
    exec(compile(text, f"<plain check of {model.__qualname__}>", "exec"), source.names)
    compiled: Check = source.names["check"]
    _CHECKS[model] = compiled
    for inner, name in source.calls.items():  # once registered: a recursive model finds its own check
        source.names[name] = plain_check(inner)
    return compiled


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
