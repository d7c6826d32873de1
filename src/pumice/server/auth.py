"""Bearer-token authentication, the token file and the kubeconfig that carries it.

The token is generated once (``DIR/token``, mode 0600) and reused on every start, so a kubeconfig written
earlier keeps working. Health endpoints are open, as on a Kubernetes API server.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "OPEN_PATHS",
    "BearerTokenAuth",
    "bearer_token",
    "load_or_create_token",
    "unauthorized_status",
    "write_kubeconfig",
]

OPEN_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def load_or_create_token(data_dir: str | os.PathLike[str]) -> str:
    """The token in ``DIR/token``, created (random, 256 bits) the first time."""
    path = Path(data_dir) / "token"
    if path.exists():
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token
    token = secrets.token_urlsafe(32)
    _write_private(path, token + "\n")
    return token


def write_kubeconfig(
    path: str | os.PathLike[str],
    server: str,
    token: str,
    *,
    ca_file: str | os.PathLike[str] | None = None,
    name: str = "pumice",
) -> Path:
    """A kubeconfig (JSON is valid YAML) for ``server`` with ``token``, trusting ``ca_file``; returns its path.

    kubectl sends the token only to an ``https://`` server.
    """
    cluster: dict[str, Any] = {"server": server}
    if ca_file is not None:
        cluster["certificate-authority-data"] = base64.b64encode(Path(ca_file).read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": f"{name}-admin", "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin", "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }
    out = Path(path)
    _write_private(out, json.dumps(config, indent=2) + "\n")
    return out


def unauthorized_status() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def bearer_token(header: bytes) -> bytes | None:
    """The token of an ``Authorization`` header value, as kube-apiserver reads it: the scheme is
    case-insensitive (RFC 7235), the token is the next space-separated part, and must not be empty."""
    parts = header.strip().split(b" ", 2)
    if len(parts) < 2 or parts[0].lower() != b"bearer" or not parts[1]:
        return None
    return parts[1]


class BearerTokenAuth:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <token>`` (except ``OPEN_PATHS``)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = b""
        for key, value in scope.get("headers") or ():
            if key == b"authorization":
                given = value
                break
        token = bearer_token(given) if given else None
        if token is not None and hmac.compare_digest(token, self._expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps(unauthorized_status()).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
