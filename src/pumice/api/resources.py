"""Store resource names (``plural.group``, as Kubernetes names them) of the Volcano kinds, in one place."""

from __future__ import annotations

from pumice.api.batch import Command, Job
from pumice.api.flow import JobFlow, JobTemplate
from pumice.api.meta import KubeObject
from pumice.api.scheduling import PodGroup, Queue
from pumice.api.topology import HyperNode

__all__ = ["COMMANDS", "HYPERNODES", "JOBFLOWS", "JOBS", "JOBTEMPLATES", "PODGROUPS", "QUEUES", "resource_of"]


def resource_of(model: type[KubeObject]) -> str:
    """``pods`` for core kinds, ``podgroups.scheduling.volcano.sh`` for grouped ones."""
    group = model.API_VERSION.rpartition("/")[0]
    return f"{model.PLURAL}.{group}" if group else model.PLURAL


JOBS = resource_of(Job)
PODGROUPS = resource_of(PodGroup)
QUEUES = resource_of(Queue)
HYPERNODES = resource_of(HyperNode)
COMMANDS = resource_of(Command)
JOBFLOWS = resource_of(JobFlow)
JOBTEMPLATES = resource_of(JobTemplate)
