"""Reaching a member through its kubeconfig: the ``Cluster``'s ``spec.kubeconfig`` (a file, or a key of a
Secret on the host) read by the Kubernetes store (``pumice.store.kube``), as ``pumice run`` reaches a cluster.

A member that does not answer fails fast (``GET /version`` first), so a probe of a dead member costs one
refused connection, not a minute of retries.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from pumice.store import Store, StoreError

from .members import Connection

__all__ = ["EmbeddedOrKube", "MemberConfigError", "kube_connection", "kubeconfig_of"]

Obj = dict[str, Any]
#: Retry budget of a member's writes: within a probe period, so a dead member is noticed in time.
RETRY_DEADLINE = 5.0


class MemberConfigError(StoreError):
    """The Cluster's kubeconfig cannot be used (the message names the Cluster and the field)."""

    code = 400
    reason = "BadRequest"


def kubeconfig_of(name: str, cluster: Obj, host: Store) -> tuple[str, str | None, Callable[[], None]]:
    """(kubeconfig path, context, cleanup) for the member ``name``; a Secret's kubeconfig goes to a private file."""
    source = (cluster.get("spec") or {}).get("kubeconfig") or {}
    context = source.get("context")
    ref = source.get("secretRef") or {}
    path = source.get("file")
    if bool(ref) == bool(path):
        raise MemberConfigError(f"Cluster {name}: spec.kubeconfig needs exactly one of file and secretRef")
    if path:
        if not os.path.isfile(path):
            raise MemberConfigError(f"Cluster {name}: spec.kubeconfig.file: no such file {path}")
        return str(path), context, lambda: None
    namespace, secret, key = ref.get("namespace"), ref.get("name"), ref.get("key") or "kubeconfig"
    try:
        obj = host.get("secrets", str(namespace), str(secret))
    except StoreError as err:
        raise MemberConfigError(f"Cluster {name}: spec.kubeconfig.secretRef: {err.message}") from None
    data = (obj.get("data") or {}).get(key)
    text = (obj.get("stringData") or {}).get(key)
    if data is None and text is None:
        raise MemberConfigError(f"Cluster {name}: Secret {namespace}/{secret} has no key {key!r}")
    try:
        raw = base64.b64decode(data) if data is not None else str(text).encode()
    except ValueError:
        raise MemberConfigError(f"Cluster {name}: Secret {namespace}/{secret} key {key!r} is not base64") from None
    folder = tempfile.mkdtemp(prefix=f"pumice-member-{name}-")
    file = os.path.join(folder, "kubeconfig")
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(raw)
    return file, context, lambda: shutil.rmtree(folder, ignore_errors=True)


def kube_connection(name: str, cluster: Obj, host: Store) -> Connection:
    """Connect to a member's API server through the Kubernetes store."""
    try:
        from pumice.store.kube import KubeStore, from_kubeconfig  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise MemberConfigError(
            f"Cluster {name}: reaching a member through its kubeconfig needs the Kubernetes store "
            "(pumice.store.kube), which this build does not have") from None
    path, context, cleanup = kubeconfig_of(name, cluster, host)
    try:
        store = KubeStore(from_kubeconfig(path, context), retry_deadline=RETRY_DEADLINE)
    except BaseException:
        cleanup()
        raise
    try:
        version = store.check()
    except BaseException:
        store.close()
        cleanup()
        raise

    def close() -> None:
        with contextlib.suppress(Exception):
            store.close()
        cleanup()

    return Connection(store, str(version), close)


class EmbeddedOrKube:
    """Members run in this process (``pumice up --federation --members``) reached directly, the others through
    their kubeconfig."""

    def __init__(self, embedded: Mapping[str, Store] | None = None) -> None:
        self.embedded = dict(embedded or {})

    def __call__(self, name: str, cluster: Obj, host: Store) -> Connection:
        store = self.embedded.get(name)
        if store is not None:
            return Connection(store, "pumice (embedded member)")
        return kube_connection(name, cluster, host)
