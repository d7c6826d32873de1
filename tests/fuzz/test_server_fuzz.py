"""Fuzz a real ``pumice up`` on loopback with every served resource and verb: valid-ish objects with random
mutations, random patch documents, content types, query parameters and paths.

Every request must be answered (no dropped connection, no broken chunked stream), below 500, within a time
bound; 4xx answers of the API are ``Status`` objects. Meanwhile background watches must each end cleanly.
Afterwards the server's memory is bounded, its control plane never failed a step (poisoned objects are
skipped, not fatal), and the store is consistent: every resource's list equals its list at the start with
the watch replay of every event since applied.

``PUMICE_FUZZ_EXAMPLES`` (default 400 examples of 3 to 10 requests: about 2,500 requests, a minute or so)
sets the size of a run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from . import strategies as S
from .harness import Answer, Client, Dropped, Up, WatchChecker, running_up

EXAMPLES = int(os.environ.get("PUMICE_FUZZ_EXAMPLES", "400"))
#: The longest any answer may take (the machine is shared: generous, but a hang is minutes).
TIME_BOUND = 15.0
WATCH_TIMEOUT = 0.3
RSS_BOUND_MB = 1024


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    with running_up(tmp_path_factory.mktemp("fuzz") / "state") as server:
        yield server


class Run:
    """What a fuzz run found: requests made, answers by class, failures."""

    def __init__(self) -> None:
        self.requests = 0
        self.by_class: dict[str, int] = {}
        self.failures: list[str] = []

    def note(self, answer: Answer) -> None:
        self.requests += 1
        key = f"{answer.status // 100}xx"
        self.by_class[key] = self.by_class.get(key, 0) + 1


RUN = Run()


def _fail(message: str) -> None:
    RUN.failures.append(message)  # the first one is the one to read: a replay may fail differently
    raise AssertionError(message)


def _check(answer: Answer, what: str, *, api: bool, bound: float = TIME_BOUND) -> None:
    RUN.note(answer)
    if answer.status >= 500:
        _fail(f"{what}: HTTP {answer.status}: {answer.body[:500]!r}")
    if answer.seconds >= bound:
        _fail(f"{what}: took {answer.seconds:.1f} s")
    if api and answer.status >= 400:
        body = answer.json()
        if not (isinstance(body, dict) and body.get("kind") == "Status" and body.get("code") == answer.status):
            _fail(f"{what}: a {answer.status} that is not a Status: {answer.body[:300]!r}")


def _send(client: Client, method: str, path: str, body: bytes | None = None, content_type: str | None = None,
          accept: str | None = None, *, api: bool = True, bound: float = TIME_BOUND) -> Answer:
    headers = {}
    if content_type is not None and body is not None:
        headers["Content-Type"] = content_type
    if accept:
        headers["Accept"] = accept
    what = f"{method} {path} [{content_type}] {(body or b'')[:300]!r}"
    try:
        answer = client.request(method, path, body, headers)
    except Dropped as exc:
        _fail(f"dropped connection: {what}: {exc}")
        raise
    _check(answer, what, api=api and method != "HEAD", bound=bound)  # HEAD: headers only
    return answer


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, bytes | None, str | None, str | None, float]:
    """One request: (method, path, body, content type, accept, time bound)."""
    kind = draw(st.sampled_from(S.KINDS))
    namespace = draw(st.sampled_from(S.NAMESPACES) | st.text(max_size=6)) if kind.namespaced else None
    base = kind.base(namespace)
    name = draw(S.names)
    item = f"{base}/{quote(name, safe='') or '%20'}"
    op = draw(st.sampled_from(["create", "create", "create", "get", "list", "list", "watch", "update", "patch",
                               "patch", "patch", "status", "delete", "deletecollection", "binding", "odd"]))
    reads = op in ("get", "list", "watch")  # tables and metadata of whatever the store holds: half of the reads
    accept = draw(st.sampled_from(S.ACCEPTS)) if draw(st.integers(0, 1 if reads else 3)) == 0 else None
    query = draw(S.queries()) if draw(st.integers(0, 2)) == 0 else {}
    bound = TIME_BOUND

    def with_query(path: str) -> str:
        return f"{path}?{urlencode(query)}" if query else path

    def body_for(value: Any, content_type: str) -> bytes:
        return draw(S.encoded(value, content_type))

    target = kind.template(name)
    if op == "create":
        ctype = draw(st.sampled_from(S.CONTENT_TYPES[:6])) if draw(st.integers(0, 4)) else draw(
            st.sampled_from(S.CONTENT_TYPES))
        obj = draw(S.objects(kind, name, namespace))
        return "POST", with_query(base), body_for(obj, ctype), ctype, accept, bound
    if op == "get":
        return "GET", with_query(item), None, None, accept, bound
    if op == "list":
        query.pop("watch", None)
        return "GET", with_query(base), None, None, accept, bound
    if op == "watch":
        query["watch"] = "1"
        if query.get("timeoutSeconds") in (None, "0", "", "9223372036854775807", "2", "1.5"):
            query["timeoutSeconds"] = str(WATCH_TIMEOUT)  # a valid one: short; invalid ones are answered at once
        return "GET", with_query(base), None, None, accept, 3 + TIME_BOUND
    if op == "update":
        obj = draw(S.objects(kind, name, namespace))
        ctype = draw(st.sampled_from(["application/json", "application/yaml", "application/json"]))
        return "PUT", with_query(item), body_for(obj, ctype), ctype, accept, bound
    if op in ("patch", "status"):
        ctype = draw(st.sampled_from(S.PATCH_TYPES) | st.sampled_from(S.CONTENT_TYPES))
        if "json-patch" in ctype:
            patch = draw(S.json_patches(target))
        elif "strategic" in ctype:
            patch = draw(S.strategic_patches(target))
        else:
            patch = draw(S.merge_patches(target))
        path = item + "/status" if op == "status" else item
        if op == "status" and draw(st.booleans()):
            return "PUT", with_query(path), body_for(draw(S.objects(kind, name, namespace)), "application/json"), \
                "application/json", accept, bound
        return "PATCH", with_query(path), body_for(patch, ctype), ctype, accept, bound
    if op == "delete":
        options = draw(st.none() | S.mutated({"kind": "DeleteOptions", "apiVersion": "v1",
                                              "gracePeriodSeconds": 0, "propagationPolicy": "Background",
                                              "preconditions": {"uid": "u", "resourceVersion": "1"}}))
        body = None if options is None else body_for(options, "application/json")
        return "DELETE", with_query(item), body, "application/json" if body else None, accept, bound
    if op == "deletecollection":
        query.setdefault("labelSelector", "app=fuzz")
        return "DELETE", with_query(base), None, None, accept, bound
    if op == "binding":
        binding = draw(S.mutated({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                  "target": {"apiVersion": "v1", "kind": "Node",
                                             "name": draw(st.sampled_from(["node-a", "nowhere", ""]))}}))
        pods = S.KINDS[0].base(namespace or "default")
        return "POST", f"{pods}/{quote(name, safe='') or 'x'}/binding", body_for(binding, "application/json"), \
            "application/json", accept, bound
    # odd paths and methods
    path = draw(st.sampled_from([
        "/api", "/apis", "/api/v1", "/apis/batch.volcano.sh", "/apis/batch.volcano.sh/v1alpha1", "/version",
        "/openapi/v2", "/openapi/v3", "/openapi/v3/apis/x/v1", "/apis/nope/v1/things", "/api/v1/namespaces//pods",
        "/api/v1/namespaces/default/pods/a/b/c", f"{item}/exec", f"{item}/log", "/api/v1/pods/x",
        f"/api/v1/namespaces/default/pods/{quote(name, safe='') or 'x'}/log?{urlencode(draw(S.queries()))}",
        "/api/v1/namespaces/default/nodes", "/%2e%2e/etc/passwd", "/api/v1/namespaces/default/pods/%00",
        "/healthz", "/readyz?verbose", f"{base}/" + "a" * 2000]))
    method = draw(st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]))
    body = draw(st.none() | st.binary(max_size=32))
    return method, path, body, "application/json" if body is not None else None, accept, bound


DASHBOARD = ("overview", "jobs", "pods", "podgroups", "queues", "nodes", "topology", "jobs/default/a",
             "jobs/default/a?kind=PodGroup", "jobs/x/y?kind=Nope")


@st.composite
def dashboard_requests(draw: st.DrawFn) -> tuple[str, str, bytes | None, str | None]:
    if draw(st.integers(0, 2)):
        if not draw(st.integers(0, 9)):  # the metrics, computed from the same objects
            return "GET", "/metrics", None, None
        return "GET", "/dashboard/api/" + draw(st.sampled_from(DASHBOARD)), None, None
    kind = draw(st.sampled_from(S.KINDS))
    docs = [draw(S.objects(kind, draw(S.names), "default")) for _ in range(draw(st.integers(1, 3)))]
    try:
        manifest = "---\n".join(S.yaml.safe_dump(d, allow_unicode=True) for d in docs)
    except S.yaml.YAMLError:
        manifest = "a: ["
    payload: Any = {"yaml": manifest} if draw(st.integers(0, 5)) else draw(S.json_values)
    return "POST", "/dashboard/api/apply", json.dumps(payload).encode("utf-8", "surrogatepass"), "application/json"


def _lists(client: Client) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every resource listed cluster-wide: its resourceVersion and objects by namespace/name."""
    out = {}
    for kind in S.KINDS:
        answer = _send(client, "GET", kind.base(None))
        assert answer.status == 200, answer
        body = answer.json()
        items = {f"{(o['metadata'].get('namespace') or '')}/{o['metadata']['name']}": o for o in body["items"]}
        out[kind.base(None)] = (body["metadata"]["resourceVersion"], items)
    return out


def test_fuzz_the_api_server(up: Up) -> None:
    client = up.client()
    rss_start = up.rss_mb()
    before = _lists(client)
    watches = WatchChecker(up, ("/api/v1/pods", "/api/v1/configmaps", "/apis/batch.volcano.sh/v1alpha1/jobs")).start()
    started = time.monotonic()

    @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.lists(requests(), min_size=3, max_size=10), st.lists(dashboard_requests(), max_size=1))
    def fuzz(batch: list[Any], dashboard: list[Any]) -> None:
        for method, path, body, ctype, accept, bound in batch:
            _send(client, method, path, body, ctype, accept, api=True, bound=bound)
        for method, path, body, ctype in dashboard:
            _send(client, method, path, body, ctype, api=False)

    try:
        fuzz()
    except AssertionError:
        raise AssertionError("the first failures:\n" + "\n".join(RUN.failures[:3])) from None
    finally:
        watches.stop()
    elapsed = time.monotonic() - started
    rss_end = up.rss_mb()
    after = _lists(client)

    # the store is consistent: the list at the start + a watch replay of everything since = the list now
    mismatches = []
    for kind in S.KINDS:
        version, items = before[kind.base(None)]
        final_version, final = after[kind.base(None)]
        answer = _send(client, "GET", f"{kind.base(None)}?watch=1&resourceVersion={version}&timeoutSeconds=0.3",
                       bound=TIME_BOUND + 5)
        replayed = dict(items)
        for line in answer.body.splitlines():
            event = json.loads(line)
            assert event["type"] != "ERROR", f"{kind.base(None)}: the watch replay failed: {event}"
            obj = event["object"]
            if int(obj["metadata"]["resourceVersion"]) > int(final_version):
                continue
            key = f"{obj['metadata'].get('namespace') or ''}/{obj['metadata']['name']}"
            if event["type"] == "DELETED":
                replayed.pop(key, None)
            else:
                replayed[key] = obj
        if replayed != final:
            differ = sorted(k for k in replayed.keys() | final.keys() if replayed.get(k) != final.get(k))
            mismatches.append(f"{kind.base(None)}: {differ[:5]}")
    client.close()
    log = up.log.read_text(errors="replace")
    summary = {"requests": RUN.requests, "seconds": round(elapsed, 1), "answers": RUN.by_class,
               "watch_streams": watches.streams, "watch_events": watches.events,
               "rss_mb": [round(rss_start), round(rss_end)]}
    print(f"fuzz: {json.dumps(summary)}")
    if os.environ.get("PUMICE_FUZZ_REPORT"):
        Path(os.environ["PUMICE_FUZZ_REPORT"]).write_text(json.dumps(summary) + "\n")
    assert not watches.failures, watches.failures[:5]
    assert not mismatches, mismatches
    assert rss_end < RSS_BOUND_MB, f"the server grew to {rss_end:.0f} MB (from {rss_start:.0f} MB)"
    assert "Traceback" not in log and "step failed" not in log, log[-5000:]
    assert RUN.requests >= 3 * EXAMPLES
