"""Resource names and quantities (``v1.ResourceList``): what containers, nodes and quotas may ask for.

From ``pkg/apis/core/validation`` and ``pkg/apis/core/helper``: a quantity is never negative; a resource
name is a standard one (``cpu``, ``memory``...) or domain-qualified; an extended resource (``nvidia.com/gpu``)
is counted in whole units and cannot be overcommitted, so a container that requests one must set the same
limit.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from pumice.api.quantity import QuantityError, parse_quantity

from .common import NONNEGATIVE
from .common import as_dict as _dict
from .errors import FieldError, forbidden, invalid, required
from .names import is_qualified_name

__all__ = [
    "is_extended_resource",
    "is_native_resource",
    "quantity_value",
    "validate_container_resources",
    "validate_quantity",
    "validate_quota_resources",
]

_STANDARD_CONTAINER = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports",
    "services.loadbalancers", "storage", "requests.storage",
})
_STANDARD_QUOTA = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
    "replicationcontrollers", "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims",
    "services.nodeports", "services.loadbalancers",
})
_INTEGER = frozenset({"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
                      "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})
_VALUES: dict[str, Fraction | None] = {}


def quantity_value(value: Any) -> Fraction | None:
    """The exact value of a quantity (text or number), or None if it is none."""
    key = value if type(value) is str else repr(value)
    if key in _VALUES:
        return _VALUES[key]
    try:
        number: Fraction | None = parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        number = None
    if len(_VALUES) >= 8192:
        _VALUES.clear()
    _VALUES[key] = number
    return number


def _text(value: Any) -> str:
    return value if type(value) is str else repr(value) if isinstance(value, float) else str(value)


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not is_hugepages(name)


def _is_integer_resource(name: str) -> bool:
    return name in _INTEGER or is_extended_resource(name)


def validate_quantity(name: str, value: Any, path: str) -> list[FieldError]:
    """``ValidateResourceQuantityValue``: not negative, and whole for integer resources."""
    number = quantity_value(value)
    if number is None:
        return []  # not decodable: refused before validation
    errors = []
    if number < 0:
        errors.append(invalid(path, _text(value), NONNEGATIVE))
    if _is_integer_resource(name):
        milli = number * 1000
        whole = math.ceil(milli) if milli > 0 else math.floor(milli)  # MilliValue(): rounded away from zero
        if whole % 1000 != 0:
            errors.append(invalid(path, _text(value), "must be an integer"))
    return errors


def _resource_name(name: str, path: str, standard: frozenset[str], kind: str) -> list[FieldError]:
    problems = is_qualified_name(name)
    if problems:
        return [invalid(path, name, msg) for msg in problems]
    errors = []
    if "/" not in name and name not in _STANDARD and not is_hugepages(name) and \
            not name.startswith("requests.hugepages-"):
        errors.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if name not in standard and not is_hugepages(name) and not (kind == "quota" and
                                                                    name.startswith("requests.hugepages-")):
            errors.append(invalid(path, name, f"must be a standard resource for {kind}"))
    elif kind == "containers" and not is_native_resource(name) and not is_extended_resource(name):
        errors.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errors



def _compare(a: Any, b: Any) -> int:
    x, y = quantity_value(a), quantity_value(b)
    if x is None or y is None:
        return 0
    return (x > y) - (x < y)


def validate_container_resources(resources: Any, path: str) -> list[FieldError]:
    """``ValidateResourceRequirements`` of a container, with its requests defaulted from its limits as the API
    server does before validating."""
    if type(resources) is not dict:
        return []
    # a null quantity decodes as the zero quantity, as kube-apiserver reads it
    limits = {k: "0" if v is None else v for k, v in _dict(resources.get("limits")).items()}
    given = {k: "0" if v is None else v for k, v in _dict(resources.get("requests")).items()}
    requests = {**limits, **given} if limits else given
    errors: list[FieldError] = []
    qos = False
    hugepages = False
    for name in sorted(limits):
        value = limits[name]
        if value is None:
            continue
        where = f"{path}.limits[{name}]"
        errors += _resource_name(name, where, _STANDARD_CONTAINER, "containers")
        errors += validate_quantity(name, value, where)
        qos = qos or name in ("cpu", "memory")
        hugepages = hugepages or is_hugepages(name)
    for name in sorted(requests):
        value = requests[name]
        if value is None:
            continue
        where = f"{path}.requests[{name}]"
        errors += _resource_name(name, where, _STANDARD_CONTAINER, "containers")
        errors += validate_quantity(name, value, where)
        limit = limits.get(name)
        if limit is not None:
            order = _compare(value, limit)
            if order != 0 and not _overcommit_allowed(name):
                errors.append(invalid(f"{path}.requests", _text(value), f"must be equal to {name} limit"))
            elif order > 0:
                errors.append(invalid(f"{path}.requests", _text(value), f"must be less than or equal to {name} limit"))
        elif not _overcommit_allowed(name):
            errors.append(required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
        qos = qos or name in ("cpu", "memory")
        hugepages = hugepages or is_hugepages(name)
    if hugepages and not qos:
        errors.append(forbidden(path, "HugePages require cpu or memory"))
    return errors


def validate_quota_resources(hard: Any, path: str) -> list[FieldError]:
    """A ResourceQuota's ``hard`` (or ``used``): quota resource names, quantities not negative."""
    if type(hard) is not dict:
        return []
    errors: list[FieldError] = []
    for name in sorted(hard):
        if hard[name] is None:
            continue
        where = f"{path}[{name}]"
        errors += _resource_name(name, where, _STANDARD_QUOTA, "quota")
        errors += validate_quantity(name, hard[name], where)
    return errors
