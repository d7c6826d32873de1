"""Who may see the dashboard: the API server's bearer token, or a cookie obtained with it once.

A browser cannot send ``Authorization: Bearer`` headers by itself, so ``/?token=<token>`` sets an
HttpOnly, SameSite=Strict cookie and redirects to ``/``. The cookie holds a digest of the token, not the
token, so it is no use outside this server. :func:`authorized` accepts either; the API server can use it
for its own routes too.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.requests import HTTPConnection

__all__ = ["COOKIE_NAME", "authorized", "cookie_value"]

COOKIE_NAME = "pumice-dashboard"


def cookie_value(token: str) -> str:
    """What the session cookie holds for ``token``."""
    return hashlib.sha256(b"pumice-dashboard\0" + token.encode()).hexdigest()


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def bearer(request: HTTPConnection) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if any (read as the API server reads it)."""
    from pumice.server.auth import bearer_token

    token = bearer_token(request.headers.get("authorization", "").encode())
    return None if token is None else token.decode("utf-8", "replace")


def authorized(request: HTTPConnection, token: str | None) -> bool:
    """True when ``token`` is ``None``/empty (no auth), or the request carries it as a bearer or our cookie."""
    if not token:
        return True
    given = bearer(request)
    if given is not None and _same(given, token):
        return True
    cookie = request.cookies.get(COOKIE_NAME)
    return cookie is not None and _same(cookie, cookie_value(token))
