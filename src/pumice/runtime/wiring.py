"""Wiring helpers of the runtime: admission hook, kind -> resource, Volcano's starting queues."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from pumice.admission import Admission
from pumice.api.resources import JOBFLOWS, JOBS, JOBTEMPLATES, PODGROUPS, QUEUES
from pumice.store import DEFAULT_RESOURCES, AlreadyExists, ResourceInfo, Store

__all__ = [
    "admitted_deletes",
    "admitted_resources",
    "attach_admission",
    "default_queues",
    "load_admission",
    "resource_for",
]

_KINDS: dict[str, ResourceInfo] = {info.kind: info for info in DEFAULT_RESOURCES}


def load_admission() -> Admission:
    """A fresh ``pumice.admission.Admission`` hook (Volcano's webhooks), told which writes it vets.

    The hook reads the store it guards: ``Cluster`` attaches it to its store (``hook.attach(store)``).
    """
    hook = Admission()
    hook.resources = admitted_resources()
    hook.deletes = admitted_deletes()
    return hook


def admitted_resources() -> frozenset[str]:
    """What Volcano's webhooks vet: main-resource writes of Jobs, PodGroups, Queues, JobFlows (and JobTemplates'
    CRD schema), see ``pumice.admission``.

    Declared to the store as the hook's ``resources``, so that every other write (pods, nodes, every status
    write and binding) skips the hook and the copies made for it; ``tests/sim/test_runtime.py`` checks that
    the hook indeed leaves those writes alone.
    """
    return frozenset({JOBS, PODGROUPS, QUEUES, JOBFLOWS, JOBTEMPLATES})


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


def default_queues(store: Store) -> None:
    """Without controllers, create the ``root`` and ``default`` queues Volcano starts with."""
    for name, spec in (("root", {"weight": 1}), ("default", {"weight": 1, "reclaimable": True, "parent": "root"})):
        with contextlib.suppress(AlreadyExists):
            store.create("queues.scheduling.volcano.sh", {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                "metadata": {"name": name}, "spec": spec, "status": {"state": "Open"},
            })
