"""Store resource names (``plural.group``, as Kubernetes names them) of the kinds pumice acts on, in one place."""

from __future__ import annotations

from pumice.api.apiextensions import CustomResourceDefinition
from pumice.api.apps import Deployment, ReplicaSet, StatefulSet
from pumice.api.batch import Command, CronJob, Job
from pumice.api.batch_v1 import BatchJob
from pumice.api.core import ResourceQuota
from pumice.api.flow import JobFlow, JobTemplate
from pumice.api.meta import KubeObject
from pumice.api.nodeinfo import Numatopology
from pumice.api.policy import PodDisruptionBudget
from pumice.api.scheduling import PodGroup, PriorityClass, Queue
from pumice.api.topology import HyperNode

__all__ = [
    "BATCH_JOBS",
    "COMMANDS",
    "CRDS",
    "CRONJOBS",
    "DEPLOYMENTS",
    "HYPERNODES",
    "JOBFLOWS",
    "JOBS",
    "JOBTEMPLATES",
    "NUMATOPOLOGIES",
    "PODDISRUPTIONBUDGETS",
    "PODGROUPS",
    "PRIORITYCLASSES",
    "QUEUES",
    "REPLICASETS",
    "RESOURCEQUOTAS",
    "STATEFULSETS",
    "resource_of",
]


def resource_of(model: type[KubeObject]) -> str:
    """``pods`` for core kinds, ``podgroups.scheduling.volcano.sh`` for grouped ones."""
    group = model.API_VERSION.rpartition("/")[0]
    return f"{model.PLURAL}.{group}" if group else model.PLURAL


JOBS = resource_of(Job)
PODGROUPS = resource_of(PodGroup)
QUEUES = resource_of(Queue)
HYPERNODES = resource_of(HyperNode)
COMMANDS = resource_of(Command)
CRONJOBS = resource_of(CronJob)
NUMATOPOLOGIES = resource_of(Numatopology)
DEPLOYMENTS = resource_of(Deployment)
REPLICASETS = resource_of(ReplicaSet)
STATEFULSETS = resource_of(StatefulSet)
BATCH_JOBS = resource_of(BatchJob)
RESOURCEQUOTAS = resource_of(ResourceQuota)
PRIORITYCLASSES = resource_of(PriorityClass)
CRDS = resource_of(CustomResourceDefinition)
JOBFLOWS = resource_of(JobFlow)
JOBTEMPLATES = resource_of(JobTemplate)
PODDISRUPTIONBUDGETS = resource_of(PodDisruptionBudget)
