"""The web dashboard: Volcano's dashboard pages (overview, jobs, queues, pods, PodGroups) plus nodes and the
HyperNode topology, as a single-page app served with its own JSON endpoints from the API server.

Mount it in the server's Starlette app with ``routes=[*dashboard.routes(store, token), ...api routes]``;
``authorized(request, token)`` accepts the bearer token or the dashboard's session cookie.
"""

from .app import ApplyError, apply_manifest, create_app, routes
from .auth import COOKIE_NAME, authorized, cookie_value
from .mirror import StoreMirror

__all__ = [
    "COOKIE_NAME",
    "ApplyError",
    "StoreMirror",
    "apply_manifest",
    "authorized",
    "cookie_value",
    "create_app",
    "routes",
]
