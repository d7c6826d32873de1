"""The ``env`` plugin: ``VK_TASK_INDEX`` and ``VC_TASK_INDEX``, the pod's index within its task."""

from __future__ import annotations

from .base import JobPlugin, Obj, add_env, containers, init_containers, pod_index

__all__ = ["TASK_INDEX_ENV", "TASK_VK_INDEX_ENV", "EnvPlugin"]

TASK_VK_INDEX_ENV = "VK_TASK_INDEX"
TASK_INDEX_ENV = "VC_TASK_INDEX"


class EnvPlugin(JobPlugin):
    name = "env"

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        index = pod_index(pod)
        for container in [*containers(pod), *init_containers(pod)]:
            add_env(container, TASK_VK_INDEX_ENV, index)
            add_env(container, TASK_INDEX_ENV, index)
