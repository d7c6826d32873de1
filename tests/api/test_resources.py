"""The store resource names written out in pumice.api.resources are those their models give."""

from __future__ import annotations

import pumice.api.resources as resources
from pumice.api.apiextensions import CustomResourceDefinition
from pumice.api.apps import Deployment, ReplicaSet, StatefulSet
from pumice.api.batch import Command, CronJob, Job
from pumice.api.batch_v1 import BatchJob
from pumice.api.core import ResourceQuota
from pumice.api.flow import JobFlow, JobTemplate
from pumice.api.nodeinfo import Numatopology
from pumice.api.policy import PodDisruptionBudget
from pumice.api.scheduling import PodGroup, PriorityClass, Queue
from pumice.api.topology import HyperNode

MODELS = {
    "BATCH_JOBS": BatchJob, "COMMANDS": Command, "CRDS": CustomResourceDefinition, "CRONJOBS": CronJob,
    "DEPLOYMENTS": Deployment, "HYPERNODES": HyperNode, "JOBFLOWS": JobFlow, "JOBS": Job,
    "JOBTEMPLATES": JobTemplate, "NUMATOPOLOGIES": Numatopology, "PODDISRUPTIONBUDGETS": PodDisruptionBudget,
    "PODGROUPS": PodGroup, "PRIORITYCLASSES": PriorityClass, "QUEUES": Queue, "REPLICASETS": ReplicaSet,
    "RESOURCEQUOTAS": ResourceQuota, "STATEFULSETS": StatefulSet,
}


def test_every_name_is_its_models() -> None:
    names = [n for n in resources.__all__ if isinstance(getattr(resources, n), str)]
    assert sorted(names) == sorted(MODELS)
    for name in names:
        assert getattr(resources, name) == resources.resource_of(MODELS[name]), name


def test_what_the_scheduler_watches_is_served_by_every_store() -> None:
    """``pumice run`` starts these lists before the scheduler is imported: each must be a resource the stores
    know (the scheduler's informers are built from the same tuple)."""
    from pumice.scheduler.loop import WATCHED
    from pumice.store.resources import DEFAULT_RESOURCES

    assert WATCHED is resources.SCHEDULER_WATCHED
    known = {info.name for info in DEFAULT_RESOURCES}
    assert set(resources.SCHEDULER_WATCHED) <= known, set(resources.SCHEDULER_WATCHED) - known
