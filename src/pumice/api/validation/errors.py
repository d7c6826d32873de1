"""Field errors and the refusals made of them, worded as kube-apiserver words them.

A validation function returns a list of :class:`FieldError` (``field.ErrorList`` in Kubernetes); a write with
any is refused with a ``422 Invalid`` ``Status`` whose ``details.causes`` name every bad field
(:func:`invalid_status`). A body that cannot be decoded into its kind's type at all is a ``400 BadRequest``
(:func:`undecodable_status`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DUPLICATE",
    "FORBIDDEN",
    "INVALID",
    "NOT_FOUND",
    "NOT_SUPPORTED",
    "OMIT",
    "REQUIRED",
    "TOO_LONG",
    "TOO_MANY",
    "FieldError",
    "Refusal",
    "duplicate",
    "forbidden",
    "format_errors",
    "invalid",
    "invalid_status",
    "not_found",
    "not_supported",
    "qualified_kind",
    "required",
    "too_long",
    "too_many",
    "undecodable_status",
]

REQUIRED: Final = "FieldValueRequired"
INVALID: Final = "FieldValueInvalid"
NOT_SUPPORTED: Final = "FieldValueNotSupported"
DUPLICATE: Final = "FieldValueDuplicate"
FORBIDDEN: Final = "FieldValueForbidden"
TOO_LONG: Final = "FieldValueTooLong"
TOO_MANY: Final = "FieldValueTooMany"
NOT_FOUND: Final = "FieldValueNotFound"

_TITLES = {
    REQUIRED: "Required value",
    INVALID: "Invalid value",
    NOT_SUPPORTED: "Unsupported value",
    DUPLICATE: "Duplicate value",
    FORBIDDEN: "Forbidden",
    TOO_LONG: "Too long",
    TOO_MANY: "Too many",
    NOT_FOUND: "Not found",
}
#: Error types whose message leaves the bad value out.
_WITHOUT_VALUE = frozenset({REQUIRED, FORBIDDEN, TOO_LONG})


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


#: A bad value that is not shown (``Too many`` without a count).
OMIT: Final = _Omit()


def _show(value: Any) -> str:
    """A bad value as Go's ``%v``/``%q`` shows it: strings quoted, numbers and booleans bare, the rest as JSON."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One bad field: its type (``FieldValueInvalid``...), its path (``spec.containers[0].name``), the bad value
    and what is wrong with it."""

    type: str
    field: str
    value: Any = None
    detail: str = ""

    def body(self) -> str:
        """The message without the field (``Invalid value: "x": must be ...``): a cause's ``message``."""
        text = _TITLES.get(self.type, self.type)
        if self.type not in _WITHOUT_VALUE and self.value is not OMIT:
            text = f"{text}: {_show(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, Any]:
        return {"reason": self.type, "message": self.body(), "field": self.field}


class Refusal(Exception):
    """A write refused the way kube-apiserver refuses it: ``status`` is the ``Status`` it answers with (``code``,
    ``reason``, ``message``, and for ``422 Invalid`` the ``details.causes``)."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status["message"])
        self.status = status

    @property
    def code(self) -> int:
        return int(self.status["code"])

    @property
    def message(self) -> str:
        return str(self.status["message"])


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, field, "", detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(INVALID, field, value, detail)


def not_supported(field: str, value: Any, supported: list[str] | tuple[str, ...]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(v) for v in supported) if supported else ""
    return FieldError(NOT_SUPPORTED, field, value, detail)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(DUPLICATE, field, value)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, field, "", detail)


def too_long(field: str, limit: int) -> FieldError:
    return FieldError(TOO_LONG, field, "", f"must have at most {limit} bytes")


def too_many(field: str, count: int | None, limit: int) -> FieldError:
    return FieldError(TOO_MANY, field, OMIT if count is None else count, f"must have at most {limit} items")


def not_found(field: str, value: Any) -> FieldError:
    return FieldError(NOT_FOUND, field, value)


def format_errors(errors: list[FieldError]) -> str:
    """``ErrorList.ToAggregate()``: one error as is, several as ``[a, b]``, repeats shown once."""
    seen: dict[str, None] = {}
    for error in errors:
        seen.setdefault(str(error))
    texts = list(seen)
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def qualified_kind(kind: str, group: str) -> str:
    """``Pod`` for the core group, ``PodGroup.scheduling.volcano.sh`` for others (``GroupKind.String()``)."""
    return f"{kind}.{group}" if group else kind


def invalid_status(kind: str, group: str, name: str, errors: list[FieldError]) -> dict[str, Any]:
    """The ``422 Invalid`` ``Status`` refusing an object (``errors.NewInvalid``)."""
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [error.cause() for error in errors]
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"{qualified_kind(kind, group)} {json.dumps(name, ensure_ascii=False)} is invalid: "
                   f"{format_errors(errors)}",
        "reason": "Invalid", "details": details, "code": 422,
    }


def undecodable_status(kind: str, api_version: str, problem: str) -> dict[str, Any]:
    """The ``400 BadRequest`` ``Status`` of a body that is no ``kind`` (a field of the wrong JSON type)."""
    version = api_version.rpartition("/")[2]
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'{kind} in version "{version}" cannot be handled as a {kind}: {problem}',
        "reason": "BadRequest", "code": 400,
    }
