"""Wiring helpers of the runtime: admission hook, apiVersion/kind -> resource, Volcano's starting queues."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from pumice.admission import ADMITTED_DELETES, ADMITTED_RESOURCES, ADMITTED_UPDATES, Admission
from pumice.admission.hook import SYSTEM_PRIORITY_CLASSES
from pumice.store import DEFAULT_RESOURCES, AlreadyExists, ResourceInfo, ResourceRegistry, Store

__all__ = [
    "DEFAULT_NAMESPACES",
    "admitted_deletes",
    "admitted_resources",
    "admitted_updates",
    "attach_admission",
    "default_objects",
    "default_queues",
    "load_admission",
    "resource_for",
]

_BUILT_IN = ResourceRegistry(DEFAULT_RESOURCES)


def load_admission(*, cluster: bool = False) -> Admission:
    """A fresh ``pumice.admission.Admission`` hook (Kubernetes' validation and kube-apiserver's checks, Volcano's
    webhooks). ``cluster``: also the admission plugins of a real cluster that read other objects, as ``pumice up``
    runs them: objects in a namespace that exists and is not being deleted, pod priorities from their
    PriorityClass, service addresses (see ``Admission``); ``default_objects`` creates the namespaces and classes
    they need.

    It declares the writes it vets itself (``resources``, ``updates``, ``deletes``: see ``admitted_*``), the
    custom resources joining as their CRDs are admitted. The hook reads the store it guards: ``Cluster``
    attaches it to its store (``hook.attach(store)``).
    """
    return Admission(cluster=cluster)


def admitted_resources() -> frozenset[str]:
    """What the admission hook vets (see ``pumice.admission``): every main-resource write (Kubernetes' validation
    of every kind; Volcano's webhooks; workloads' defaults; CRDs and the custom resources they define), and nodes'
    status writes.

    Declared to the store as the hook's ``resources``, so that every other write (the kubelets' and controllers'
    status writes, bindings) skips the hook and the copies made for it; ``tests/sim/test_runtime.py`` checks that
    the hook indeed leaves those writes alone.
    """
    return frozenset(ADMITTED_RESOURCES)


def admitted_updates() -> frozenset[str]:
    """The updates the admission hook vets: those of ``admitted_resources()``."""
    return frozenset(ADMITTED_UPDATES)


def admitted_deletes() -> frozenset[str]:
    """The deletions the admission hook vets: of Queues (a queue with children or a built-in one stays) and of
    CRDs (their objects go first).

    Declared as the hook's ``deletes``: deleting a PodGroup or a Job then costs no copy of it for the hook.
    """
    return frozenset(ADMITTED_DELETES)


def attach_admission(store: Store) -> None:
    """Give a store's ``Admission`` hook (if it has one) the store it guards."""
    hook = getattr(store, "admission", None)
    attach = getattr(hook, "attach", None)
    if callable(attach):
        attach(store)


def resource_for(obj: Mapping[str, Any], store: Store | None = None) -> ResourceInfo:
    """The store resource serving an object, from its apiVersion and kind (the store's registry first: it knows
    the custom resources of its CRDs). A reference without apiVersion (``{kind: Job, name: x}`` in a scenario's
    delete) takes the first resource of that kind: Volcano's Job before Kubernetes'. ``KeyError`` naming the
    type if none serves it, as kubectl's "no matches for kind"."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    registry = getattr(store, "resources", None)
    for known in (registry, _BUILT_IN):
        if isinstance(known, ResourceRegistry):
            info = known.for_type(api_version, kind) if api_version else known.for_kind(kind)
            if info is not None:
                return info
    raise KeyError(f'no matches for kind "{kind}" in version "{api_version}"')


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
