"""The ``ssh`` plugin: a key pair per job in the Secret ``<job>-ssh``, mounted in every container.

The Secret holds ``id_rsa`` (an RSA 2048 key, PKCS#1 PEM, generated with ``cryptography`` as Volcano
generates it with Go's ``crypto/rsa``), ``id_rsa.pub`` and ``authorized_keys`` (the OpenSSH public key)
and ``config``: no host key checking, then per replica ``Host <host>`` / ``HostName <host>.<subdomain>`` /
``Port <port>``. ``--ssh-private-key`` / ``--ssh-public-key`` are stored unchanged instead of a generated
pair, ``--ssh-key-file-path`` moves the mount (from ``/root/.ssh``; files then 0644 instead of 0600) and
``--ssh-port`` sets the port in ``config`` (out of 1..65535: 22, with a warning).

The private key exists only in the Secret: it is never logged, nor put into an event or a status.
"""

from __future__ import annotations

import base64
from typing import Any

from pumice.store import NotFound, Store

from ..names import SECRETS, name_of, namespace_of
from .base import JobPlugin, Obj, containers, create, delete, init_containers, owner_reference, tasks
from .flags import Flag

__all__ = [
    "DEFAULT_PORT",
    "KEY_FILE_PATH",
    "SshPlugin",
    "generate_key_pair",
    "ssh_config",
]

KEY_FILE_PATH = "/root/.ssh"
DEFAULT_PORT = 22
KEY_BITS = 2048
_RELATIVE_PATH = ".ssh"
_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")


def generate_key_pair(bits: int = KEY_BITS) -> tuple[str, str]:
    """A fresh RSA key pair: (PKCS#1 PEM private key, ``ssh-rsa ...`` public key line)."""
    # imported here: ~10 MB and a noticeable import time that a cluster without ssh jobs need not pay
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode() + "\n"


def ssh_config(job: Obj, port: int) -> str:
    """``generateSSHConfig``: no host key checking, then one entry per replica (one per fixed ``hostname``)."""
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in tasks(job):
        spec = (task.get("template") or {}).get("spec") or {}
        for index in range(int(task.get("replicas") or 0)):
            host = spec.get("hostname") or f"{name_of(job)}-{task.get('name')}-{index}"
            lines += [f"Host {host}", f"  HostName {host}.{spec.get('subdomain') or name_of(job)}", f"  Port {port}"]
            if spec.get("hostname"):
                break
    return "\n".join(lines) + "\n"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class SshPlugin(JobPlugin):
    name = "ssh"
    FLAGS = (
        Flag("ssh-key-file-path", "string", KEY_FILE_PATH),
        Flag("ssh-private-key", "string", ""),
        Flag("ssh-public-key", "string", ""),
        Flag("ssh-port", "int", DEFAULT_PORT),
    )

    def configure(self, values: dict[str, Any]) -> None:
        self.key_file_path = str(values["ssh-key-file-path"])
        self.private_key = str(values["ssh-private-key"])
        self.public_key = str(values["ssh-public-key"])
        self.port = int(values["ssh-port"])
        self.port_warning: str | None = None
        if not 0 < self.port <= 65535:
            self.port_warning = f"invalid ssh port {self.port}, falling back to default port {DEFAULT_PORT}"
            self.port = DEFAULT_PORT

    def warnings(self) -> list[str]:
        return [*super().warnings(), *([self.port_warning] if self.port_warning else [])]

    @staticmethod
    def secret_name(job: Obj) -> str:
        return f"{name_of(job)}-ssh"

    def on_job_add(self, store: Store, job: Obj) -> bool:
        if self.private_key:
            private, public = self.private_key, self.public_key
        else:
            private, public = generate_key_pair()
        data = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public,
                "config": ssh_config(job, self.port)}
        encoded = {k: _b64(v) for k, v in data.items()}
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": self.secret_name(job), "namespace": namespace_of(job),
                         "ownerReferences": [owner_reference(job)]},
            "type": "Opaque",
            "data": encoded,
        }
        if create(store, SECRETS, secret):
            return True
        # ``CreateOrUpdateSecret`` on an existing Secret: its ``config`` brought up to date, its keys kept (written
        # without reading it: the controllers need no right to read Secrets)
        try:
            patch = {"data": {"config": encoded["config"]}}
            store.patch(SECRETS, namespace_of(job), self.secret_name(job), patch)
        except NotFound:
            return False
        return True

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        secret = self.secret_name(job)
        mode = 0o600 if self.key_file_path == KEY_FILE_PATH else 0o644
        items = [{"key": f, "path": f"{_RELATIVE_PATH}/{f}"} for f in _FILES]
        volume = {"name": secret, "secret": {"secretName": secret, "items": items, "defaultMode": mode}}
        pod.setdefault("spec", {}).setdefault("volumes", []).append(volume)
        for container in [*containers(pod), *init_containers(pod)]:
            container.setdefault("volumeMounts", []).append(
                {"name": secret, "mountPath": self.key_file_path, "subPath": _RELATIVE_PATH})

    def on_job_delete(self, store: Store, job: Obj) -> bool:
        return delete(store, SECRETS, namespace_of(job), self.secret_name(job))
