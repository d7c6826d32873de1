"""``KindRules``: how one kind is validated, beyond the metadata rules every kind has."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import FieldError
from .names import NameCheck, name_is_dns_subdomain

__all__ = ["Check", "KindRules", "UpdateCheck"]

Obj = dict[str, Any]
Check = Callable[[Obj], list[FieldError]]
UpdateCheck = Callable[[Obj, Obj], list[FieldError]]


def _none(obj: Obj) -> list[FieldError]:
    return []


def _no_update(new: Obj, old: Obj) -> list[FieldError]:
    return []


@dataclass(frozen=True, slots=True)
class KindRules:
    """How one kind is validated (beyond the metadata rules every kind has)."""

    name: NameCheck = name_is_dns_subdomain
    create: Check = _none
    #: What an update must satisfy besides ``create``'s rules (which updates are checked against too).
    update: UpdateCheck = _no_update
    #: What ``create`` reads (its answer can be kept per that part's text: the fast path): ``"spec"``, ``"body"``
    #: (everything but the metadata), or ``""`` (the metadata too: nothing kept).
    reads: str = ""


