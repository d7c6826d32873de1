"""Volcano's webhooks (``pkg/webhooks/admission``) over the rules in ``pumice.admission``.

Each webhook has Volcano's path, name and operations. Mutating ones answer with the defaults that
``pumice.admission.default_object`` fills in, as a JSON patch; validating ones run the same job,
PodGroup and (hierarchical) queue rules as the embedded control plane, reading other objects through
a ``pumice.admission.Reader`` (the API server, for a real cluster).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pumice.admission import (
    Reader,
    default_object,
    validate_job,
    validate_job_update,
    validate_jobflow,
    validate_podgroup,
    validate_queue,
    validate_queue_delete,
)
from pumice.api.batch import Job
from pumice.api.core import Namespace
from pumice.api.defaults import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION
from pumice.api.flow import JobFlow
from pumice.api.meta import KubeObject
from pumice.api.resources import JOBFLOWS, JOBS, PODGROUPS, QUEUES, resource_of
from pumice.api.scheduling import PodGroup, Queue
from pumice.client import ClientError
from pumice.store import BadRequest, NotFound, StoreError

from .review import Review, allow, deny, json_patch

__all__ = ["DEFAULT_ENABLED", "WEBHOOKS", "Webhook", "admit", "enabled_webhooks"]

log = logging.getLogger("pumice.webhooks")
Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Webhook:
    """One of Volcano's admission webhooks: where it is served and what it is called for."""

    path: str
    #: The webhook's name in its configuration (what the API server's refusals quote).
    name: str
    #: Mutating (defaults, as a JSON patch) or validating (admit or refuse).
    mutating: bool
    model: type[KubeObject]
    operations: tuple[str, ...]

    @property
    def resource(self) -> str:
        """The store resource name (``jobs.batch.volcano.sh``)."""
        return resource_of(self.model)

    def rule(self) -> Obj:
        """The ``RuleWithOperations`` the API server matches requests with."""
        group, _, version = self.model.API_VERSION.rpartition("/")
        return {"apiGroups": [group], "apiVersions": [version], "operations": list(self.operations),
                "resources": [self.model.PLURAL], "scope": "*"}


#: Volcano's webhooks that pumice has the rules of (``hypernodes``, ``cronjobs`` and ``pods`` webhooks are not
#: among them).
WEBHOOKS: tuple[Webhook, ...] = (
    # Jobs are defaulted on UPDATE too (Volcano's only on CREATE): a manifest applied again unchanged is then no
    # change, where Volcano refuses it (its issue #2238). A deliberate difference, in the README.
    Webhook("/jobs/mutate", "mutatejob.volcano.sh", True, Job, ("CREATE", "UPDATE")),
    Webhook("/jobs/validate", "validatejob.volcano.sh", False, Job, ("CREATE", "UPDATE")),
    Webhook("/podgroups/mutate", "mutatepodgroup.volcano.sh", True, PodGroup, ("CREATE",)),
    Webhook("/podgroups/validate", "validatepodgroup.volcano.sh", False, PodGroup, ("CREATE",)),
    Webhook("/queues/mutate", "mutatequeue.volcano.sh", True, Queue, ("CREATE",)),
    Webhook("/queues/validate", "validatequeue.volcano.sh", False, Queue, ("CREATE", "UPDATE", "DELETE")),
    Webhook("/jobflows/validate", "validatejobflow.volcano.sh", False, JobFlow, ("CREATE", "UPDATE")),
)
#: Enabled unless told otherwise: those of Volcano's Helm chart (``custom.enabled_admissions``) pumice serves.
DEFAULT_ENABLED: tuple[str, ...] = (
    "/jobs/mutate", "/jobs/validate", "/podgroups/validate", "/queues/mutate", "/queues/validate",
)
_BY_PATH = {hook.path: hook for hook in WEBHOOKS}


def enabled_webhooks(paths: str | tuple[str, ...] | list[str] | None = None) -> tuple[Webhook, ...]:
    """The webhooks named by ``paths`` (Volcano's ``--enabled-admission``: comma-separated paths)."""
    if paths is None:
        paths = DEFAULT_ENABLED
    if isinstance(paths, str):
        paths = [p.strip() for p in paths.split(",")]
    hooks = []
    for path in paths:
        if not path:
            continue
        hook = _BY_PATH.get(path)
        if hook is None:
            raise ValueError(f"enabled admission {path} is not one pumice serves (known: {', '.join(_BY_PATH)})")
        if hook not in hooks:
            hooks.append(hook)
    return tuple(hooks)


def admit(hook: Webhook, review: Review, reader: Reader) -> Obj:
    """The ``AdmissionReview`` answering ``review`` for ``hook``."""
    if review.operation not in hook.operations:
        return allow(review)  # not registered for it: nothing to say
    try:
        if hook.mutating:
            return allow(review, _mutate(hook, review, reader))
        _validate(hook, review, reader)
    except StoreError as err:
        return deny(review, err.message)
    except ClientError as err:  # the API server could not be read: refuse rather than admit unchecked
        log.warning("%s: %s", hook.path, err)
        return deny(review, f"cannot check the object: {err}")
    return allow(review)


def _mutate(hook: Webhook, review: Review, reader: Reader) -> list[Obj]:
    obj = review.object
    if obj is None:
        raise BadRequest(f"the {review.operation} request has no object")
    defaulted = default_object(obj)
    if hook.resource == PODGROUPS:
        _namespace_queue(defaulted, review.namespace, reader)
    # Status is the controllers' (the API server keeps it out of creates anyway).
    return [op for op in json_patch(obj, defaulted) if not op["path"].startswith("/status")]


def _namespace_queue(podgroup: Obj, namespace: str, reader: Reader) -> None:
    """``mutate_podgroup.go``: a PodGroup in the default queue goes to its namespace's queue annotation."""
    spec = podgroup.setdefault("spec", {})
    if (spec.get("queue") or DEFAULT_QUEUE) != DEFAULT_QUEUE or not namespace:
        return
    try:
        ns = reader.get(resource_of(Namespace), None, namespace)
    except NotFound:
        return
    queue = ((ns.get("metadata") or {}).get("annotations") or {}).get(QUEUE_NAME_ANNOTATION)
    if queue:
        spec["queue"] = queue


def _validate(hook: Webhook, review: Review, reader: Reader) -> None:
    new, old = review.object, review.old_object
    if review.operation == "DELETE":
        if hook.resource == QUEUES:
            validate_queue_delete(reader, old or reader.get(QUEUES, None, review.name))
        return
    if new is None:
        raise BadRequest(f"the {review.operation} request has no object")
    if hook.resource == JOBS:
        if review.operation == "CREATE":
            validate_job(reader, new)
        else:
            validate_job_update(new, old or {})
    elif hook.resource == PODGROUPS:
        validate_podgroup(reader, new)
    elif hook.resource == QUEUES:
        validate_queue(reader, new, old if review.operation == "UPDATE" else None)
    elif hook.resource == JOBFLOWS:
        validate_jobflow(new)
