"""Mutating admission: Volcano's defaults for Jobs, PodGroups and Queues (``pumice.api.apply_defaults``).

The wire dict goes through the pydantic model and back, so a malformed object is refused here with
the first schema error, in one line. Plain PodGroups, the bulk of a trace, skip that round trip (see
``pumice.admission.fastpath``): it would give them back unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from pumice.api import KubeObject, apply_defaults, parse_object
from pumice.store import Invalid

from .fastpath import podgroup_defaults

__all__ = ["DEFAULTED", "default_object"]

#: Resources whose objects get Volcano defaults on CREATE.
DEFAULTED = frozenset({"jobs.batch.volcano.sh", "podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh"})


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _model(obj: dict[str, Any]) -> KubeObject:
    try:
        return parse_object(obj)
    except ValidationError as err:
        first = err.errors()[0]
        meta = obj.get("metadata") or {}
        where = f'{obj.get("kind")} "{meta.get("name")}"'
        raise Invalid(f"{where}: {_path(tuple(first['loc']))}: {first['msg']}") from None


def default_object(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with Volcano's defaults filled in; ``Invalid`` if it does not fit its schema."""
    fast = podgroup_defaults(obj)
    if fast is not None:
        return fast
    return apply_defaults(_model(obj)).to_dict()
