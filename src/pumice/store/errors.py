"""Store errors, shaped like Kubernetes ``Status`` failures.

Each error carries the HTTP status ``code`` and the Kubernetes ``reason`` so that a server can turn it into
a ``Status`` object unchanged, and so that the same ``except`` clauses work against the embedded store and a
real API server.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Gone",
    "Invalid",
    "NotFound",
    "StoreClosed",
    "StoreError",
    "TooLarge",
]


class StoreError(Exception):
    """Base of all store failures: ``code`` is the HTTP status, ``reason`` the Kubernetes reason."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_status(self) -> dict[str, Any]:
        """The Kubernetes ``Status`` object an API server would answer with."""
        return {
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


class BadRequest(StoreError):
    """Malformed request: bad selector, bad patch, non-JSON value, unknown subresource."""

    code = 400
    reason = "BadRequest"


class NotFound(StoreError):
    """The object (or the resource type) does not exist."""

    code = 404
    reason = "NotFound"


class AlreadyExists(StoreError):
    """An object with this namespace/name exists already."""

    code = 409
    reason = "AlreadyExists"


class Conflict(StoreError):
    """Optimistic concurrency failed (stale resourceVersion, uid mismatch) or the pod is already bound."""

    code = 409
    reason = "Conflict"


class Gone(StoreError):
    """A watch asked for a resourceVersion that has been compacted out of the event history."""

    code = 410
    reason = "Expired"


class Invalid(StoreError):
    """The object was refused: admission or validation said no (the message says why)."""

    code = 422
    reason = "Invalid"


class TooLarge(StoreError):
    """The request or the object it would store is larger than allowed (HTTP 413, as kube-apiserver's)."""

    code = 413
    reason = "RequestEntityTooLarge"


class StoreClosed(StoreError):
    """The store has been closed."""

    code = 503
    reason = "ServiceUnavailable"
