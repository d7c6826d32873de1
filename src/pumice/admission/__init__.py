"""``pumice.admission``: Volcano's admission webhooks and kube-apiserver's defaulting and validation, for the store.

Names are imported on first use (PEP 562): ``pumice schedule`` defaults its pods with
:func:`default_pod` without importing the store and every webhook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pumice.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .defaulting import default_object
    from .hook import ADMITTED_DELETES, ADMITTED_RESOURCES, ADMITTED_UPDATES, Admission, admitted_memory_store
    from .jobflows import validate_jobflow
    from .jobs import job_problems, validate_job, validate_job_update
    from .lookup import Reader
    from .podgroups import validate_podgroup
    from .pods import default_pod
    from .queues import MAX_QUEUE_DEPTH, validate_queue, validate_queue_delete

_EXPORTS: dict[str, str] = {
    "default_object": "pumice.admission.defaulting",
    "ADMITTED_DELETES": "pumice.admission.hook",
    "ADMITTED_RESOURCES": "pumice.admission.hook",
    "ADMITTED_UPDATES": "pumice.admission.hook",
    "Admission": "pumice.admission.hook",
    "admitted_memory_store": "pumice.admission.hook",
    "validate_jobflow": "pumice.admission.jobflows",
    "job_problems": "pumice.admission.jobs",
    "validate_job": "pumice.admission.jobs",
    "validate_job_update": "pumice.admission.jobs",
    "Reader": "pumice.admission.lookup",
    "validate_podgroup": "pumice.admission.podgroups",
    "default_pod": "pumice.admission.pods",
    "MAX_QUEUE_DEPTH": "pumice.admission.queues",
    "validate_queue": "pumice.admission.queues",
    "validate_queue_delete": "pumice.admission.queues",
}

__all__ = [
    "ADMITTED_DELETES",
    "ADMITTED_RESOURCES",
    "ADMITTED_UPDATES",
    "MAX_QUEUE_DEPTH",
    "Admission",
    "Reader",
    "admitted_memory_store",
    "default_object",
    "default_pod",
    "job_problems",
    "validate_job",
    "validate_job_update",
    "validate_jobflow",
    "validate_podgroup",
    "validate_queue",
    "validate_queue_delete",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
