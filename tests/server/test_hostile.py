"""Hostile and careless requests: each is answered with a 4xx ``Status`` at once, on a connection that stays
usable, and leaves the store as it was (issue 15's defects 1-4, each found against ``pumice up``)."""

from __future__ import annotations

import base64
import http.client
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pumice.store import SqliteStore

from .conftest import TOKEN, Api

NS = "/api/v1/namespaces/default"


@dataclass
class Reply:
    status: int
    body: Any
    seconds: float


class Conn:
    """One keep-alive HTTPS connection: a request that breaks it shows as an exception on the next one."""

    def __init__(self, api: Api, timeout: float = 10.0) -> None:
        host, port = api.url.removeprefix("https://").split(":")
        self.conn = http.client.HTTPSConnection(host, int(port), context=api.context, timeout=timeout)

    def send(self, method: str, path: str, body: bytes | str | None = None,
             content_type: str = "application/json", headers: dict[str, str] | None = None) -> Reply:
        data = body.encode() if isinstance(body, str) else body
        sent = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
        if data is not None:
            sent["Content-Type"] = content_type
        started = time.perf_counter()
        self.conn.request(method, path, body=data, headers=sent)
        resp = self.conn.getresponse()
        raw = resp.read()
        try:
            decoded: Any = json.loads(raw)
        except ValueError:
            decoded = raw.decode(errors="replace")
        return Reply(resp.status, decoded, time.perf_counter() - started)

    def still_works(self) -> None:
        reply = self.send("GET", "/api/v1/namespaces")
        assert reply.status == 200, reply

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def conn(api: Api) -> Iterator[Conn]:
    c = Conn(api)
    yield c
    c.close()


@pytest.fixture
def durable(make_api: Callable[..., Api], tmp_path: Path) -> Api:
    """A server over the SQLite store of ``pumice up``."""
    return make_api(SqliteStore(tmp_path / "store.db"))


def _status(reply: Reply, code: int, *words: str) -> None:
    assert reply.status == code, reply
    assert isinstance(reply.body, dict) and reply.body.get("kind") == "Status", reply
    assert reply.body["code"] == code, reply
    message = reply.body.get("message", "")
    for word in words:
        assert word in message, message


def _configmap(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}


# --- defect 1: deep nesting -----------------------------------------------------------------------------------


@pytest.mark.parametrize("opening, closing", [("[", "]"), ('{"a":', "}")], ids=["arrays", "objects"])
def test_deep_nesting_is_400_naming_the_problem(conn: Conn, opening: str, closing: str) -> None:
    body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":' + opening * 5000 + (
        "1" if closing == "}" else "") + closing * 5000 + "}"
    _status(conn.send("POST", f"{NS}/configmaps", body), 400, "nested too deeply")
    conn.still_works()
    for ctype in ("application/merge-patch+json", "application/json-patch+json",
                  "application/strategic-merge-patch+json"):
        _status(conn.send("PATCH", f"{NS}/configmaps/deep", opening * 5000 + closing * 5000, ctype), 400, "nested")
    yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\nx:\n" + "".join(
        "  " * (i + 1) + "-\n" for i in range(500))
    _status(conn.send("POST", f"{NS}/configmaps", yaml_body, "application/yaml"), 400, "nested too deeply")
    conn.still_works()


# --- defect 2: timeoutSeconds --------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "-1", "Infinity", "0x10", "1e3",
                                   "99999999999999999999"])
def test_bad_timeout_seconds_is_400_at_once(conn: Conn, value: str) -> None:
    reply = conn.send("GET", f"{NS}/pods?watch=1&timeoutSeconds={value}")
    _status(reply, 400, "timeoutSeconds")
    assert reply.seconds < 2
    conn.still_works()


@pytest.mark.parametrize("name", ["limit", "gracePeriodSeconds", "sinceSeconds", "tailLines", "limitBytes"])
@pytest.mark.parametrize("value", ["nan", "-1", "1.5", "inf"])
def test_other_numeric_parameters_are_checked(conn: Conn, name: str, value: str) -> None:
    _status(conn.send("GET", f"{NS}/pods?{name}={value}"), 400, name)


def test_good_timeouts_still_work(conn: Conn) -> None:
    for value in ("1", "0.5", "+1"):
        reply = conn.send("GET", f"{NS}/pods?watch=1&timeoutSeconds={value}")
        assert reply.status == 200 and reply.seconds < 3, reply


# --- defect 3: sizes -----------------------------------------------------------------------------------------


def test_a_40_mb_object_is_413_and_not_stored(durable: Api) -> None:
    c = Conn(durable, timeout=60)
    try:
        big = json.dumps(_configmap("big", data={"a": "x" * (40 << 20)}))
        _status(c.send("POST", f"{NS}/configmaps", big), 413, "limit is 3145728")
        c.still_works()  # the body was read and dropped: the connection goes on
        just = json.dumps(_configmap("big", data={"a": "x" * ((3 << 20) + 1)}))
        _status(c.send("POST", f"{NS}/configmaps", just), 413)
        yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: " + "x" * (4 << 20) + "}\n"
        _status(c.send("POST", f"{NS}/configmaps", yaml_body, "application/yaml"), 413)
        _status(c.send("GET", f"{NS}/configmaps/big"), 404)
        ok = json.dumps(_configmap("ok", data={"a": "x" * (2 << 20)}))
        assert c.send("POST", f"{NS}/configmaps", ok).status == 201
    finally:
        c.close()


def test_a_json_patch_that_grows_an_object_past_the_limit_is_refused(durable: Api) -> None:
    c = Conn(durable, timeout=30)
    try:
        assert c.send("POST", f"{NS}/configmaps", json.dumps(_configmap("grow"))).status == 201
        seed = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "x" * 200_000}}]
        copies = [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/a{i}"}
                  for i in range(6)]  # doubles the object six times: 200 KB -> 12.8 MB
        reply = c.send("PATCH", f"{NS}/configmaps/grow", json.dumps(seed + copies), "application/json-patch+json")
        assert reply.status in (413, 422), reply
        assert reply.seconds < 3
        # merge patches that each stay under the body limit cannot add up past the object limit either
        for key in "abc":
            patch = {"data": {key: "y" * (1200 << 10)}}
            reply = c.send("PATCH", f"{NS}/configmaps/grow", json.dumps(patch), "application/merge-patch+json")
        _status(reply, 413, "limit")
        kept = c.send("GET", f"{NS}/configmaps/grow").body
        assert "annotations" not in kept["metadata"] and set(kept["data"]) == {"a", "b"}
        too_many = [{"op": "test", "path": "/kind", "value": "ConfigMap"}] * 10_001
        _status(c.send("PATCH", f"{NS}/configmaps/grow", json.dumps(too_many), "application/json-patch+json"),
                413, "10000")
    finally:
        c.close()


def test_a_json_patch_cannot_deepen_an_object_past_the_nesting_limit(conn: Conn) -> None:
    assert conn.send("POST", f"{NS}/configmaps", json.dumps(_configmap("nest"))).status == 201
    deep: Any = 1
    for _ in range(60):
        deep = {"a": deep}
    add = [{"op": "add", "path": "/x", "value": deep}]
    assert conn.send("PATCH", f"{NS}/configmaps/nest", json.dumps(add), "application/json-patch+json").status == 200
    # copying the subtree into its own depths would double the nesting with a few bytes
    pointer = "/x" + "/a" * 59
    copy = [{"op": "copy", "from": "/x", "path": pointer}]
    reply = conn.send("PATCH", f"{NS}/configmaps/nest", json.dumps(copy), "application/json-patch+json")
    _status(reply, 422, "nest")
    conn.still_works()


# --- defect 4: shapes ----------------------------------------------------------------------------------------


BAD_SHAPES = [
    ("PATCH", "configmaps/cm", '"x"', "application/strategic-merge-patch+json"),
    ("PATCH", "configmaps/cm", '{"metadata": "x"}', "application/strategic-merge-patch+json"),
    ("PATCH", "configmaps/cm", '{"metadata": {"labels": ["x"]}}', "application/strategic-merge-patch+json"),
    ("PATCH", "configmaps/cm", '{"metadata": {"labels": {"a": 1}}}', "application/merge-patch+json"),
    ("PATCH", "configmaps/cm", '{"metadata": {"finalizers": [{"a": 1}]}}', "application/merge-patch+json"),
    ("PATCH", "configmaps/cm", '{"metadata": {"ownerReferences": ["x"]}}', "application/merge-patch+json"),
    ("PATCH", "configmaps/cm", '{"metadata": "x"}', "application/merge-patch+json"),
    ("PATCH", "configmaps/cm", '[1]', "application/json-patch+json"),
    ("PATCH", "configmaps/cm", '[{"op": 1, "path": "/a"}]', "application/json-patch+json"),
    ("PATCH", "configmaps/cm", '{"op": "add"}', "application/json-patch+json"),
    ("PATCH", "configmaps/cm", '[{"op": "add", "path": "/metadata/labels", "value": 5}]',
     "application/json-patch+json"),
    ("DELETE", "configmaps/cm", '"x"', "application/json"),
    ("DELETE", "configmaps/cm", '{"preconditions": "x"}', "application/json"),
    ("DELETE", "configmaps/cm", '{"preconditions": {"uid": 5}}', "application/json"),
    ("DELETE", "configmaps/cm", '{"preconditions": {"resourceVersion": ["1"]}}', "application/json"),
    ("DELETE", "configmaps/cm", '{"gracePeriodSeconds": "x"}', "application/json"),
    ("DELETE", "configmaps/cm", '[', "application/json"),
    ("POST", "pods/p/binding", '{"metadata": "x", "target": {"name": "n"}}', "application/json"),
    ("POST", "pods/p/binding", '{"target": "x"}', "application/json"),
    ("POST", "pods/p/binding", '{"target": {"name": ["n"]}}', "application/json"),
    ("POST", "pods/p/binding", '[]', "application/json"),
    ("POST", "pods/p/binding", '"x"', "application/json"),
    ("PUT", "configmaps/cm", '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ["cm"]}}',
     "application/json"),
    ("PUT", "configmaps/cm", '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": "x"}}',
     "application/json"),
    ("POST", "configmaps", '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "annotations": []}}',
     "application/json"),
    ("POST", "configmaps", '{"apiVersion": "v1", "kind": ["ConfigMap"], "metadata": {"name": "n"}}',
     "application/json"),
    ("POST", "configmaps", '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}}', "text/html"),
    ("POST", "configmaps", '\xff\xfe', "application/yaml"),
    ("POST", "configmaps", '{"a": 1' + "0" * 5000 + "}", "application/json"),
    ("POST", "configmaps", "a: 1" + "0" * 5000, "application/yaml"),
    ("POST", "configmaps", "a: !!python/object:os.system x", "application/yaml"),
    ("POST", "configmaps", "a: &a [*a]", "application/yaml"),
]


@pytest.mark.parametrize("method, path, body, ctype", BAD_SHAPES,
                         ids=[f"{m} {p} {b[:40]}" for m, p, b, _ in BAD_SHAPES])
def test_a_wrong_shape_is_a_4xx_status_never_500(api: Api, conn: Conn, method: str, path: str, body: str,
                                                 ctype: str) -> None:
    api.store.create("configmaps", _configmap("cm", data={"k": "v"}) | {"metadata": {"name": "cm",
                                                                                      "namespace": "default"}})
    api.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}})
    before = api.store.get("configmaps", "default", "cm")
    reply = conn.send(method, f"{NS}/{path}", body, ctype)
    assert 400 <= reply.status < 500, reply
    assert reply.body["kind"] == "Status" and reply.body["code"] == reply.status, reply
    assert "Internal" not in reply.body.get("message", "") and "attribute" not in reply.body.get("message", "")
    conn.still_works()
    assert api.store.get("configmaps", "default", "cm") == before
    assert not api.store.get("pods", "default", "p")["spec"].get("nodeName")


@pytest.mark.parametrize("inside", [b"[" * 5000 + b"]" * 5000, b"[]", b'{"v":"meta.k8s.io/v1","rv":[],"start":1}',
                                    b"\xff\xfe", b'{"v":"meta.k8s.io/v1","rv":"' + b"9" * 5000 + b'","start":""}'],
                         ids=["nested-5000", "a-list", "wrong-types", "not-utf8", "huge-rv"])
def test_a_forged_continue_token_is_400(conn: Conn, inside: bytes) -> None:
    token = base64.urlsafe_b64encode(inside).decode().rstrip("=")
    _status(conn.send("GET", f"{NS}/configmaps?limit=1&continue={token}"), 400, "continue")
    conn.still_works()


def test_a_watch_with_a_selector_survives_objects_with_odd_metadata(api: Api, conn: Conn) -> None:
    # labels of the wrong type never reach the store, so a selecting watch cannot trip over them
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "odd", "labels": ["x"]}})
    _status(conn.send("POST", f"{NS}/configmaps", body), 400, "metadata.labels")
    assert conn.send("GET", f"{NS}/configmaps?labelSelector=a%3Db").status == 200


def test_binding_to_a_node_that_does_not_exist_is_accepted_as_kube_apiserver_does(api: Api, conn: Conn) -> None:
    # kube-apiserver 1.20 answers 201 and sets spec.nodeName (measured): the pod then waits for that node
    api.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}})
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "nowhere"}}
    reply = conn.send("POST", f"{NS}/pods/p/binding", json.dumps(binding))
    assert reply.status == 201, reply
    assert api.store.get("pods", "default", "p")["spec"]["nodeName"] == "nowhere"
    _status(conn.send("POST", f"{NS}/pods/p/binding", json.dumps(binding)), 409)
    _status(conn.send("POST", f"{NS}/pods/missing/binding", json.dumps(binding | {"metadata": {"name": "missing"}})),
            404)


def test_a_yaml_alias_bomb_body_is_400_at_once(conn: Conn) -> None:
    levels = ["a0: &a0 [" + ",".join(["lol"] * 9) + "]"]
    levels += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n" + "\n".join(levels) + "\n"
    reply = conn.send("POST", f"{NS}/configmaps", body, "application/yaml")
    _status(reply, 400, "excessive aliasing")
    assert reply.seconds < 1
    _status(conn.send("GET", f"{NS}/configmaps/bomb"), 404)


def test_the_dashboard_apply_reads_through_the_same_limits(api: Api, conn: Conn) -> None:
    levels = ["a0: &a0 [" + ",".join(["lol"] * 9) + "]"]
    levels += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n" + "\n".join(levels) + "\n"
    reply = conn.send("POST", "/dashboard/api/apply", json.dumps({"yaml": manifest}))
    assert reply.status == 400 and "excessive aliasing" in reply.body["error"], reply
    assert reply.seconds < 1
    reply = conn.send("POST", "/dashboard/api/apply", json.dumps({"yaml": "x" * (2 << 20)}))
    assert reply.status == 413, reply
    conn.still_works()
    deep = '{"yaml": ' + "[" * 5000 + "]" * 5000 + "}"
    assert conn.send("POST", "/dashboard/api/apply", deep).status == 400


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def test_tables_and_watches_of_malformed_objects_stay_answers(api: Api, conn: Conn) -> None:
    # the server keeps what it is given (validation is issue 18's): whatever it keeps, it can print and stream
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "odd"}, "spec": {"containers": [{"name": "c"}]}}
    assert conn.send("POST", f"{NS}/pods", json.dumps(pod)).status == 201
    for status in ([1], "x", {"phase": ["x"]}, {"containerStatuses": "x"}, {"conditions": [5]}):
        patched = conn.send("PATCH", f"{NS}/pods/odd/status", json.dumps({"status": status}),
                            "application/merge-patch+json")
        assert patched.status == 200, patched
        listed = conn.send("GET", f"{NS}/pods", headers={"Accept": TABLE})
        assert listed.status == 200 and listed.body["kind"] == "Table", listed
        assert [r["cells"][0] for r in listed.body["rows"]] == ["odd"]
        watched = conn.send("GET", f"{NS}/pods?watch=1&timeoutSeconds=0.2", headers={"Accept": TABLE})
        assert watched.status == 200, watched
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"conditions": "x", "addresses": 5, "allocatable": ["x"]}}
    assert conn.send("POST", "/api/v1/nodes", json.dumps(node)).status == 201
    assert conn.send("GET", "/api/v1/nodes", headers={"Accept": TABLE}).status == 200
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": "x", "count": "x"}
    assert conn.send("POST", f"{NS}/events", json.dumps(event)).status == 201
    assert conn.send("GET", f"{NS}/events", headers={"Accept": TABLE}).status == 200
    conn.still_works()


def test_a_watch_that_fails_ends_with_an_error_event_and_its_final_chunk() -> None:
    import asyncio

    from pumice.server.watch import stream_events
    from pumice.store import MemoryStore

    store = MemoryStore()
    store.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a",
                                                                                      "namespace": "default"}})
    watcher = store.watch("configmaps")

    def encode(event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("cannot encode")

    async def read() -> list[bytes]:
        stream = stream_events(watcher, encode=encode, timeout=5, bookmark_interval=None,
                               bookmark_object=lambda v: {}, current_version=lambda: store.resource_version)
        return [chunk async for chunk in stream]

    chunks = asyncio.run(read())  # the generator finishes: the server sends the final chunk
    last = json.loads(chunks[-1])
    assert last["type"] == "ERROR" and last["object"]["code"] == 500, last
    assert "cannot encode" in last["object"]["message"]
    assert watcher.closed


def test_updates_of_volcano_kinds_are_decoded_before_the_webhook_rules_read_them(
        make_api: Callable[..., Api]) -> None:
    from pumice.admission import admitted_memory_store

    api = make_api(admitted_memory_store())
    c = Conn(api)
    queues = "/apis/scheduling.volcano.sh/v1beta1/queues"
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
             "spec": {"weight": 1}}
    try:
        assert c.send("POST", queues, json.dumps(queue)).status == 201
        for patch in ({"spec": {"capability": -10 ** 300}}, {"spec": {"capability": {"cpu": ["1"]}}},
                      {"spec": {"guarantee": "x"}}, {"spec": {"parent": 5}}, {"spec": "x"}):
            reply = c.send("PATCH", f"{queues}/q", json.dumps(patch), "application/merge-patch+json")
            assert reply.status in (400, 422), (patch, reply)
        c.still_works()
    finally:
        c.close()
