"""Wiring helpers of the runtime: admission hook, kind -> resource, Volcano's starting queues."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from pumice.admission import Admission
from pumice.admission.hook import SYSTEM_PRIORITY_CLASSES, VALIDATED_STATUS
from pumice.api.resources import QUEUES
from pumice.store import DEFAULT_RESOURCES, AlreadyExists, ResourceInfo, Store

__all__ = [
    "DEFAULT_NAMESPACES",
    "admitted_deletes",
    "admitted_resources",
    "attach_admission",
    "default_objects",
    "default_queues",
    "load_admission",
    "resource_for",
]

_KINDS: dict[str, ResourceInfo] = {info.kind: info for info in DEFAULT_RESOURCES}


def load_admission(*, cluster: bool = False) -> Admission:
    """A fresh ``pumice.admission.Admission`` hook (Kubernetes' validation, Volcano's webhooks), told which writes
    it vets. ``cluster``: the admission plugins of a real cluster that read other objects too, as ``pumice up``
    runs them: objects in a namespace that exists and is not being deleted, pod priorities from their
    PriorityClass (see ``Admission``); ``default_objects`` creates the namespaces and classes they need.

    The hook reads the store it guards: ``Cluster`` attaches it to its store (``hook.attach(store)``).
    """
    hook = Admission(cluster=cluster)
    hook.resources = admitted_resources()
    hook.deletes = admitted_deletes()
    return hook


def admitted_resources() -> frozenset[str]:
    """What admission vets: every main-resource write (Kubernetes' validation, Volcano's webhooks for Jobs,
    PodGroups and Queues) and nodes' status writes (see ``pumice.admission``).

    Declared to the store as the hook's ``resources``, so that every other write (the kubelets' and controllers'
    status writes, bindings) skips the hook and the copies made for it; ``tests/sim/test_runtime.py`` checks that
    the hook indeed leaves those writes alone.
    """
    return frozenset({info.name for info in DEFAULT_RESOURCES}) | {f"{r}/status" for r in VALIDATED_STATUS}


def admitted_deletes() -> frozenset[str]:
    """The deletions Volcano's webhooks vet: only of Queues (a queue with children or a built-in one stays).

    Declared as the hook's ``deletes``: deleting a PodGroup or a Job then costs no copy of it for the hook.
    """
    return frozenset({QUEUES})


def attach_admission(store: Store) -> None:
    """Give a store's ``Admission`` hook (if it has one) the store it guards."""
    hook = getattr(store, "admission", None)
    attach = getattr(hook, "attach", None)
    if callable(attach):
        attach(store)


def resource_for(obj: Mapping[str, Any], store: Store | None = None) -> ResourceInfo:
    """The store resource of an object from its kind (``KeyError`` if the kind is unknown)."""
    kind = str(obj.get("kind") or "")
    registry = getattr(store, "resources", None)
    if registry is not None:
        for name in registry:
            info = registry[name]
            if info.kind == kind:
                return info
    return _KINDS[kind]


#: The namespaces a Kubernetes cluster starts with.
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def default_objects(store: Store) -> None:
    """Create the namespaces and the system priority classes a cluster starts with (those missing)."""
    for name in DEFAULT_NAMESPACES:
        with contextlib.suppress(AlreadyExists):
            store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
                                        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    for name, value in SYSTEM_PRIORITY_CLASSES.items():
        with contextlib.suppress(AlreadyExists):
            store.create("priorityclasses.scheduling.k8s.io", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value, "preemptionPolicy": "PreemptLowerPriority",
                "description": "A system priority class, as every cluster has."})


def default_queues(store: Store) -> None:
    """Without controllers, create the ``root`` and ``default`` queues Volcano starts with."""
    for name, spec in (("root", {"weight": 1}), ("default", {"weight": 1, "reclaimable": True, "parent": "root"})):
        with contextlib.suppress(AlreadyExists):
            store.create("queues.scheduling.volcano.sh", {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                "metadata": {"name": name}, "spec": spec, "status": {"state": "Open"},
            })
