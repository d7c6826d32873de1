"""``pumice.admission``: Volcano's admission webhooks and kube-apiserver's defaulting and validation, for the store."""

from .defaulting import default_object
from .hook import ADMITTED_DELETES, ADMITTED_RESOURCES, ADMITTED_UPDATES, Admission, admitted_memory_store
from .jobflows import validate_jobflow
from .jobs import job_problems, validate_job, validate_job_update
from .lookup import Reader
from .podgroups import validate_podgroup
from .pods import default_pod
from .queues import MAX_QUEUE_DEPTH, validate_queue, validate_queue_delete

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
