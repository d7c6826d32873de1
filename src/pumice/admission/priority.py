"""kube-apiserver's ``Priority`` admission plugin: a new pod's ``spec.priority`` from its PriorityClass.

A pod naming ``priorityClassName`` gets that class's ``value`` (and its ``preemptionPolicy``); a pod naming
none gets the cluster's ``globalDefault`` class, or priority 0 when there is none. A class that does not exist
refuses the pod (403 ``Forbidden``, as kube-apiserver's admission plugins refuse), as does a ``spec.priority`` or
``preemptionPolicy`` that disagrees with the class.
Kubernetes creates the two ``system-*-critical`` classes at start; here they are known by value even when no
object stores them.
"""

from __future__ import annotations

from typing import Any

from pumice.api.resources import PRIORITYCLASSES
from pumice.store import Forbidden, NotFound

from .lookup import Reader

__all__ = ["SYSTEM_PRIORITY_CLASSES", "admit_priority"]

Obj = dict[str, Any]
#: The classes kube-apiserver bootstraps (``scheduling.SystemPriorityClasses``).
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def _class_named(store: Reader, name: str) -> Obj | None:
    try:
        return store.get(PRIORITYCLASSES, None, name, copy=False)
    except NotFound:
        if name in SYSTEM_PRIORITY_CLASSES:
            return {"metadata": {"name": name}, "value": SYSTEM_PRIORITY_CLASSES[name]}
        return None


def _global_default(store: Reader) -> Obj | None:
    """The global default class; with several, the lowest value (as kube-apiserver picks)."""
    classes, _ = store.list(PRIORITYCLASSES, copy=False)
    defaults = [pc for pc in classes if pc.get("globalDefault") is True]
    return min(defaults, key=lambda pc: int(pc.get("value") or 0), default=None)


def admit_priority(store: Reader, pod: Obj) -> None:
    """Set ``spec.priority`` (and ``preemptionPolicy``) of a pod being created; ``Forbidden`` when refused.

    ``spec`` is replaced, never the caller's nested dict changed.
    """
    spec = pod.get("spec")
    if type(spec) is not dict:
        return
    name = spec.get("priorityClassName")
    pod_name = (pod.get("metadata") or {}).get("name")
    if name:
        pc = _class_named(store, str(name))
        if pc is None:
            raise Forbidden(f'pods "{pod_name}" is forbidden: no PriorityClass with name {name} was found')
    else:
        pc = _global_default(store)
    value = int(pc.get("value") or 0) if pc is not None else 0
    given = spec.get("priority")
    if given is not None and given != value:
        raise Forbidden(
            f'pods "{pod_name}" is forbidden: the integer value of priority ({given}) must not be provided in pod '
            f"spec; priority admission controller computed {value} from the given PriorityClass name"
        )
    spec = dict(spec)
    spec["priority"] = value
    if pc is not None and not name:
        spec["priorityClassName"] = pc["metadata"]["name"]
    policy = (pc or {}).get("preemptionPolicy") or "PreemptLowerPriority"
    if spec.get("preemptionPolicy") not in (None, policy):
        raise Forbidden(
            f'pods "{pod_name}" is forbidden: the string value of PreemptionPolicy ({spec["preemptionPolicy"]}) '
            f"must not be provided in pod spec; priority admission controller computed {policy} from the given "
            "PriorityClass name"
        )
    spec["preemptionPolicy"] = policy
    pod["spec"] = spec
