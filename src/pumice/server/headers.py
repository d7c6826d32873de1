"""Headers on every answer of the server (API and dashboard alike)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SECURITY_HEADERS", "SecurityHeaders"]

#: On every answer: no page of this server tells another site where it came from (the dashboard's sign-in URL
#: carries the token), and no answer is read as another type than it says. No CORS header is ever sent, so a
#: page of another origin cannot read any answer, nor send anything but a simple request (which the API
#: refuses without the bearer token, and the dashboard without its SameSite=Strict cookie).
SECURITY_HEADERS = ((b"referrer-policy", b"no-referrer"), (b"x-content-type-options", b"nosniff"))


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state = getattr(app, "state", None)  # the wrapped app's (``state.api``)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                message["headers"] = headers + [h for h in SECURITY_HEADERS if h[0] not in present]
            await send(message)

        await self.app(scope, receive, with_headers)
