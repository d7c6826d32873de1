"""The ``pytorch`` plugin: ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and ``RANK`` for torch.distributed.

``--master`` (``master``) and ``--worker`` (``worker``) name the tasks, ``--port`` (23456) the rendezvous
port, opened (named ``pytorchjob-port``) on every container. ``MASTER_ADDR`` is the master's first
replica ``<pod>.<job>``; ``WORLD_SIZE`` counts the master and worker replicas; ``RANK`` is 0 on the master
and index + 1 on a worker (other tasks get no ``RANK``). With ``--wait-master-enabled`` every worker pod
gets the init container ``wait-for-master`` (``--wait-master-image``, ``busybox:1.36.1``) that polls the
master's port for up to ``--wait-master-timeout`` (300) seconds. A job without the master task is left
alone.
"""

from __future__ import annotations

from typing import Any

from ..names import name_of
from .base import (
    JobPlugin,
    Obj,
    PluginError,
    add_env,
    add_port,
    containers,
    domain_name,
    pod_index,
    task_key,
    task_named,
    tasks,
)
from .flags import Flag

__all__ = ["DEFAULT_PORT", "PytorchPlugin", "wait_for_master_script"]

DEFAULT_PORT = 23456
PORT_NAME = "pytorchjob-port"
WAIT_CONTAINER = "wait-for-master"


def wait_for_master_script(addr: str, port: int, timeout: int) -> str:
    """The shell loop of the ``wait-for-master`` init container (Volcano's, character for character)."""
    return (
        f'echo "Waiting for master node {addr}:{port} to be ready..."\n'
        f"TIMEOUT={timeout}\n"
        "ELAPSED=0\n"
        f"until {{ nc -z {addr} {port} || echo > /dev/tcp/{addr}/{port}; }} 2>/dev/null; do\n"
        "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"
        '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
        "    exit 1\n"
        "  fi\n"
        '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
        "  sleep 2\n"
        "  ELAPSED=$((ELAPSED + 2))\n"
        "done\n"
        'echo "Master node is ready!"'
    )


class PytorchPlugin(JobPlugin):
    name = "pytorch"
    FLAGS = (
        Flag("master", "string", "master"),
        Flag("worker", "string", "worker"),
        Flag("port", "int", DEFAULT_PORT),
        Flag("wait-master-enabled", "bool", False),
        Flag("wait-master-timeout", "int", 300),
        Flag("wait-master-image", "string", "busybox:1.36.1"),
    )

    def configure(self, values: dict[str, Any]) -> None:
        self.master = str(values["master"])
        self.worker = str(values["worker"])
        self.port = int(values["port"])
        self.wait_master = bool(values["wait-master-enabled"])
        self.wait_timeout = int(values["wait-master-timeout"])
        self.wait_image = str(values["wait-master-image"])

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        master = task_named(job, self.master)
        if master is None:
            return
        task = task_key(pod)
        addr = domain_name(master, name_of(job), 0)
        rank = None
        if task == self.worker:
            try:
                rank = int(pod_index(pod)) + 1
            except ValueError:
                raise PluginError(f"pod {name_of(pod)}: no index in its name") from None
            self._add_wait_container(pod, addr)
        elif task == self.master:
            rank = 0
        world = sum(int(t.get("replicas") or 0) for t in tasks(job) if t.get("name") in (self.master, self.worker))
        for container in containers(pod):
            add_port(container, self.port, PORT_NAME)
            add_env(container, "MASTER_ADDR", addr)
            add_env(container, "MASTER_PORT", str(self.port))
            add_env(container, "WORLD_SIZE", str(world))
            if rank is not None:
                add_env(container, "RANK", str(rank))

    def _add_wait_container(self, pod: Obj, addr: str) -> None:
        if not self.wait_master:
            return
        spec = pod.setdefault("spec", {})
        inits = spec.setdefault("initContainers", [])
        if any(c.get("name") == WAIT_CONTAINER for c in inits):
            return
        script = wait_for_master_script(addr, self.port, self.wait_timeout)
        inits.append({"name": WAIT_CONTAINER, "image": self.wait_image, "command": ["sh", "-c", script]})
