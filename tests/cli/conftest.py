"""Real API servers on loopback for the CLI tests.

* ``pumice``: pumice's own (``pumice.server`` over a MemoryStore), always;
* ``kube-1.20``: a real kube-apiserver v1.20 with Volcano's CRDs (``pumice crds``), when its binaries were built
  (``../shared/tools/kube-1.20/build.sh``) — the same commands must work against a real cluster.

No mocks: the commands run in-process (Typer's CliRunner) and talk HTTP to the server, with a
bearer token from a kubeconfig, exactly as against ``pumice up`` or a Kubernetes cluster.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pumice.api.schema import crds
from pumice.cli.main import app
from pumice.client import ApiError, KubeClient, load_config
from tests.conftest import SHARED

KUBE120_BIN = Path(os.environ.get("KUBE120_HOME", Path.home() / ".cache" / "kube-1.20.2")) / "bin"
KUBE120_TOOLS = SHARED / "tools" / "kube-1.20"
HAVE_KUBE120 = (KUBE120_BIN / "kube-apiserver").is_file() and (KUBE120_TOOLS / "start.sh").is_file()


@dataclass
class Cluster:
    """A running API server: its URL, a kubeconfig for it, and a client."""

    url: str
    kubeconfig: Path
    client: KubeClient
    kind: str = "pumice"

    def run(self, *args: str, input: str | None = None):
        """``pumice ARGS... --kubeconfig K`` in-process; the click Result (exit_code, stdout, stderr)."""
        argv = [*args, "--kubeconfig", str(self.kubeconfig)]
        return CliRunner().invoke(app, argv, input=input, catch_exceptions=False)


@pytest.fixture(scope="module", params=["pumice", "kube-1.20"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if request.param == "pumice":
        yield from _pumice_server(tmp_path_factory)
    else:
        yield from _kube_apiserver(tmp_path_factory)


def _pumice_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from pumice.server import ServerThread, create_app, ensure_certificates, write_kubeconfig
    from pumice.store import MemoryStore

    token = "cli-test-token"
    store = MemoryStore()
    state = tmp_path_factory.mktemp("pumice")
    tls = ensure_certificates(state)  # HTTPS with its own CA, as `pumice up` serves
    server = ServerThread(create_app(store, token=token), tls=tls).start()
    try:
        path = write_kubeconfig(state / "kubeconfig", server.url, token, ca_file=tls.ca)
        kc = KubeClient(load_config(str(path)))
        yield Cluster(server.url, path, kc, "pumice")
        kc.close()
    finally:
        server.stop()
        store.close()


# ---------------------------------------------------------------------------- a real kube-apiserver


def _free_ports(n: int) -> list[int]:
    """``n`` consecutive-free ports: etcd wants PORT and PORT+1."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + n >= 65535:
            continue
        try:
            socks = []
            for p in range(base, base + n):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
        return list(range(base, base + n))
    raise RuntimeError("no free ports")


#: Volcano's CRDs as ``pumice crds`` prints them: the CLI's writes must pass their schemas, as on a user's cluster.
VOLCANO_CRDS = crds()


def install_volcano_crds(kc: KubeClient, timeout: float = 30.0) -> None:
    from pumice.client import Resource

    crds = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
    for crd in VOLCANO_CRDS:
        kc.create(crds, crd)
    deadline = time.monotonic() + timeout
    for crd in VOLCANO_CRDS:
        spec = crd["spec"]
        path = f"/apis/{spec['group']}/{spec['versions'][0]['name']}"
        while True:
            try:
                doc = kc.get_json(path)
                if any(r.get("kind") == spec["names"]["kind"] for r in doc.get("resources") or []):
                    break
            except ApiError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"CRD {crd['metadata']['name']} not served after {timeout} s")
            time.sleep(0.2)


def _kube_apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not HAVE_KUBE120:
        pytest.skip(f"kube-apiserver 1.20 is not built in {KUBE120_BIN} ({KUBE120_TOOLS}/build.sh builds it)")
    state = tmp_path_factory.mktemp("kube120")
    port, etcd, _ = _free_ports(3)
    env = {**os.environ, "APISERVER_FLAGS": "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"}
    try:
        proc = subprocess.run(["bash", str(KUBE120_TOOLS / "start.sh"), str(state), str(port), str(etcd)],
                              capture_output=True, text=True, env=env, timeout=120)
        if proc.returncode != 0:
            pytest.fail(f"kube-apiserver did not start: {proc.stderr.strip()[-2000:]}")
        path = Path(proc.stdout.strip().splitlines()[-1])
        kc = KubeClient(load_config(str(path)))
        install_volcano_crds(kc)
        yield Cluster(kc.server, path, kc, "kube-1.20")
        kc.close()
    finally:
        subprocess.run(["bash", str(KUBE120_TOOLS / "stop.sh"), str(state)], capture_output=True, timeout=60)
