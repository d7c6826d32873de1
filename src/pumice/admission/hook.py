"""``Admission``: what a write goes through before it is stored, as on a real Volcano cluster, in one store hook.

In kube-apiserver's order:

1. **decoding**: a built-in kind's body must decode into its type, a custom kind's is pruned and defaulted by
   its CRD schema (Volcano's from ``pumice crds``, a user's CRD's own; ``pumice.api.validation``), else ``400``;
   kube-apiserver's defaults that validation depends on (a pod's requests from its limits, workloads' and
   CRDs' defaults);
2. **the namespace** must exist and not be terminating (``NamespaceLifecycle``; with ``cluster=True``);
3. **Volcano's mutating webhooks**: defaults of Jobs, Queues and CronJobs (a body they cannot read is refused
   ``400`` by the webhook, as on a cluster);
4. **validation**: the kind's Kubernetes rules, or for Volcano's kinds the schema ``pumice crds`` installs,
   ``422 Invalid`` naming every bad field;
5. **Volcano's validating webhooks**: jobs, PodGroups, (hierarchical) queues, JobFlows (a DAG), CronJobs; a
   refusal is a
   ``Denied`` (``400``, ``admission webhook "validatejob.volcano.sh" denied the request: ...``), as a cluster
   answers it.

A CustomResourceDefinition is checked and established (``crds``): its resource is then served and vetted;
deleting it deletes its objects first.

The store calls the hook inside its lock; the hook reads the same store (namespaces, queues, PodGroups, pods)
for cross-object rules, so it is built first and attached once the store exists::

    admission = Admission()
    store = MemoryStore(admission=admission)
    admission.attach(store)

Status writes are validated only for nodes (their capacity is what the scheduler counts), bindings not at all,
as with Volcano's webhooks, which do not intercept subresources.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pumice.api.resources import (
    BATCH_JOBS,
    CRDS,
    CRONJOBS,
    DEPLOYMENTS,
    JOBFLOWS,
    JOBS,
    PODGROUPS,
    QUEUES,
    REPLICASETS,
    STATEFULSETS,
)
from pumice.api.validation import KindRef, Refusal, Validator, volcano_schema
from pumice.store import (
    DEFAULT_RESOURCES,
    Denied,
    Forbidden,
    Invalid,
    MemoryStore,
    NotFound,
    Store,
    error_from_status,
)

from .crds import admit_crd, custom_schema, delete_custom_objects
from .cronjobs import default_cronjob, validate_cronjob
from .defaulting import default_object
from .fastpath import fill_podgroup_defaults, plain_podgroup
from .jobflows import validate_jobflow
from .jobs import validate_job, validate_job_update
from .podgroups import validate_podgroup
from .pods import default_pod
from .priority import SYSTEM_PRIORITY_CLASSES, admit_priority
from .queues import validate_queue, validate_queue_delete
from .services import allocate_service
from .workloads import default_workload

__all__ = [
    "ADMITTED_DELETES",
    "ADMITTED_RESOURCES",
    "ADMITTED_UPDATES",
    "MUTATING_WEBHOOKS",
    "SYSTEM_PRIORITY_CLASSES",
    "VALIDATED_STATUS",
    "VALIDATING_WEBHOOKS",
    "Admission",
    "admitted_memory_store",
    "shared_validator",
]

Obj = dict[str, Any]
#: The names of Volcano's webhooks (as its configurations name them): what a refusal quotes.
MUTATING_WEBHOOKS = {JOBS: "mutatejob.volcano.sh", QUEUES: "mutatequeue.volcano.sh",
                     PODGROUPS: "mutatepodgroup.volcano.sh", CRONJOBS: "mutatecronjob.volcano.sh"}
VALIDATING_WEBHOOKS = {JOBS: "validatejob.volcano.sh", QUEUES: "validatequeue.volcano.sh",
                       PODGROUPS: "validatepodgroup.volcano.sh", JOBFLOWS: "validatejobflow.volcano.sh",
                       CRONJOBS: "validatecronjob.volcano.sh"}
PODS = "pods"
WORKLOADS = frozenset({DEPLOYMENTS, REPLICASETS, STATEFULSETS, BATCH_JOBS})
NAMESPACES = "namespaces"
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
#: The resources whose status writes are validated: nodes (their capacity is what the scheduler counts).
VALIDATED_STATUS = frozenset({"nodes"})
#: Writes the hook vets: every main resource (custom resources join as their CRDs come), and nodes' status.
ADMITTED_RESOURCES = frozenset({info.name for info in DEFAULT_RESOURCES}) | {f"{r}/status" for r in VALIDATED_STATUS}
#: Updates the hook vets: the same.
ADMITTED_UPDATES = ADMITTED_RESOURCES
#: Deletions the hook sees: of Queues (a queue with children or a built-in one stays), of CRDs (their objects go
#: first, as the ``customresourcecleanup`` finalizer does) and of PriorityClasses (the system ones stay).
ADMITTED_DELETES = frozenset({QUEUES, CRDS, PRIORITY_CLASSES})


@cache
def shared_validator() -> Validator:
    """One ``Validator`` for every hook (its tables are read once)."""
    return Validator()


class Admission:
    """Callable as ``admission(operation, resource, new, old)``, per ``pumice.store.Admission``.

    Always: kube-apiserver's ``Priority`` admission of new pods (``priority``: ``spec.priority`` from the pod's
    PriorityClass or the global default one; an unknown class or a disagreeing value is 403).

    ``cluster``: also what kube-apiserver does with other objects, as ``pumice up`` does it (off for the simulator
    and offline checks, whose objects name namespaces nobody created):

    - ``NamespaceLifecycle``: objects need a namespace that exists (else 404) and is not being deleted (403);
    - one global default PriorityClass; the system classes cannot be deleted;
    - the service registry: a new Service gets a cluster IP and node ports (``services``).
    """

    #: What it changes in ``new`` it replaces with new plain JSON (never the caller's nested parts): see
    #: ``pumice.store.Admission``
    plain_results = True
    #: The writes, updates and deletions the store shows it (see ``pumice.store.Admission``); the first two are
    #: sets that the resources of custom resource definitions join as they are admitted.
    resources: set[str]
    updates: set[str]
    deletes: frozenset[str]

    def __init__(self, store: Store | None = None, *, validator: Validator | None = None,
                 cluster: bool = False) -> None:
        self._store = store
        self.cluster = cluster
        self.resources = set(ADMITTED_RESOURCES)
        self.updates = set(ADMITTED_UPDATES)
        self.deletes = ADMITTED_DELETES
        # Volcano's kinds' schemas are fixed (kept answers are shared by every hook); a user's CRDs' come from
        # the store this hook guards
        self.validator = validator if validator is not None else shared_validator()
        self._custom = Validator(self.validator.table, self._schema_of, memo=False)
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

    def _kind(self, resource: str) -> tuple[KindRef, Validator] | None:
        """The kind of ``resource``, and the validator of its objects (a user's CRDs': their schema's)."""
        registry = getattr(self._store, "resources", None)
        info = None if registry is None else registry.get(resource)
        if info is None:
            return None
        validator = self._custom if getattr(info, "custom", None) and \
            volcano_schema(info.api_version, info.kind) is None else self.validator
        return KindRef(info.api_version, info.kind, info.namespaced), validator

    def _schema_of(self, api_version: str, kind: str) -> dict[str, Any] | None:
        """The schema of a custom kind defined by a CRD in the store (that version's ``openAPIV3Schema``)."""
        registry = getattr(self._store, "resources", None)
        info = None if registry is None else registry.for_type(api_version, kind)
        if info is None or not getattr(info, "custom", None):
            return None
        return custom_schema(self.store, info, api_version)

    def __call__(self, operation: str, resource: str, new: Obj | None, old: Obj | None) -> Obj | None:
        if operation == "DELETE":
            if resource == QUEUES and old is not None:
                self._webhook(VALIDATING_WEBHOOKS[QUEUES], validate_queue_delete, self.store, old)
            elif resource == CRDS and old is not None:
                delete_custom_objects(self.store, old)
            elif resource == PRIORITY_CLASSES and old is not None and self.cluster:
                name = (old.get("metadata") or {}).get("name") or ""
                if name in SYSTEM_PRIORITY_CLASSES:
                    raise Forbidden(f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: this is a system '
                                    "priority class and cannot be deleted")
            return None
        if new is None:
            return None
        base, _, sub = resource.partition("/")
        if sub and (sub != "status" or base not in VALIDATED_STATUS):
            return None  # bindings, the controllers' and kubelets' status writes: nothing to check
        kind = self._kind(base)
        ref, validator = (None, self.validator) if kind is None else kind
        if ref is not None:
            new = self._decode(validator, ref, new, old)
        if not sub:
            new = self._kubernetes_defaults(operation, base, new, old)
        if self.cluster and not sub:
            if operation == "CREATE" and ref is not None and ref.namespaced:
                self._check_namespace(base, new)
            if base == PRIORITY_CLASSES:
                self._one_global_default(new)
            elif base == "services" and operation == "CREATE":
                allocate_service(self.store, new)
        if base == PODS and operation == "CREATE" and not sub:
            admit_priority(self.store, new)  # kube-apiserver's Priority admission, embedded or not
        if not sub and base in MUTATING_WEBHOOKS:
            new = self._mutate(operation, base, new)
        if ref is not None:
            try:
                validator.validate(ref, new, old, skip_status=operation == "CREATE" and sub == "" and base != "nodes")
            except Refusal as refusal:
                raise error_from_status(refusal.status) from None
        if not sub and base in VALIDATING_WEBHOOKS:
            self._validate(base, new, old)
        return new

    @staticmethod
    def _decode(validator: Validator, ref: KindRef, new: Obj, old: Obj | None) -> Obj:
        try:
            return validator.prepare(ref, new, create=old is None)
        except Refusal as refusal:
            raise error_from_status(refusal.status) from None

    def _kubernetes_defaults(self, operation: str, resource: str, new: Obj, old: Obj | None) -> Obj:
        """kube-apiserver's defaults that its validation sees: a pod's requests from its limits, the workloads'
        defaults, a CRD checked, defaulted and established (its resource then vetted too)."""
        if resource == PODS:
            if operation == "CREATE":
                default_pod(new)
        elif resource in WORKLOADS:
            default_workload(new, create=operation == "CREATE")
        elif resource == CRDS:
            admit_crd(new, old, str((new.get("metadata") or {}).get("creationTimestamp") or ""))
            spec = new["spec"]
            self._vet_custom(f"{spec['names']['plural']}.{spec['group']}")
        return new

    def _check_namespace(self, resource: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        try:
            ns = self.store.get(NAMESPACES, None, namespace, copy=False)
        except NotFound:
            raise NotFound(f'namespaces "{namespace}" not found') from None
        if (ns.get("metadata") or {}).get("deletionTimestamp") or (ns.get("status") or {}).get("phase") == \
                "Terminating":
            plural = resource.partition(".")[0]
            raise Forbidden(f'{plural} "{meta.get("name") or ""}" is forbidden: unable to create new content in '
                            f"namespace {namespace} because it is being terminated")

    def _one_global_default(self, pc: Obj) -> None:
        if pc.get("globalDefault") is not True:
            return
        name = (pc.get("metadata") or {}).get("name") or ""
        items, _ = self.store.list(PRIORITY_CLASSES, copy=False)
        other = next((o for o in items if o.get("globalDefault") is True and o["metadata"].get("name") != name), None)
        if other is not None:
            raise Forbidden(f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: PriorityClass '
                            f'{other["metadata"]["name"]} is already marked as default. Only one default can exist')

    @staticmethod
    def _webhook(name: str, rule: Any, *args: Any) -> None:
        """Run one of Volcano's rules as its webhook: a refusal is that webhook's ``Denied``."""
        try:
            rule(*args)
        except Denied:
            raise
        except Invalid as err:
            raise Denied(name, err.message) from None

    def _mutate(self, operation: str, resource: str, new: Obj) -> Obj:
        """Volcano's defaults: on create; and a Job's on update too, so that a manifest applied again unchanged is
        no change (Volcano's own webhook defaults only creates: its issue #2238)."""
        if resource == CRONJOBS:
            default_cronjob(new)
            return new
        if resource == PODGROUPS:  # no mutating webhook in Volcano's chart: the schema's defaults (queue) apply
            if operation == "CREATE" and plain_podgroup(new):
                fill_podgroup_defaults(new)  # ``new`` is the store's to hand over: no copy needed
            return new
        if operation == "CREATE" or resource == JOBS:
            try:
                return default_object(new)
            except Invalid as err:
                raise Denied(MUTATING_WEBHOOKS[resource], err.message) from None
        return new

    def _validate(self, resource: str, new: Obj, old: Obj | None) -> None:
        name = VALIDATING_WEBHOOKS[resource]
        if resource == JOBS:
            if old is None:
                self._webhook(name, validate_job, self.store, new)
            else:
                self._webhook(name, validate_job_update, new, old)
        elif resource == PODGROUPS:
            if old is None:
                self._webhook(name, validate_podgroup, self.store, new)
        elif resource == JOBFLOWS:
            self._webhook(name, validate_jobflow, new)
        elif resource == CRONJOBS:
            self._webhook(name, validate_cronjob, new)
        else:
            self._webhook(name, validate_queue, self.store, new, old)


def admitted_memory_store(**kwargs: Any) -> MemoryStore:
    """A ``MemoryStore`` guarded by a fresh ``Admission`` (keyword arguments go to the store)."""
    admission = Admission()
    store = MemoryStore(admission=admission, **kwargs)
    admission.attach(store)
    return store

