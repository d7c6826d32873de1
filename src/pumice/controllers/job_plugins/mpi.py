"""The ``mpi`` plugin: the SSH port on every container, ``MPI_HOST`` (the workers) on the master's.

``--master`` (``master``) and ``--worker`` (``worker``) name the tasks, ``--port`` (22) the port opened
(named ``mpijob-port``) on every container of every pod, init containers included. The master's
containers get ``MPI_HOST``: the workers' ``<pod>.<job>`` names, comma-separated. A master without a
worker task is left as it is. The job webhook adds the ``svc`` plugin (the hostfile
``/etc/volcano/<worker>.host`` and the headless Service) and the ``ssh`` plugin (the keys) to an mpi job;
the master waits for the workers as the job's gang (``minAvailable``) and, optionally, a ``dependsOn``
on the worker task say.
"""

from __future__ import annotations

from typing import Any

from ..names import name_of
from .base import JobPlugin, Obj, add_env, add_port, containers, init_containers, replica_hosts, task_key, task_named
from .flags import Flag

__all__ = ["MPI_HOST", "MpiPlugin"]

MPI_HOST = "MPI_HOST"
PORT_NAME = "mpijob-port"


class MpiPlugin(JobPlugin):
    name = "mpi"
    FLAGS = (Flag("master", "string", "master"), Flag("worker", "string", "worker"), Flag("port", "int", 22))

    def configure(self, values: dict[str, Any]) -> None:
        self.master = str(values["master"])
        self.worker = str(values["worker"])
        self.port = int(values["port"])

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        hosts = None
        if task_key(pod) == self.master:
            worker = task_named(job, self.worker)
            if worker is None:
                return
            hosts = ",".join(replica_hosts(worker, name_of(job)))
        for container in [*init_containers(pod), *containers(pod)]:
            add_port(container, self.port, PORT_NAME)
            if hosts is not None:
                add_env(container, MPI_HOST, hosts)
