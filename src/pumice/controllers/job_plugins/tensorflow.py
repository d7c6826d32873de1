"""The ``tensorflow`` plugin: ``TF_CONFIG``, the cluster spec and the pod's own task, on every container.

``--ps``, ``--worker``, ``--chief``, ``--evaluator`` name the role tasks (by default the role names) and
``--port`` (2222) the port of every address ``<pod>.<job>:<port>``. ``TF_CONFIG`` is the JSON Volcano
writes (Go's ``json.Marshal``: keys ``cluster`` {ps, worker, chief, evaluator; empty roles left out} and
``task`` {type, index}, no spaces). A job of one task with one replica gets none (stand-alone).
"""

from __future__ import annotations

import json
from typing import Any

from ..names import name_of
from .base import JobPlugin, Obj, PluginError, add_env, containers, domain_name, pod_index, task_key, tasks
from .flags import Flag

__all__ = ["DEFAULT_PORT", "TF_CONFIG", "TensorflowPlugin"]

TF_CONFIG = "TF_CONFIG"
DEFAULT_PORT = 2222
_ROLES = ("ps", "worker", "chief", "evaluator")


class TensorflowPlugin(JobPlugin):
    name = "tensorflow"
    FLAGS = (*(Flag(role, "string", role) for role in _ROLES), Flag("port", "int", DEFAULT_PORT))

    def configure(self, values: dict[str, Any]) -> None:
        self.roles = {role: str(values[role]) for role in _ROLES}
        self.port = int(values["port"])

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        all_tasks = tasks(job)
        if len(all_tasks) == 1 and int(all_tasks[0].get("replicas") or 0) == 1:
            return
        try:
            index = int(pod_index(pod))
        except ValueError:
            raise PluginError(f"pod {name_of(pod)}: no index in its name") from None
        cluster: dict[str, list[str]] = {}
        for task in all_tasks:
            hosts = [f"{domain_name(task, name_of(job), i)}:{self.port}" for i in range(int(task.get("replicas") or 0))]
            for role, task_name in self.roles.items():
                if task.get("name") == task_name:
                    cluster[role] = hosts
                    break
        key = task_key(pod)
        kind = next((role for role in ("chief", "worker", "ps", "evaluator") if self.roles[role] == key), key)
        spec = {"cluster": {role: cluster[role] for role in _ROLES if cluster.get(role)},
                "task": {"type": kind, "index": index}}
        value = json.dumps(spec, separators=(",", ":"))
        for container in containers(pod):
            add_env(container, TF_CONFIG, value)
