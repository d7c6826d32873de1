"""What the kinds' rules share: reading a field as the shape it must have, the enumerations and messages of
Kubernetes' core types, and port numbers (``validation.IsValidPortNum``)."""

from __future__ import annotations

from typing import Any

from .errors import FieldError, invalid

__all__ = ["NONNEGATIVE", "PORT_RANGE", "PROTOCOLS", "TAINT_EFFECTS", "as_dict", "as_list", "port_number"]

Obj = dict[str, Any]
#: ``Protocol``'s values (containers, services, network policies).
PROTOCOLS = ("SCTP", "TCP", "UDP")
#: ``TaintEffect``'s values (taints, tolerations).
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NONNEGATIVE = "must be greater than or equal to 0"
PORT_RANGE = "must be between 1 and 65535, inclusive"


def as_dict(value: Any) -> Obj:
    """``value`` if it is an object, else an empty one (its type is the decoder's to refuse)."""
    return value if type(value) is dict else {}


def as_list(value: Any) -> list[Any]:
    """``value`` if it is an array, else an empty one."""
    return value if type(value) is list else []


def port_number(value: Any, path: str) -> list[FieldError]:
    """A port number must be in 1..65535."""
    return [] if 1 <= value <= 65535 else [invalid(path, value, PORT_RANGE)]
