"""Client errors for people: ``str()`` is one line; ``exit_code`` is what the CLI exits with.

* 1 — the server refused (401/403/404/409/422/...) or could not be reached;
* 2 — bad input on our side (no kubeconfig, unknown resource word, bad flag values).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "ClientError", "ConfigError", "ConnectError", "UnknownResource"]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class ClientError(Exception):
    """Base class: one-line message, exit code."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        self.message = _one_line(message)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class ConfigError(ClientError):
    """No usable kubeconfig, or a kubeconfig that cannot be read."""

    exit_code = 2


class UnknownResource(ClientError):
    """A resource word (``pumice get WORD``) or an ``(apiVersion, kind)`` the server does not serve."""

    exit_code = 2


class ConnectError(ClientError):
    """The server could not be reached: ``cannot reach https://127.0.0.1:6443: connection refused``."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = _one_line(reason)
        super().__init__(f"cannot reach {url}: {self.reason}")


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(ClientError):
    """The server answered with an error ``Status``: its code, reason and message are kept.

    ``str()`` is ``NotFound: jobs.batch.volcano.sh "x" not found`` — the server's own message.
    """

    def __init__(self, code: int, reason: str, message: str, status: dict[str, Any] | None = None) -> None:
        self.code = code
        self.reason = reason or _REASONS.get(code, f"HTTP {code}")
        self.status = status or {}
        super().__init__(f"{self.reason}: {message}" if message else self.reason)
        self.server_message = _one_line(message)

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def conflict(self) -> bool:
        return self.code == 409

    @classmethod
    def from_response(cls, code: int, body: bytes, what: str = "") -> ApiError:
        """Build from an HTTP error answer: a ``Status`` object when the server sent one, else its text."""
        import json

        status: dict[str, Any] | None = None
        try:
            data = json.loads(body.decode("utf-8", "replace")) if body else None
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and (data.get("kind") == "Status" or "message" in data):
            status = data
            message = str(data.get("message") or "")
            reason = str(data.get("reason") or "")
        else:
            text = body.decode("utf-8", "replace").strip() if body else ""
            message = text[:300]
            reason = ""
        if not message:
            message = what or _REASONS.get(code, f"HTTP {code}")
        return cls(code, reason, message, status)
