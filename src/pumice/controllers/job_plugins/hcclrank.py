"""The ``hcclrank`` plugin: the HCCL rank of each pod of an Ascend job, as the annotation ``hccl/rankIndex``.

``--master`` (``master``) and ``--worker`` (``worker``) name the tasks. A pod that already carries the
annotation keeps it; a pod whose containers set ``RANK`` (the first container that has it) gets that;
otherwise a master gets its task index and a worker the master's replicas + its index. Pods of other
tasks get nothing. The plugin writes no object and no env.
"""

from __future__ import annotations

from typing import Any

from ..names import annotations_of
from .base import JobPlugin, Obj, containers, task_index, task_key, task_named
from .flags import Flag

__all__ = ["HCCL_RANK", "HcclrankPlugin"]

HCCL_RANK = "hccl/rankIndex"


def _env_value(pod: Obj, name: str) -> str:
    """``getEnv``: the first plain value of ``name`` across the pod's containers, "" when none."""
    for container in containers(pod):
        for env in container.get("env") or []:
            if env.get("name") == name:
                return str(env.get("value") or "")
    return ""


class HcclrankPlugin(JobPlugin):
    name = "hcclrank"
    FLAGS = (Flag("master", "string", "master"), Flag("worker", "string", "worker"))
    CONTROLLED = False

    def configure(self, values: dict[str, Any]) -> None:
        self.master = str(values["master"])
        self.worker = str(values["worker"])

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        if annotations_of(pod).get(HCCL_RANK):
            return
        meta = pod.setdefault("metadata", {})
        rank = _env_value(pod, "RANK")
        if rank:
            meta.setdefault("annotations", {})[HCCL_RANK] = rank
            return
        task = task_key(pod)
        if task not in (self.master, self.worker):
            return
        index = task_index(pod)
        if task == self.master:
            value = index
        else:
            master = task_named(job, self.master)
            value = int((master or {}).get("replicas") or 0) + index
        meta.setdefault("annotations", {})[HCCL_RANK] = str(value)
