"""Fixtures of the Kubernetes tests: a real kube-apiserver v1.20 with Volcano's CRDs, and pumice's own API server
(what ``pumice up`` serves) on loopback, each reached through a ``KubeStore``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .cluster import HAVE_KUBE120, KUBE120_BIN, Kube120

NEEDS_KUBE120 = pytest.mark.skipif(not HAVE_KUBE120, reason=f"kube-apiserver 1.20 is not built in {KUBE120_BIN}")


@pytest.fixture(scope="module")
def kube120(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube120]:
    if not HAVE_KUBE120:
        pytest.skip(f"kube-apiserver 1.20 is not built in {KUBE120_BIN}")
    cluster = Kube120(tmp_path_factory.mktemp("kube120"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def pumice_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pumice's API server over a MemoryStore, HTTPS on loopback; its kubeconfig."""
    from pumice.server import ServerThread, create_app, ensure_certificates, write_kubeconfig
    from pumice.store import MemoryStore

    store = MemoryStore()
    state = tmp_path_factory.mktemp("pumice")
    tls = ensure_certificates(state)
    server = ServerThread(create_app(store, token="contract-token"), tls=tls).start()
    try:
        yield write_kubeconfig(state / "kubeconfig", server.url, "contract-token", ca_file=tls.ca)
    finally:
        server.stop()
        store.close()
