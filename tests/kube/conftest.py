"""A real kube-apiserver v1.20 (``../shared/tools/kube-1.20``) prepared the way a user prepares a cluster:
``pumice crds | kubectl apply -f -``, with the real kubectl.

One apiserver per test module (modules change the cluster in ways others must not see: webhook
configurations, RBAC). A module sets ``KUBE_FLAGS`` for extra apiserver flags, and ``KUBE_AUTHORIZATION``
for an authorization mode other than start.sh's ``AlwaysAllow`` (``RBAC``: the mode is a list flag, so it
is replaced in a copy of start.sh rather than added). Skipped only when the binaries are not built.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pumice.client import ApiError, KubeClient, load_config
from tests.cli.conftest import HAVE_KUBE120, KUBE120_BIN, KUBE120_TOOLS, _free_ports
from tests.conftest import REPO

KUBECTL = "/usr/bin/kubectl"
#: Flags of every test apiserver: no kubelet or node controller here, so no not-ready taints.
BASE_FLAGS = "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"


@dataclass
class Kube:
    """A running kube-apiserver: its kubeconfig, a client, and kubectl against it."""

    state: Path
    kubeconfig: Path
    client: KubeClient

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), *args], input=input, text=True,
                              capture_output=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def pumice(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``pumice ARGS`` as a user runs it (a separate process)."""
        return subprocess.run([sys.executable, "-m", "pumice.cli.main", *args], text=True, capture_output=True,
                              timeout=60, cwd=REPO)

    def wait_served(self, group_version: str, kinds: set[str], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                doc = self.client.get_json(f"/apis/{group_version}")
                if kinds <= {r.get("kind") for r in doc.get("resources") or []}:
                    return
            except ApiError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{sorted(kinds)} of {group_version} not served after {timeout} s")
            time.sleep(0.2)


def install_crds(kube: Kube) -> None:
    """``pumice crds | kubectl apply -f -``, then wait until every kind is served."""
    printed = kube.pumice("crds")
    assert printed.returncode == 0, printed.stderr
    kube.kubectl("apply", "-f", "-", input=printed.stdout)
    from pumice.api.schema import custom_kinds

    by_group: dict[str, set[str]] = {}
    for model in custom_kinds():
        by_group.setdefault(model.API_VERSION, set()).add(model.KIND)
    for group_version, kinds in by_group.items():
        kube.wait_served(group_version, kinds)


@pytest.fixture(scope="module")
def kube(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    if not HAVE_KUBE120:
        pytest.skip(f"kube-apiserver 1.20 is not built in {KUBE120_BIN} ({KUBE120_TOOLS}/build.sh builds it)")
    if not os.access(KUBECTL, os.X_OK):
        pytest.skip(f"{KUBECTL} is not installed")
    state = tmp_path_factory.mktemp("kube120")
    port, etcd, _ = _free_ports(3)
    flags = f"{BASE_FLAGS} {getattr(request.module, 'KUBE_FLAGS', '')}".strip()
    env = {**os.environ, "APISERVER_FLAGS": flags}
    script = KUBE120_TOOLS / "start.sh"
    mode = getattr(request.module, "KUBE_AUTHORIZATION", None)
    if mode:
        text = script.read_text()
        assert "--authorization-mode=AlwaysAllow" in text, "start.sh no longer sets the authorization mode"
        script = state / "start.sh"
        script.write_text(text.replace("--authorization-mode=AlwaysAllow", f"--authorization-mode={mode}"))
    try:
        proc = subprocess.run(["bash", str(script), str(state), str(port), str(etcd)],
                              capture_output=True, text=True, env=env, timeout=120)
        if proc.returncode != 0:
            pytest.fail(f"kube-apiserver did not start: {proc.stderr.strip()[-2000:]}")
        path = Path(proc.stdout.strip().splitlines()[-1])
        client = KubeClient(load_config(str(path)))
        kube = Kube(state, path, client)
        install_crds(kube)
        yield kube
        client.close()
    finally:
        subprocess.run(["bash", str(KUBE120_TOOLS / "stop.sh"), str(state)], capture_output=True, timeout=60)


# --- the store and pumice run tests: a restartable apiserver (tests/kube/cluster.py) and pumice's own server ---

from .cluster import Kube120  # noqa: E402


@pytest.fixture(scope="module")
def kube120(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube120]:
    """A kube-apiserver v1.20 with Volcano's CRDs that a test can restart, compact and cut off."""
    if not HAVE_KUBE120:
        pytest.skip(f"kube-apiserver 1.20 is not built in {KUBE120_BIN}")
    cluster = Kube120(tmp_path_factory.mktemp("kube120"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def pumice_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pumice's API server over a MemoryStore, HTTPS on loopback (what ``pumice up`` serves); its kubeconfig."""
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
