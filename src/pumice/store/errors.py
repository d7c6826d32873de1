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
    "Denied",
    "Forbidden",
    "Gone",
    "Invalid",
    "NotFound",
    "StoreClosed",
    "StoreError",
    "TooLarge",
    "error_from_status",
]


class StoreError(Exception):
    """Base of all store failures: ``code`` is the HTTP status, ``reason`` the Kubernetes reason."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: ``Status.details`` (the object's name and kind, and for ``Invalid`` the ``causes``: every bad field)
        self.details = details

    def to_status(self) -> dict[str, Any]:
        """The Kubernetes ``Status`` object an API server would answer with."""
        status: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details:
            status["details"] = self.details
        status["code"] = self.code
        return status


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


class Denied(Invalid):
    """An admission webhook refused the write: kube-apiserver answers such refusals 400, with the webhook's name.

    A kind of ``Invalid`` (the object was refused), answered as a real cluster answers a refusal of Volcano's
    webhooks: ``admission webhook "validatejob.volcano.sh" denied the request: ...``.
    """

    code = 400
    reason = "BadRequest"

    def __init__(self, webhook: str, message: str) -> None:
        super().__init__(f'admission webhook "{webhook}" denied the request: {message}')
        self.webhook = webhook
        self.refusal = message


class Forbidden(StoreError):
    """The write is not allowed here: a namespace being deleted, a priority set by hand."""

    code = 403
    reason = "Forbidden"


class StoreClosed(StoreError):
    """The store has been closed."""

    code = 503
    reason = "ServiceUnavailable"


_BY_REASON: dict[str, type[StoreError]] = {
    cls.reason: cls for cls in (BadRequest, NotFound, AlreadyExists, Conflict, Gone, Invalid, Forbidden, StoreClosed)
}
_BY_CODE: dict[int, type[StoreError]] = {400: BadRequest, 403: Forbidden, 404: NotFound, 409: Conflict, 410: Gone,
                                         422: Invalid, 503: StoreClosed}


def error_from_status(status: dict[str, Any], code: int | None = None) -> StoreError:
    """The store error of a Kubernetes failure ``Status`` (its reason, else its code; message and details kept).
    A failure of no known kind is a ``StoreError`` (500)."""
    reason = str(status.get("reason") or "")
    number = code if code is not None else status.get("code")
    cls = _BY_REASON.get(reason)
    if cls is None or (reason == "BadRequest" and number != 400):
        cls = _BY_CODE.get(number if isinstance(number, int) else 0, StoreError)
    return cls(str(status.get("message") or ""), details=status.get("details"))
