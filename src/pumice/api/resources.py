"""Store resource names (``plural.group``, as Kubernetes names them) of the kinds pumice acts on, in one place.

The names are written out rather than derived from the models, so that a component that only needs a
name (the scheduler's informers) does not import every model; ``tests/api/test_resources.py`` checks
each against :func:`resource_of` of its model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pumice.api.meta import KubeObject

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
    "SCHEDULER_WATCHED",
    "STATEFULSETS",
    "resource_of",
]


def resource_of(model: type[KubeObject]) -> str:
    """``pods`` for core kinds, ``podgroups.scheduling.volcano.sh`` for grouped ones."""
    group = model.API_VERSION.rpartition("/")[0]
    return f"{model.PLURAL}.{group}" if group else model.PLURAL


BATCH_JOBS = "jobs.batch"
COMMANDS = "commands.bus.volcano.sh"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
CRONJOBS = "cronjobs.batch.volcano.sh"
DEPLOYMENTS = "deployments.apps"
HYPERNODES = "hypernodes.topology.volcano.sh"
JOBFLOWS = "jobflows.flow.volcano.sh"
JOBS = "jobs.batch.volcano.sh"
JOBTEMPLATES = "jobtemplates.flow.volcano.sh"
NUMATOPOLOGIES = "numatopologies.nodeinfo.volcano.sh"
PODDISRUPTIONBUDGETS = "poddisruptionbudgets.policy"
PODGROUPS = "podgroups.scheduling.volcano.sh"
PRIORITYCLASSES = "priorityclasses.scheduling.k8s.io"
QUEUES = "queues.scheduling.volcano.sh"
REPLICASETS = "replicasets.apps"
RESOURCEQUOTAS = "resourcequotas"
STATEFULSETS = "statefulsets.apps"


#: What the scheduler always watches (its informers), in the order it lists them; ``pumice run`` starts these
#: lists first thing, so that the API server prepares them while the rest of the scheduler is imported.
SCHEDULER_WATCHED = ("nodes", QUEUES, PRIORITYCLASSES, HYPERNODES, PODGROUPS, "pods", RESOURCEQUOTAS)
