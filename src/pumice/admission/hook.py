"""``Admission``: Volcano's mutating and validating webhooks as one store admission hook.

The store calls the hook inside its lock on every write; the hook reads the same store (queues,
PodGroups, pods) to check cross-object rules, so it is built first and attached once the store exists::

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
from pumice.api.resources import JOBFLOWS, JOBS, JOBTEMPLATES, PODGROUPS, QUEUES
from pumice.store import Invalid, MemoryStore, Store

from .defaulting import DEFAULTED, default_object
from .fastpath import fill_podgroup_defaults, plain_podgroup
from .jobflows import validate_jobflow
from .jobs import validate_job, validate_job_update
from .podgroups import validate_podgroup
from .queues import validate_queue, validate_queue_delete

__all__ = ["FLOWS", "Admission", "admitted_memory_store"]

Obj = dict[str, Any]
#: ``flow.volcano.sh`` resources: their CRD schema is checked, and JobFlows must be DAGs.
FLOWS = frozenset({JOBFLOWS, JOBTEMPLATES})


class Admission:
    """Callable as ``admission(operation, resource, new, old)``, per ``pumice.store.Admission``."""

    #: What it changes in ``new`` in place (a PodGroup's default queue) is plain JSON: see ``pumice.store.Admission``
    plain_results = True
    #: The writes (and deletions) the store shows it; ``None``: all of them (see ``pumice.store.Admission``)
    resources: frozenset[str] | None = None
    deletes: frozenset[str] | None = None

    def __init__(self, store: Store | None = None) -> None:
        self._store = store

    def attach(self, store: Store) -> None:
        """Give the hook the store it guards (and reads)."""
        self._store = store

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
        if resource not in (JOBS, PODGROUPS, QUEUES):
            return None  # pods, nodes, subresources...: nothing to default or check
        if operation == "DELETE":
            if resource == QUEUES and old is not None:
                validate_queue_delete(self.store, old)
            return None
        assert new is not None
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
