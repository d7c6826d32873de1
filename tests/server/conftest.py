"""Fixtures: a real uvicorn API server over a store, on a free loopback port, with TLS and a token."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pumice.server import ServerThread, TlsFiles, create_app, ensure_certificates, write_kubeconfig
from pumice.store import BaseStore, MemoryStore

TOKEN = "test-token-0123456789"
KUBECTL = shutil.which("kubectl")


@dataclass
class Api:
    """A running server and ways to talk to it (HTTP with the token, or the real kubectl)."""

    url: str
    store: BaseStore
    server: ServerThread
    ca: Path
    kubeconfig: Path
    cache: Path
    context: ssl.SSLContext = field(repr=False)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        accept: str | None = None,
        token: str | None = TOKEN,
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if accept:
            req.add_header("Accept", accept)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=10) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw = err.read()
            status = err.code
        text = raw.decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def watch(self, path: str, timeout: float = 10.0) -> Iterator[dict[str, Any]]:
        """Stream a watch: one decoded event per line until the server ends it."""
        req = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, context=self.context, timeout=timeout) as resp:
            for line in resp:
                if line.strip():
                    yield json.loads(line)

    def kubectl(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        if KUBECTL is None:
            pytest.skip("kubectl is not installed on this machine")
        cmd = [KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return ensure_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def make_api(tmp_path: Path, tls_files: TlsFiles) -> Iterator[Callable[..., Api]]:
    """Start servers (each on a free 127.0.0.1 port); all are stopped, and their stores closed, afterwards."""
    started: list[Api] = []

    def factory(store: BaseStore | None = None, **app_kwargs: Any) -> Api:
        store = store if store is not None else MemoryStore()
        app = create_app(store, token=TOKEN, **app_kwargs)
        server = ServerThread(app, tls=tls_files).start()
        directory = tmp_path / f"api-{len(started)}"
        directory.mkdir()
        kubeconfig = write_kubeconfig(directory / "kubeconfig", server.url, TOKEN, ca_file=tls_files.ca)
        api = Api(server.url, store, server, tls_files.ca, kubeconfig, directory / "cache",
                  ssl.create_default_context(cafile=str(tls_files.ca)))
        started.append(api)
        return api

    yield factory
    for api in started:
        api.server.stop()
        api.store.close()


@pytest.fixture
def api(make_api: Callable[..., Api]) -> Api:
    return make_api()
