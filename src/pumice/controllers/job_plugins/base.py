"""What every job plugin shares: construction from its arguments, and small helpers on wire objects.

A plugin (``pkg/controllers/job/plugins/interface``) is built from the job's ``spec.plugins.<name>``
arguments; it adds objects when the job is initiated (``on_job_add``), decorates each pod before it is
created (``on_pod_create``), follows a scaled job (``on_job_update``) and removes its objects when the job
is killed or deleted (``on_job_delete``). Plugins keep no state between calls: the same arguments give
the same plugin, so instances are shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pumice.store import AlreadyExists, NotFound, Store

from ..names import TASK_INDEX, TASK_SPEC, annotations_of, labels, name_of, uid_of
from .flags import Flag, parse_flags

__all__ = [
    "JobPlugin",
    "Obj",
    "PluginError",
    "add_env",
    "add_port",
    "containers",
    "create",
    "delete",
    "domain_name",
    "init_containers",
    "owner_reference",
    "pod_index",
    "replica_hosts",
    "task_index",
    "task_key",
    "task_named",
    "task_position",
    "tasks",
]

Obj = dict[str, Any]


class PluginError(Exception):
    """A plugin cannot decorate a pod or add its objects (e.g. a Ray job without its head task)."""


def owner_reference(job: Obj) -> Obj:
    """The controller reference every object created for ``job`` carries."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": name_of(job),
        "uid": uid_of(job),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def create(store: Store, resource: str, obj: Obj) -> bool:
    """Create ``obj`` unless it exists; True if it was created."""
    try:
        store.create(resource, obj)
    except AlreadyExists:
        return False
    return True


def delete(store: Store, resource: str, namespace: str, name: str) -> bool:
    """Delete an object if it exists; True if it was deleted."""
    try:
        store.delete(resource, namespace, name)
    except NotFound:
        return False
    return True


def containers(pod: Obj) -> list[Obj]:
    return list(pod.setdefault("spec", {}).get("containers") or [])


def init_containers(pod: Obj) -> list[Obj]:
    return list(pod.setdefault("spec", {}).get("initContainers") or [])


def add_env(container: Obj, name: str, value: str) -> None:
    """Append ``name=value`` to the container's env (appended as Volcano does: a later duplicate wins)."""
    container.setdefault("env", []).append({"name": name, "value": value})


def add_port(container: Obj, port: int, name: str) -> None:
    """Open ``port`` (named ``name``) unless the container already has that container port."""
    ports = container.setdefault("ports", [])
    if not any(int(p.get("containerPort") or 0) == port for p in ports):
        ports.append({"name": name, "containerPort": port})


def task_key(pod: Obj) -> str:
    """``GetTaskKey``: the pod's task (annotation ``volcano.sh/task-spec``), ``default`` without one."""
    return annotations_of(pod).get(TASK_SPEC) or "default"


def pod_index(pod: Obj) -> str:
    """``GetPodIndexUnderTask``: the last ``-`` part of the pod name (``""`` for a name of fewer than 3 parts)."""
    parts = name_of(pod).split("-")
    return parts[-1] if len(parts) >= 3 else ""


def task_index(pod: Obj) -> int:
    """``GetTaskIndexOfPod``: the label ``volcano.sh/task-index`` as a number."""
    text = labels(pod).get(TASK_INDEX)
    if text is None:
        raise PluginError(f"pod {name_of(pod)} doesn't have {TASK_INDEX} label")
    try:
        return int(text)
    except ValueError:
        raise PluginError(f"failed to parse task index for pod {name_of(pod)}: {text!r}") from None


def tasks(job: Obj) -> list[Obj]:
    return list((job.get("spec") or {}).get("tasks") or [])


def task_position(job: Obj, name: str) -> int:
    """``GetTaskIndexUnderJob``: the position of task ``name`` in the job, -1 if it has none."""
    for position, task in enumerate(tasks(job)):
        if task.get("name") == name:
            return position
    return -1


def task_named(job: Obj, name: str) -> Obj | None:
    position = task_position(job, name)
    return None if position < 0 else tasks(job)[position]


def _template_spec(task: Obj) -> Obj:
    return (task.get("template") or {}).get("spec") or {}


def domain_name(task: Obj, job_name: str, index: int) -> str:
    """``MakeDomainName``: ``<hostname>.<subdomain>`` of a replica; the pod name and the job name by default."""
    spec = _template_spec(task)
    host = spec.get("hostname") or f"{job_name}-{task.get('name')}-{index}"
    return f"{host}.{spec.get('subdomain') or job_name}"


def replica_hosts(task: Obj, job_name: str) -> list[str]:
    """Every replica's domain name; a template with a fixed ``hostname`` gives a single host."""
    count = int(task.get("replicas") or 0)
    if count and _template_spec(task).get("hostname"):
        return [domain_name(task, job_name, 0)]
    return [domain_name(task, job_name, i) for i in range(count)]


class JobPlugin:
    """The base of every job plugin: ``Plugin(arguments)`` parses them with the plugin's ``FLAGS``."""

    name: ClassVar[str] = ""
    FLAGS: ClassVar[tuple[Flag, ...]] = ()
    #: Whether the plugin marks ``status.controlledResources["plugin-<name>"]`` once its objects exist.
    CONTROLLED: ClassVar[bool] = True

    def __init__(self, arguments: Sequence[str] = ()) -> None:
        self.arguments = tuple(arguments)
        values, self.parse_error = parse_flags(self.FLAGS, self.arguments)
        self.configure(values)

    def configure(self, values: dict[str, Any]) -> None:
        """Take the parsed flag values."""

    def warnings(self) -> list[str]:
        """What the user should know about the arguments (Volcano logs these and carries on)."""
        if self.parse_error is None:
            return []
        return [f"plugin {self.name} flagset parse failed, err: {self.parse_error}"]

    def on_job_add(self, store: Store, job: Obj) -> bool:
        return False

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        return None

    def on_job_delete(self, store: Store, job: Obj) -> bool:
        return False

    def on_job_update(self, store: Store, job: Obj) -> bool:
        return False
