"""Job controller plugins (``pkg/controllers/job/plugins``): ``env``, ``svc`` and ``ssh``.

A plugin adds objects when a job is initiated (``on_job_add``), decorates each pod before it is
created (``on_pod_create``) and removes its objects when the job is killed or deleted
(``on_job_delete``). Framework plugins (``mpi``, ``pytorch``, ``tensorflow``, ``ray``) are not
implemented; the webhook still adds ``svc``/``ssh`` for them, which covers host discovery.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Protocol

from pumice.store import AlreadyExists, NotFound, Store

from .names import CONFIGMAPS, JOB_NAME, JOB_NAMESPACE, SECRETS, SERVICES, name_of, namespace_of, uid_of

__all__ = ["PLUGINS", "EnvPlugin", "JobPlugin", "SshPlugin", "SvcPlugin", "owner_reference", "plugins_of"]

Obj = dict[str, Any]


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


def _create(store: Store, resource: str, obj: Obj) -> bool:
    try:
        store.create(resource, obj)
    except AlreadyExists:
        return False
    return True


def _delete(store: Store, resource: str, namespace: str, name: str) -> bool:
    try:
        store.delete(resource, namespace, name)
    except NotFound:
        return False
    return True


def _containers(pod: Obj) -> list[Obj]:
    spec = pod.setdefault("spec", {})
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def _add_env(container: Obj, name: str, value: str) -> None:
    env = container.setdefault("env", [])
    if not any(e.get("name") == name for e in env):
        env.append({"name": name, "value": value})


class JobPlugin(Protocol):
    name: str

    def on_job_add(self, store: Store, job: Obj) -> bool: ...

    def on_pod_create(self, pod: Obj, job: Obj, task: Obj, index: int) -> None: ...

    def on_job_delete(self, store: Store, job: Obj) -> bool: ...

    def on_job_update(self, store: Store, job: Obj) -> bool: ...


class EnvPlugin:
    """``VK_TASK_INDEX`` and ``VC_TASK_INDEX``: the pod's index within its task."""

    name = "env"

    def on_job_add(self, store: Store, job: Obj) -> bool:
        return False

    def on_pod_create(self, pod: Obj, job: Obj, task: Obj, index: int) -> None:
        for container in _containers(pod):
            _add_env(container, "VK_TASK_INDEX", str(index))
            _add_env(container, "VC_TASK_INDEX", str(index))

    def on_job_delete(self, store: Store, job: Obj) -> bool:
        return False

    def on_job_update(self, store: Store, job: Obj) -> bool:
        return False


def _env_name(task: str) -> str:
    return task.upper().replace("-", "_")


def _hosts(job: Obj) -> dict[str, str]:
    """The ``<job>-svc`` ConfigMap data: per task its host list, ``VC_<TASK>_HOSTS`` and ``VC_<TASK>_NUM``."""
    name = name_of(job)
    data: dict[str, str] = {}
    for task in (job.get("spec") or {}).get("tasks") or []:
        task_name = str(task.get("name") or "")
        hosts = [f"{name}-{task_name}-{i}.{name}" for i in range(int(task.get("replicas") or 0))]
        data[f"{task_name}.host"] = "\n".join(hosts)
        data[f"VC_{_env_name(task_name)}_HOSTS"] = ",".join(hosts)
        data[f"VC_{_env_name(task_name)}_NUM"] = str(len(hosts))
    return data


class SvcPlugin:
    """A headless Service ``<job>``, the ConfigMap ``<job>-svc`` with the hosts, hostname/subdomain on pods.

    Hosts reach the containers as plain env values and as files under ``/etc/volcano`` (Volcano uses
    ConfigMap references for the env; the values are the same).
    """

    name = "svc"

    def on_job_add(self, store: Store, job: Obj) -> bool:
        name, ns = name_of(job), namespace_of(job)
        selector = {JOB_NAME: name, JOB_NAMESPACE: ns}
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "ownerReferences": [owner_reference(job)]},
            "spec": {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": True,
                     "ports": [{"name": "placeholder-volcano", "port": 1, "protocol": "TCP"}]},
        }
        config = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{name}-svc", "namespace": ns, "ownerReferences": [owner_reference(job)]},
            "data": _hosts(job),
        }
        wrote = _create(store, SERVICES, service)
        return _create(store, CONFIGMAPS, config) or wrote

    def on_pod_create(self, pod: Obj, job: Obj, task: Obj, index: int) -> None:
        spec = pod.setdefault("spec", {})
        spec.setdefault("hostname", name_of(pod))
        spec.setdefault("subdomain", name_of(job))
        config = f"{name_of(job)}-svc"
        volumes = spec.setdefault("volumes", [])
        volumes.append({"name": config, "configMap": {"name": config}})
        hosts = _hosts(job)
        for container in _containers(pod):
            container.setdefault("volumeMounts", []).append({"name": config, "mountPath": "/etc/volcano"})
            for key, value in hosts.items():
                if key.startswith("VC_"):
                    _add_env(container, key, value)

    def on_job_delete(self, store: Store, job: Obj) -> bool:
        name, ns = name_of(job), namespace_of(job)
        wrote = _delete(store, SERVICES, ns, name)
        return _delete(store, CONFIGMAPS, ns, f"{name}-svc") or wrote

    def on_job_update(self, store: Store, job: Obj) -> bool:
        """Replicas changed: the host lists follow."""
        ns, name, hosts = namespace_of(job), f"{name_of(job)}-svc", _hosts(job)
        try:
            current = store.get(CONFIGMAPS, ns, name)
        except NotFound:
            return False
        if current.get("data") == hosts:
            return False
        store.update(CONFIGMAPS, {**current, "data": hosts})
        return True


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def placeholder_key_pair(seed: str) -> tuple[str, str]:
    """A deterministic stand-in for an RSA key pair: the ``cryptography`` package is not installed.

    The text has the shape of OpenSSH keys but is NOT a usable key; it lets pods mount the Secret.
    """
    digest = hashlib.sha256(seed.encode()).digest()
    body = base64.b64encode(digest * 8).decode()
    private = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n"
    public = f"ssh-rsa {base64.b64encode(digest * 4).decode()} pumice-placeholder\n"
    return private, public


class SshPlugin:
    """Secret ``<job>-ssh`` (``id_rsa``, ``id_rsa.pub``, ``authorized_keys``, ``config``) at ``/root/.ssh``."""

    name = "ssh"

    def on_job_add(self, store: Store, job: Obj) -> bool:
        name, ns = name_of(job), namespace_of(job)
        private, public = placeholder_key_pair(uid_of(job))
        config = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{name}-ssh", "namespace": ns, "ownerReferences": [owner_reference(job)]},
            "type": "Opaque",
            "data": {"id_rsa": _b64(private), "id_rsa.pub": _b64(public), "authorized_keys": _b64(public),
                     "config": _b64(config)},
        }
        return _create(store, SECRETS, secret)

    def on_pod_create(self, pod: Obj, job: Obj, task: Obj, index: int) -> None:
        spec = pod.setdefault("spec", {})
        secret = f"{name_of(job)}-ssh"
        spec.setdefault("volumes", []).append({"name": secret, "secret": {"secretName": secret, "defaultMode": 0o600}})
        for container in _containers(pod):
            container.setdefault("volumeMounts", []).append({"name": secret, "mountPath": "/root/.ssh"})

    def on_job_delete(self, store: Store, job: Obj) -> bool:
        return _delete(store, SECRETS, namespace_of(job), f"{name_of(job)}-ssh")

    def on_job_update(self, store: Store, job: Obj) -> bool:
        return False


PLUGINS: dict[str, JobPlugin] = {p.name: p for p in (EnvPlugin(), SvcPlugin(), SshPlugin())}


def plugins_of(job: Obj) -> list[JobPlugin]:
    """The implemented plugins the job asks for, in a fixed order."""
    wanted = (job.get("spec") or {}).get("plugins") or {}
    return [PLUGINS[name] for name in sorted(wanted) if name in PLUGINS]
