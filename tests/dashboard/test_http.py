"""The dashboard over HTTP: auth (bearer, ?token= -> cookie), JSON endpoints, ETags, apply, local assets."""

from __future__ import annotations

import http.client
import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pumice.dashboard import COOKIE_NAME, authorized, cookie_value

from .live import TOKEN, Live, start

STATIC = Path(__file__).resolve().parents[2] / "src" / "pumice" / "dashboard" / "static"


def call(live: Live, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None,
         auth: bool = True) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(live.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    hdrs = dict(headers or {})
    if auth:
        hdrs.setdefault("Authorization", f"Bearer {TOKEN}")
    payload = None
    if body is not None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=payload, headers=hdrs)
        res = conn.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


def test_login_with_token_sets_an_httponly_cookie(live: Live) -> None:
    status, _, body = call(live, "GET", "/", auth=False)
    assert status == 401 and b"?token=" in body
    status, _, _ = call(live, "GET", "/?token=wrong", auth=False)
    assert status == 401
    status, headers, _ = call(live, "GET", f"/?token={TOKEN}", auth=False)
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}={cookie_value(TOKEN)}")
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower() and TOKEN not in cookie
    session = {"Cookie": f"{COOKIE_NAME}={cookie_value(TOKEN)}"}
    status, headers, body = call(live, "GET", "/", auth=False, headers=session)
    assert status == 200 and b"/dashboard/static/app.js" in body
    status, _, _ = call(live, "GET", "/dashboard/api/overview", auth=False,
                        headers={"Cookie": f"{COOKIE_NAME}={cookie_value(TOKEN)}"})
    assert status == 200
    status, _, _ = call(live, "GET", "/dashboard/api/overview", auth=False, headers={"Cookie": f"{COOKIE_NAME}=forged"})
    assert status == 401
    status, _, body = call(live, "GET", "/dashboard/api/overview", auth=False)
    assert status == 401 and json.loads(body)["reason"] == "Unauthorized"


@pytest.mark.parametrize("path", ["overview", "jobs", "pods", "podgroups", "queues", "nodes", "topology",
                                  "jobs/default/too-big?kind=PodGroup"])
def test_endpoints_answer_json(live: Live, path: str) -> None:
    status, headers, body = call(live, "GET", f"/dashboard/api/{path}")
    assert status == 200 and headers["content-type"].startswith("application/json")
    out = json.loads(body)
    assert int(out["resourceVersion"]) > 0


def test_unknown_job_is_404(live: Live) -> None:
    status, _, body = call(live, "GET", "/dashboard/api/jobs/default/nope")
    assert status == 404 and json.loads(body)["code"] == 404


def test_etag_gives_304_until_the_store_changes(live: Live) -> None:
    status, headers, _ = call(live, "GET", "/dashboard/api/nodes")
    etag = headers["etag"]
    status, _, body = call(live, "GET", "/dashboard/api/nodes", headers={"If-None-Match": etag})
    if status == 200:  # the cluster wrote something in between: the tag moved on
        assert headers["etag"] != etag
    else:
        assert status == 304 and body == b""
    live.store.patch("nodes", None, "cpu-0", {"metadata": {"labels": {"touched": "yes"}}})
    deadline = time.monotonic() + 5  # an answer may be reused for a second (MIN_INTERVAL) after a change
    while True:
        status, _, body = call(live, "GET", "/dashboard/api/nodes", headers={"If-None-Match": etag})
        if status == 200 and any(n["labels"].get("touched") == "yes" for n in json.loads(body)["items"]):
            break
        assert time.monotonic() < deadline, "the change never showed"
        time.sleep(0.2)


def test_apply_creates_objects_and_reports_errors_on_one_line(live: Live) -> None:
    status, _, body = call(live, "POST", "/dashboard/api/apply", body={"yaml": "kind: [broken"})
    assert status == 400 and "\n" not in json.loads(body)["error"]
    status, _, _ = call(live, "POST", "/dashboard/api/apply", body=b"yaml=x",
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 415  # a cross-site form cannot post a manifest with the cookie
    status, _, _ = call(live, "POST", "/dashboard/api/apply", body={"yaml": "x"}, auth=False)
    assert status == 401
    manifest = ("apiVersion: v1\nkind: Pod\nmetadata: {name: http-pod, annotations: {pumice.io/duration: 5s}}\n"
                "spec: {schedulerName: other, containers: [{name: c, image: x}]}")
    status, _, body = call(live, "POST", "/dashboard/api/apply", body={"yaml": manifest})
    assert status == 201, body
    assert json.loads(body)["created"] == [{"kind": "Pod", "namespace": "default", "name": "http-pod",
                                            "resource": "pods"}]
    status, _, body = call(live, "POST", "/dashboard/api/apply", body={"yaml": manifest})
    assert status == 409 and "already exists" in json.loads(body)["error"]
    _, _, body = call(live, "GET", "/dashboard/api/pods")
    assert "http-pod" in {p["name"] for p in json.loads(body)["items"]}


def test_static_assets_are_local(live: Live) -> None:
    names = sorted(p.name for p in STATIC.iterdir())
    assert {"index.html", "app.js", "style.css"} <= set(names)
    external = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//"""
                          r"""|@import|fetch\(\s*["']https?:""")
    for name in names:
        status, _, body = call(live, "GET", f"/dashboard/static/{name}", auth=False)
        assert status == 200, name
        assert not external.search(body.decode()), f"{name} refers to an external resource"


def test_dashboard_lives_beside_the_api_server(live: Live) -> None:
    if not live.api_mounted:
        pytest.skip("pumice.server.create_app is not available: the dashboard was tested alone")
    status, _, body = call(live, "GET", "/api/v1/namespaces/default/pods")
    assert status == 200 and json.loads(body)["kind"] == "PodList"
    status, _, _ = call(live, "GET", "/api/v1/namespaces/default/pods", auth=False)
    assert status == 401
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "via-api"},
           "spec": {"schedulerName": "other", "containers": [{"name": "c", "image": "x"}]}}
    status, _, body = call(live, "POST", "/api/v1/namespaces/default/pods", body=pod)
    assert status == 201, body
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        _, _, body = call(live, "GET", "/dashboard/api/pods")
        if "via-api" in {p["name"] for p in json.loads(body)["items"]}:
            break
        time.sleep(0.1)
    else:
        pytest.fail("a pod created through the API server does not show on the dashboard")


def test_logout_clears_the_cookie(live: Live) -> None:
    status, headers, _ = call(live, "GET", "/dashboard/logout", auth=False)
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"].lower()
    assert cookie.startswith(f"{COOKIE_NAME}=") and ("max-age=0" in cookie or "expires=" in cookie)


def test_authorized_helper() -> None:
    from starlette.requests import Request

    def request(headers: dict[str, str]) -> Request:
        raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        return Request({"type": "http", "method": "GET", "path": "/", "headers": raw, "query_string": b""})

    assert authorized(request({}), None) and authorized(request({}), "")
    assert not authorized(request({}), "s3cret")
    assert authorized(request({"Authorization": "Bearer s3cret"}), "s3cret")
    assert authorized(request({"Authorization": "bearer s3cret "}), "s3cret")  # read as the API server reads it:
    assert not authorized(request({"Authorization": "bearer  s3cret"}), "s3cret")  # two spaces: an empty token
    assert not authorized(request({"Authorization": "Bearer nope"}), "s3cret")
    assert not authorized(request({"Authorization": "Basic s3cret"}), "s3cret")
    assert authorized(request({"Cookie": f"{COOKIE_NAME}={cookie_value('s3cret')}"}), "s3cret")
    assert not authorized(request({"Cookie": f"{COOKIE_NAME}=s3cret"}), "s3cret")  # the raw token is no cookie


def test_apply_calls_on_change() -> None:
    calls: list[int] = []
    other = start(cluster=False, seed=False, on_change=lambda: calls.append(1))
    try:
        pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}"
        status, _, _ = call(other, "POST", "/dashboard/api/apply", body={"yaml": pod})
        assert status == 201 and calls == [1]
        status, _, _ = call(other, "POST", "/dashboard/api/apply", body={"yaml": "kind: [x"})
        assert status == 400 and calls == [1]
    finally:
        other.stop()
    assert not other.errors
