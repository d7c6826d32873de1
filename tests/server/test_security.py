"""Security defaults of ``pumice up``: a private data directory, no token in any log, loopback unless told
otherwise (with a warning), and answers that neither leak the dashboard's token nor let another origin in."""

from __future__ import annotations

import json
import os
import ssl
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

from pumice.cli.up import ControlPlane, exposure_warning, read_pid_file
from pumice.server import ensure_certificates, free_port

from .conftest import TOKEN, Api


def pumice(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pumice.cli.main", *args], capture_output=True, text=True,
                          timeout=90, check=False, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _modes(directory: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir() if p.is_file()}


def test_data_directory_is_private_and_the_token_is_in_no_log(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    up = pumice("up", "--data-dir", str(directory), "--port", str(free_port()), "--background")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        token = (directory / "token").read_text().strip()
        info = read_pid_file(directory)
        assert info is not None
        # write something, so that the store and its journal exist
        request = urllib.request.Request(f"{info['url']}/api/v1/namespaces", method="POST",
                                         data=json.dumps({"metadata": {"name": "team"}}).encode(),
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Content-Type": "application/json"})
        context = ssl.create_default_context(cafile=str(directory / "ca.crt"))
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            assert resp.status == 201
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        modes = _modes(directory)
        for name in ("store.db", "token", "kubeconfig", "server.key", "server.crt", "ca.crt", "pumice.log",
                     "pumice.pid", "clock"):
            assert modes.get(name) == 0o600, (name, oct(modes.get(name, 0)), {k: oct(v) for k, v in modes.items()})
        assert all(mode & 0o077 == 0 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}
        # the token is in the token file and the kubeconfig, nowhere else (no log, no store)
        for path in directory.iterdir():
            if path.is_file() and path.name not in ("token", "kubeconfig"):
                assert token.encode() not in path.read_bytes(), path.name
        assert token not in up.stdout + up.stderr
    finally:
        pumice("down", "--data-dir", str(directory))


def test_an_old_data_directory_is_made_private(tmp_path: Path) -> None:
    directory = tmp_path / "old"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    for name in ("store.db", "clock", "ca.crt", "server.crt"):
        (directory / name).touch()
        (directory / name).chmod(0o644)
    (directory / "store.db").unlink()  # an empty file is not a store: keep only the others
    with ControlPlane(directory, port=free_port()):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        modes = _modes(directory)
        assert all(mode & 0o077 == 0 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}


def test_loopback_by_default_and_a_warning_when_told_otherwise(tmp_path: Path) -> None:
    with ControlPlane(tmp_path / "a", port=free_port()) as plane:
        sockets = plane._parts.server.server.servers[0].sockets  # type: ignore[union-attr]
        assert {s.getsockname()[0] for s in sockets} == {"127.0.0.1"}
    # told otherwise (tests never listen beyond loopback: 192.0.2.1 is a documentation address, the bind fails
    # after the warning was given)
    directory = tmp_path / "b"
    up = pumice("up", "--data-dir", str(directory), "--port", str(free_port()), "--bind-address", "192.0.2.1")
    assert up.returncode != 0
    assert "warning: the API server listens on 192.0.2.1" in up.stderr, up.stderr
    assert exposure_warning("127.0.0.2") is None and exposure_warning("::1") is None
    assert exposure_warning("localhost") is None
    assert exposure_warning("0.0.0.0") is not None and exposure_warning("::") is not None
    # a wildcard address is reached on the loopback: that is what the kubeconfig names
    assert ControlPlane(tmp_path / "d", port=6443, host="0.0.0.0").url == "https://127.0.0.1:6443"


def test_no_cors_and_no_referrer(api: Api) -> None:
    for method, path, headers in (
        ("OPTIONS", "/api/v1/namespaces/default/pods", {"Access-Control-Request-Method": "POST",
                                                        "Access-Control-Request-Headers": "authorization"}),
        ("GET", "/api/v1/namespaces", {"Authorization": f"Bearer {TOKEN}"}),
        ("POST", "/dashboard/api/apply", {"Content-Type": "text/plain"}),
        ("GET", "/", {}),
    ):
        req = urllib.request.Request(api.url + path, method=method,
                                     headers={"Origin": "https://evil.example", **headers},
                                     data=b"x" if method == "POST" else None)
        try:
            with urllib.request.urlopen(req, context=api.context, timeout=10) as resp:
                got = resp.headers
        except urllib.error.HTTPError as err:
            got = err.headers
        assert not [h for h in got if h.lower().startswith("access-control-")], (method, path, dict(got))
        assert got.get("Referrer-Policy") == "no-referrer", (method, path, dict(got))


def test_the_login_url_drops_the_token(api: Api) -> None:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect, urllib.request.HTTPSHandler(context=api.context))
    try:
        opener.open(f"{api.url}/?token={TOKEN}", timeout=10)
        raise AssertionError("expected a redirect")
    except urllib.error.HTTPError as err:
        assert err.code == 303
        assert err.headers["Location"] == "/"  # the token leaves the address bar and the history
        assert err.headers["Referrer-Policy"] == "no-referrer"
        cookie = err.headers["Set-Cookie"]
        assert TOKEN not in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")


def test_a_certificate_directory_of_its_own_is_private(tmp_path: Path) -> None:
    """``pumice admission serve --cert-dir`` / ``pumice run``: the webhook server's key is its own to read."""
    files = ensure_certificates(tmp_path / "certs" / "webhook")
    assert stat.S_IMODE((tmp_path / "certs" / "webhook").stat().st_mode) == 0o700
    assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
