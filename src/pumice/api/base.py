"""Pydantic base class and field types shared by every API model."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Strict,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from pumice.api.quantity import QuantityError, parse_quantity

__all__ = ["ApiModel", "Int", "Quantity", "ResourceList", "StrictBool", "openapi"]


class ApiModel(BaseModel):
    """Base of every API type.

    Python attributes are the snake_case of the wire (camelCase) names; unknown fields
    are kept in ``model_extra`` and written back; fields default to ``None`` so that
    ``to_dict()`` (``exclude_unset``) gives back exactly the document that was read.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    # Key order of the mapping this model was read from, so that writing it back keeps
    # the author's field order instead of the declaration order.
    _key_order: tuple[str, ...] | None = PrivateAttr(default=None)
    # Wire keys that go first when the input did not have them (filled in by defaults).
    _LEADING_KEYS: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, ApiModel):
            missing = tuple(key for key in cls._LEADING_KEYS if key not in data)
            model._key_order = missing + tuple(data)
        return model

    @model_serializer(mode="wrap")
    def _restore_key_order(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        order = self._key_order
        if order is None or not isinstance(data, dict) or not info.by_alias:
            return data
        ordered = {key: data[key] for key in order if key in data}
        if len(ordered) != len(data):
            ordered.update((key, value) for key, value in data.items() if key not in ordered)
        return ordered

    def to_dict(self) -> dict[str, Any]:
        """Wire form: camelCase keys, only the fields that were set, unknown fields kept."""
        return self.model_dump(by_alias=True, exclude_unset=True)


def _check_quantity(value: Any) -> str:
    """Accept a quantity string (or a YAML number, kept as its text)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise PydanticCustomError(
            "invalid_quantity", "invalid quantity {value}: expected a string", {"value": repr(value)}
        )
    # repr() of a float is the shortest text that reads back as it: 0.1 -> "0.1".
    text = repr(value) if isinstance(value, float) else str(value)
    try:
        parse_quantity(text)
    except QuantityError as err:
        raise PydanticCustomError("invalid_quantity", "{message}", {"message": str(err)}) from err
    return text


#: A quantity string such as ``"100m"`` or ``"4Gi"``, validated by the quantity parser.
Quantity = Annotated[str, BeforeValidator(_check_quantity)]
#: ``v1.ResourceList``: resource name -> quantity.
ResourceList = dict[str, Quantity]
#: Integers are not coerced from strings or floats (Kubernetes rejects ``"3"`` for int32).
Int = Annotated[int, Strict()]
#: Booleans are not coerced from strings or numbers.
StrictBool = Annotated[bool, Strict()]


def openapi(*, alias: str | None = None, **rules: Any) -> Any:
    """A model field (default ``None``) carrying the OpenAPI v3 rules of its CRD schema.

    ``rules`` are the markers of Volcano's CRDs for the field — ``default``, ``minimum``, ``maximum``,
    ``enum``, ``pattern``, ``maxLength``, ``minLength``, ``minItems``, ``format`` — plus ``required=True``
    (the enclosing object must have the field) and ``items`` (rules for each element of a list, or each
    value of a map). ``pumice.api.schema`` turns them into the CRDs' schemas; reading a model does not check
    them (a file given to ``pumice schedule`` is read as written): the API server enforces the schema.
    """
    if alias is not None:
        return Field(None, alias=alias, json_schema_extra=rules)
    return Field(None, json_schema_extra=rules)
