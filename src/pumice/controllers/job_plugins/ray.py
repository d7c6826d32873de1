"""The ``ray`` plugin: the head's and workers' ``ray start`` commands, the head's ports, the head Service.

``--head`` / ``--worker`` name the tasks, ``--headContainer`` / ``--workerContainer`` (``head`` /
``worker``) the containers whose command is set, ``--port`` (GCS, 6379), ``--dashboardPort`` (8265) and
``--clientPort`` (10001) the head's ports (named ``gcs``, ``dashboard``, ``client-server``). Workers join
``<head pod>.<job>:<port>``. The Service ``<job>-head-svc`` selects the head task's pods on those three
ports. A pod of a job without its head task cannot be created (Volcano's error).
"""

from __future__ import annotations

from typing import Any

from pumice.store import Store

from ..names import JOB_NAME, JOB_NAMESPACE, SERVICES, TASK_SPEC, name_of, namespace_of
from .base import (
    JobPlugin,
    Obj,
    PluginError,
    add_port,
    containers,
    create,
    delete,
    domain_name,
    owner_reference,
    task_key,
    task_named,
)
from .flags import Flag

__all__ = ["RayPlugin"]

_PORTS = (("port", "gcs"), ("dashboardPort", "dashboard"), ("clientPort", "client-server"))


class RayPlugin(JobPlugin):
    name = "ray"
    FLAGS = (
        Flag("head", "string", "head"),
        Flag("headContainer", "string", "head"),
        Flag("worker", "string", "worker"),
        Flag("workerContainer", "string", "worker"),
        Flag("port", "int", 6379),
        Flag("dashboardPort", "int", 8265),
        Flag("clientPort", "int", 10001),
    )

    def configure(self, values: dict[str, Any]) -> None:
        self.head = str(values["head"])
        self.head_container = str(values["headContainer"])
        self.worker = str(values["worker"])
        self.worker_container = str(values["workerContainer"])
        self.ports = {flag: int(values[flag]) for flag, _ in _PORTS}

    @staticmethod
    def service_name(job: Obj) -> str:
        return f"{name_of(job)}-head-svc"

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        head = task_named(job, self.head)
        if head is None:
            raise PluginError(f"job {name_of(job)} doesn't have head task {self.head}")
        task = task_key(pod)
        for container in containers(pod):
            if task == self.head and container.get("name") == self.head_container:
                for flag, port_name in _PORTS:
                    add_port(container, self.ports[flag], port_name)
                ports = self.ports
                container["command"] = [
                    "sh", "-c",
                    f"ray start --head --block --dashboard-host=0.0.0.0 --port={ports['port']} "
                    f"--dashboard-port={ports['dashboardPort']} --ray-client-server-port={ports['clientPort']}",
                ]
            if task == self.worker and container.get("name") == self.worker_container:
                address = f"{domain_name(head, name_of(job), 0)}:{self.ports['port']}"
                container["command"] = ["sh", "-c", f"ray start --block --address={address}"]

    def on_job_add(self, store: Store, job: Obj) -> bool:
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": self.service_name(job), "namespace": namespace_of(job),
                         "ownerReferences": [owner_reference(job)]},
            "spec": {
                "selector": {JOB_NAME: name_of(job), JOB_NAMESPACE: namespace_of(job), TASK_SPEC: self.head},
                "ports": [{"name": port_name, "port": self.ports[flag], "targetPort": port_name, "protocol": "TCP"}
                          for flag, port_name in _PORTS],
            },
        }
        return create(store, SERVICES, service)

    def on_job_delete(self, store: Store, job: Obj) -> bool:
        return delete(store, SERVICES, namespace_of(job), self.service_name(job))
