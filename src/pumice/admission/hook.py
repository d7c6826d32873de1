"""``Admission``: what kube-apiserver and Volcano's webhooks do to a write before it is stored, as one store
admission hook.

Volcano's mutating and validating webhooks (Jobs, PodGroups, Queues, CronJobs), and the parts of
kube-apiserver the embedded cluster needs: pod defaulting (requests from limits), the workloads' defaults and
validation, RBAC and CustomResourceDefinition checks, and the schemas of custom resources.

The store calls the hook inside its lock on every write it declares (``resources``, ``updates``,
``deletes``); the hook reads the same store (queues, PodGroups, pods, CRDs) to check cross-object rules, so
it is built first and attached once the store exists::

    admission = Admission()
    store = MemoryStore(admission=admission)
    admission.attach(store)

Only main-resource writes are vetted: status writes (``.../status``) and bindings pass untouched,
as with Volcano's webhooks, which do not intercept subresources.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from pumice.api import parse_object
from pumice.api.resources import (
    BATCH_JOBS,
    CRDS,
    CRONJOBS,
    DEPLOYMENTS,
    JOBFLOWS,
    JOBS,
    JOBTEMPLATES,
    PODGROUPS,
    QUEUES,
    REPLICASETS,
    STATEFULSETS,
)
from pumice.store import Invalid, MemoryStore, Store

from .crds import admit_crd, admit_custom_resource, delete_custom_objects
from .cronjobs import default_cronjob, validate_cronjob
from .defaulting import DEFAULTED, default_object, schema_error
from .fastpath import fill_podgroup_defaults, plain_podgroup
from .jobflows import validate_jobflow
from .jobs import validate_job, validate_job_update
from .podgroups import validate_podgroup
from .pods import default_pod
from .priority import admit_priority
from .queues import validate_queue, validate_queue_delete
from .rbac import validate_rbac
from .workloads import default_workload, validate_workload

__all__ = ["ADMITTED_DELETES", "ADMITTED_RESOURCES", "ADMITTED_UPDATES", "FLOWS", "Admission",
           "admitted_memory_store"]

Obj = dict[str, Any]
PODS = "pods"
#: ``flow.volcano.sh`` resources: their CRD schema is checked, and JobFlows must be DAGs.
FLOWS = frozenset({JOBFLOWS, JOBTEMPLATES})
WORKLOADS = frozenset({DEPLOYMENTS, REPLICASETS, STATEFULSETS, BATCH_JOBS})
RBAC = frozenset(f"{plural}.rbac.authorization.k8s.io"
                 for plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"))
#: Updates the hook vets: Volcano's kinds and the built-in kinds it checks (not pods: requests are immutable).
ADMITTED_UPDATES = frozenset({JOBS, PODGROUPS, QUEUES, CRONJOBS, CRDS, *FLOWS, *WORKLOADS, *RBAC})
#: Writes the hook vets (creates: also pods, for their defaults); custom resources join as their CRDs come.
ADMITTED_RESOURCES = ADMITTED_UPDATES | {PODS}
#: Deletions the hook sees: of Queues (a queue with children or a built-in one stays) and of CRDs (their objects
#: go first, as the ``customresourcecleanup`` finalizer does).
ADMITTED_DELETES = frozenset({QUEUES, CRDS})


class Admission:
    """Callable as ``admission(operation, resource, new, old)``, per ``pumice.store.Admission``."""

    #: What it changes in ``new`` it replaces with new plain JSON (never the caller's nested parts): see
    #: ``pumice.store.Admission``
    plain_results = True
    #: The writes, updates and deletions the store shows it (see ``pumice.store.Admission``); the first two are
    #: sets that the resources of custom resource definitions join as they are admitted.
    resources: set[str]
    updates: set[str]
    deletes: frozenset[str]

    def __init__(self, store: Store | None = None) -> None:
        self._store = store
        self.resources = set(ADMITTED_RESOURCES)
        self.updates = set(ADMITTED_UPDATES)
        self.deletes = ADMITTED_DELETES
        if store is not None:
            self.attach(store)

    def attach(self, store: Store) -> None:
        """Give the hook the store it guards (and reads)."""
        self._store = store
        registry = getattr(store, "resources", None)
        for name in registry or ():
            if registry[name].custom:  # type: ignore[index]
                self._vet_custom(name)

    def _vet_custom(self, resource: str) -> None:
        self.resources.add(resource)
        self.updates.add(resource)

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("Admission is not attached to a store: call attach(store) first")
        return self._store

    def __call__(self, operation: str, resource: str, new: Obj | None, old: Obj | None) -> Obj | None:
        if resource in FLOWS:
            if new is not None and operation != "DELETE":
                _check_schema(new)
                if resource == JOBFLOWS:
                    validate_jobflow(new)
            return None
        if operation == "DELETE":
            if resource == QUEUES and old is not None:
                validate_queue_delete(self.store, old)
            elif resource == CRDS and old is not None:
                delete_custom_objects(self.store, old)
            return None
        if new is None:
            return None
        if resource == PODS:
            if operation == "CREATE":
                default_pod(new)
                admit_priority(self.store, new)
            return new
        if resource in (JOBS, PODGROUPS, QUEUES):
            return self._volcano(operation, resource, new, old)
        if resource in WORKLOADS or resource == CRONJOBS or resource in RBAC:
            schema_error(new)
            if resource == CRONJOBS:
                default_cronjob(new)
                validate_cronjob(new)
            elif resource in RBAC:
                validate_rbac(new, old)
            else:
                default_workload(new, create=operation == "CREATE")
                validate_workload(new, old)
            return new
        if resource == CRDS:
            schema_error(new)
            admit_crd(new, old, str((new.get("metadata") or {}).get("creationTimestamp") or ""))
            spec = new["spec"]
            self._vet_custom(f"{spec['names']['plural']}.{spec['group']}")
            return new
        if resource in self.resources:
            return admit_custom_resource(self.store, resource, new)
        return None

    def _volcano(self, operation: str, resource: str, new: Obj, old: Obj | None) -> Obj:
        if operation == "CREATE" and resource == PODGROUPS and plain_podgroup(new):
            fill_podgroup_defaults(new)  # ``new`` is the store's to hand over: no copy needed
        elif operation == "CREATE" and resource in DEFAULTED:
            new = default_object(new)
        if resource == JOBS:
            if old is None:
                validate_job(self.store, new)
            else:
                validate_job_update(new, old)
        elif resource == PODGROUPS:
            if old is None:
                validate_podgroup(self.store, new)
        else:
            validate_queue(self.store, new, old)
        return new


def _check_schema(obj: Obj) -> None:
    """What a CRD's structural schema refuses (types, required fields, enums, bounds), in one line."""
    try:
        parse_object(obj)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        meta = obj.get("metadata") or {}
        raise Invalid(f'{obj.get("kind")} "{meta.get("name")}": {where}: {first["msg"]}') from None


def admitted_memory_store(**kwargs: Any) -> MemoryStore:
    """A ``MemoryStore`` guarded by a fresh ``Admission`` (keyword arguments go to the store)."""
    admission = Admission()
    store = MemoryStore(admission=admission, **kwargs)
    admission.attach(store)
    return store

