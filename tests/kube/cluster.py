"""A real kube-apiserver v1.20 + etcd for tests, which a test can restart, compact and cut off.

``Kube120.start()`` runs ``../shared/tools/kube-1.20/start.sh`` on free loopback ports (extra apiserver flags
as ``APISERVER_FLAGS``); ``restart_apiserver()`` kills the apiserver alone and starts it again with the same
command line (etcd, and so every object, stays); ``compact()`` compacts etcd to its current revision (old
resourceVersions then answer ``410 Gone``); ``stop()`` stops both. ``Proxy`` is a TCP relay a test can cut
(every connection closed, new ones refused) and restore, to take a client off the network for a while.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.cli.conftest import HAVE_KUBE120, KUBE120_BIN, KUBE120_TOOLS, _free_ports, install_volcano_crds

__all__ = ["HAVE_KUBE120", "KUBE120_BIN", "Kube120", "Proxy", "free_port"]

BASE_FLAGS = "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Kube120:
    state: Path
    flags: str = ""
    port: int = 0
    etcd_port: int = 0
    kubeconfig: Path = field(default_factory=Path)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self, crds: bool = True) -> Kube120:
        self.port, self.etcd_port, _ = _free_ports(3)
        env = {**os.environ, "APISERVER_FLAGS": f"{BASE_FLAGS} {self.flags}".strip()}
        proc = subprocess.run(["bash", str(KUBE120_TOOLS / "start.sh"), str(self.state), str(self.port),
                               str(self.etcd_port)], capture_output=True, text=True, env=env, timeout=180)
        if proc.returncode != 0:
            self.stop()
            raise RuntimeError(f"kube-apiserver did not start: {proc.stderr.strip()[-2000:]}")
        self.kubeconfig = Path(proc.stdout.strip().splitlines()[-1])
        if crds:
            from pumice.client import KubeClient, load_config

            with KubeClient(load_config(str(self.kubeconfig))) as kc:
                install_volcano_crds(kc)
        return self

    def _pid(self, name: str) -> int | None:
        try:
            return int((self.state / f"{name}.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def restart_apiserver(self, down: float = 0.0) -> None:
        """Kill the apiserver (etcd stays), wait ``down`` seconds, start it again with the same flags."""
        pid = self._pid("apiserver")
        assert pid is not None, "no apiserver running"
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        while Path(f"/proc/{pid}").exists():
            time.sleep(0.05)
        time.sleep(down)
        with open(self.state / "apiserver.log", "ab") as log:
            proc = subprocess.Popen([a.decode() for a in argv], stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        (self.state / "apiserver.pid").write_text(f"{proc.pid}\n")
        self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> None:
        import ssl

        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            request = urllib.request.Request(f"{self.url}/readyz",
                                             headers={"Authorization": "Bearer kube120-test-token"})
            with contextlib.suppress(OSError), urllib.request.urlopen(request, context=context, timeout=2) as resp:
                if resp.status == 200:
                    return
            time.sleep(0.3)
        raise RuntimeError("kube-apiserver not ready after a restart")

    def _etcd(self, path: str, body: dict[str, object]) -> dict[str, object]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.etcd_port}{path}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            return dict(json.loads(resp.read()))

    def compact(self) -> int:
        """Compact etcd up to its current revision; the revision."""
        key = base64.b64encode(b"/").decode()
        header = self._etcd("/v3/kv/range", {"key": key, "limit": 1})["header"]
        revision = int(header["revision"])  # type: ignore[index]
        self._etcd("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def stop(self) -> None:
        subprocess.run(["bash", str(KUBE120_TOOLS / "stop.sh"), str(self.state)], capture_output=True, timeout=60)
        for name in ("apiserver", "etcd"):  # stop.sh forgets a pid file it removed before; be sure
            pid = self._pid(name)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


class Proxy:
    """A TCP relay from a free loopback port to ``target``; ``cut()`` drops everything until ``restore()``;
    ``stall()`` keeps every connection open and forwards nothing (a server that stopped answering)."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = int(self.server.getsockname()[1])
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._cut = False
        self._stalled = threading.Event()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if self._cut:
                client.close()
                continue
            if self._stalled.is_set():  # accepted, never answered
                with self._lock:
                    self._open.add(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                while self._stalled.is_set() and not self._closed:  # held, as a hung server holds a request
                    time.sleep(0.05)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            with self._lock:
                self._open.discard(src)
                self._open.discard(dst)

    def cut(self) -> None:
        self._cut = True
        with self._lock:
            sockets = list(self._open)
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def stall(self) -> None:
        self._stalled.set()

    def restore(self) -> None:
        self._cut = False
        self._stalled.clear()

    def close(self) -> None:
        self._closed = True
        self.cut()
        self.server.close()
