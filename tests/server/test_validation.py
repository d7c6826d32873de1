"""Objects refused at the door as kube-apiserver refuses them (issue 18), over real HTTPS on loopback.

The server runs over a store guarded as ``pumice up``'s is (Kubernetes' validation, Volcano's webhooks,
namespaces that must exist). Each finding of the issue is a test: accepted with 201 before, refused now with the
code and the causes kube-apiserver 1.20 answers.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import pytest

from pumice.controllers import ensure_default_queues
from pumice.runtime import default_objects, load_admission
from pumice.server import ConnectionLimits, ServerThread, create_app
from pumice.store import MemoryStore

from .conftest import TOKEN, Api

PODS = "/api/v1/namespaces/default/pods"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


def guarded_store() -> MemoryStore:
    admission = load_admission(cluster=True)
    store = MemoryStore(admission=admission)
    admission.attach(store)
    default_objects(store)
    ensure_default_queues(store)
    return store


@pytest.fixture
def guarded(make_api: Callable[..., Api]) -> Api:
    return make_api(guarded_store())


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    body = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


def causes(body: dict[str, Any]) -> dict[str, str]:
    return {c["field"]: c["message"] for c in body["details"]["causes"]}


def test_invalid_pod_is_refused_422_naming_every_bad_field(guarded: Api) -> None:
    body = pod("Bad Name!")
    body["metadata"]["labels"] = {"a b": "x"}
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "-4"}}
    code, status = guarded.request("POST", PODS, body)
    assert code == 422 and status["reason"] == "Invalid" and status["kind"] == "Status"
    assert status["details"]["kind"] == "Pod" and status["details"]["name"] == "Bad Name!"
    bad = causes(status)
    assert set(bad) == {"metadata.name", "metadata.labels", "spec.containers[0].resources.requests[cpu]"}
    assert bad["metadata.name"].startswith('Invalid value: "Bad Name!": a lowercase RFC 1123 subdomain')
    assert bad["spec.containers[0].resources.requests[cpu]"] == \
        'Invalid value: "-4": must be greater than or equal to 0'
    assert status["message"].startswith('Pod "Bad Name!" is invalid: [metadata.name: Invalid value:')
    assert guarded.store.list("pods")[0] == []


def test_node_with_negative_capacity_is_refused(guarded: Api) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "-8"}, "allocatable": {"cpu": "-8"}}}
    code, status = guarded.request("POST", "/api/v1/nodes", node)
    assert code == 422
    assert causes(status)["status.capacity.cpu"] == 'Invalid value: "-8": must be greater than or equal to 0'
    node["status"] = {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}
    assert guarded.request("POST", "/api/v1/nodes", node)[0] == 201
    code, status = guarded.request("PATCH", "/api/v1/nodes/n1/status", {"status": {"allocatable": {"cpu": "-1"}}},
                                   content_type="application/merge-patch+json")
    assert code == 422 and "status.allocatable.cpu" in causes(status)


@pytest.mark.parametrize(("label", "spec", "expected"), [
    ("cpu lots", {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}]},
     "spec.containers[0].resources.requests[cpu]: quantities must match the regular expression"),
    ("spec a string", "x", "spec: readObjectStart"),
    ("priority a string", {"containers": [{"name": "c", "image": "x"}], "priority": "high"}, "spec.priority"),
    ("terms a string", {"containers": [{"name": "c", "image": "x"}], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}}},
     "nodeSelectorTerms: decode slice"),
])
def test_undecodable_pod_is_refused_400(guarded: Api, label: str, spec: Any, expected: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    code, status = guarded.request("POST", PODS, body)
    assert code == 400 and status["reason"] == "BadRequest", label
    assert status["message"].startswith('Pod in version "v1" cannot be handled as a Pod: ')
    assert expected in status["message"]


def test_volcano_kinds_are_checked_by_their_crd_schema_then_by_volcanos_webhooks(guarded: Api) -> None:
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "Bad_1"},
             "spec": {"minMember": "x", "queue": 5}}
    code, status = guarded.request("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", group)
    assert code == 422 and status["details"]["group"] == "scheduling.volcano.sh"
    assert status["message"].startswith('PodGroup.scheduling.volcano.sh "Bad_1" is invalid: ')
    assert causes(status)["spec.minMember"] == ('Invalid value: "string": spec.minMember in body must be of type '
                                                'integer: "string"')
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"queue": "nope", "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
               "containers": [{"name": "c", "image": "x"}]}}}]}}
    code, status = guarded.request("POST", JOBS, job)
    assert code == 400
    assert status["message"].startswith('admission webhook "validatejob.volcano.sh" denied the request: ')
    assert 'queue "nope" does not exist' in status["message"]


def test_objects_need_an_existing_namespace_not_being_deleted(guarded: Api) -> None:
    code, status = guarded.request("POST", "/api/v1/namespaces/nowhere/pods", pod())
    assert (code, status["message"]) == (404, 'namespaces "nowhere" not found')
    assert guarded.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "going", "finalizers": ["example.com/hold"]}})[0] == 201
    assert guarded.request("DELETE", "/api/v1/namespaces/going")[0] == 200
    code, status = guarded.request("POST", "/api/v1/namespaces/going/pods", pod())
    assert code == 403 and "because it is being terminated" in status["message"]


def test_dry_run_admits_and_validates_but_stores_nothing(guarded: Api) -> None:
    code, created = guarded.request("POST", f"{PODS}?dryRun=All", pod("dry"))
    assert code == 201 and created["metadata"]["name"] == "dry" and created["metadata"]["uid"]
    assert guarded.store.list("pods")[0] == []
    assert guarded.request("POST", f"{PODS}?dryRun=All", pod("Bad Name!"))[0] == 422  # validation runs on a dry run
    assert guarded.request("POST", f"{PODS}?dryRun=Sometimes", pod("dry"))[0] == 400
    assert guarded.request("POST", PODS, pod("real"))[0] == 201
    before = guarded.store.get("pods", "default", "real")
    code, patched = guarded.request("PATCH", f"{PODS}/real?dryRun=All", {"metadata": {"labels": {"a": "b"}}},
                                    content_type="application/merge-patch+json")
    assert code == 200 and patched["metadata"]["labels"] == {"a": "b"}
    code, replaced = guarded.request("PUT", f"{PODS}/real?dryRun=All", {**before, "metadata": {
        **before["metadata"], "annotations": {"x": "y"}}})
    assert code == 200 and replaced["metadata"]["annotations"] == {"x": "y"}
    code, _ = guarded.request("DELETE", f"{PODS}/real?dryRun=All")
    assert code == 200
    assert guarded.store.get("pods", "default", "real") == before  # unchanged, same resourceVersion


def test_access_reviews_answer_for_the_single_admin_user(guarded: Api) -> None:
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}}}
    code, answer = guarded.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    assert code == 201 and answer["status"]["allowed"] is True
    assert answer["spec"] == review["spec"]
    code, rules = guarded.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}})
    assert code == 201 and rules["status"]["resourceRules"][0]["verbs"] == ["*"]
    groups = {g["name"] for g in guarded.request("GET", "/apis")[1]["groups"]}
    assert "authorization.k8s.io" in groups
    assert guarded.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review,
                           token=None)[0] == 401


@pytest.mark.parametrize(("header", "code"), [
    (f"Bearer {TOKEN}", 200), (f"bearer {TOKEN}", 200), (f"BEARER {TOKEN}", 200), (f"Bearer {TOKEN} extra", 200),
    (f"Bearer  {TOKEN}", 401), ("Bearer", 401), (f"Basic {TOKEN}", 401), (TOKEN, 401),
])
def test_the_bearer_scheme_is_case_insensitive(api: Api, header: str, code: int) -> None:
    """RFC 7235: the scheme is case-insensitive; the token is the next space-separated part (kube-apiserver's
    reading: an empty one is no token)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(api.url + "/api/v1/namespaces/default/pods", headers={"Authorization": header})
    try:
        with urllib.request.urlopen(request, context=api.context, timeout=10) as resp:
            answer = resp.status
    except urllib.error.HTTPError as err:
        answer = err.code
    assert answer == code


def test_openapi_has_a_schema_for_every_served_kind(guarded: Api) -> None:
    index = guarded.request("GET", "/openapi/v3")[1]["paths"]
    for key in index:
        doc = guarded.request("GET", f"/openapi/v3/{key}")[1]
        kinds = {(g["group"], g["version"], g["kind"]) for s in doc["components"]["schemas"].values()
                 for g in s.get("x-kubernetes-group-version-kind", [])}
        resources = guarded.request("GET", f"/{key}")[1]["resources"]
        for r in resources:
            if "/" in r["name"]:
                continue
            group, _, version = key.removeprefix("apis/").removeprefix("api/").rpartition("/")
            assert (group, version, r["kind"]) in kinds, (key, r["kind"])
    jobs = guarded.request("GET", "/openapi/v3/apis/batch.volcano.sh/v1alpha1")[1]["components"]["schemas"]
    spec = jobs["sh.volcano.batch.v1alpha1.Job"]["properties"]["spec"]
    assert spec["properties"]["minAvailable"] == {"type": "integer", "minimum": 0}
    v2 = guarded.request("GET", "/openapi/v2")[1]["definitions"]
    containers = v2["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name" and containers["items"] == {
        "$ref": "#/definitions/io.k8s.api.core.v1.Container"}


def test_a_crd_whose_schema_has_nulls_does_not_break_the_server(guarded: Api) -> None:
    """A schema with ``properties: null`` (and other null keywords) is a schema without them, as kube-apiserver
    decodes it (it creates such a CRD): the published OpenAPI and every later request keep working. Found by a
    sweep of the differential test: after such a CRD every request that rebuilt the API index answered 500."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gadgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "description": None, "properties": {
                            "spec": {"type": "object", "properties": None}}}}}]}}
    code, _ = guarded.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 201
    time.sleep(0.2)
    assert guarded.request("GET", "/openapi/v2")[0] == 200
    assert guarded.request("GET", "/openapi/v3/apis/example.com/v1")[0] == 200
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 3}}
    assert guarded.request("POST", "/apis/example.com/v1/namespaces/default/gadgets", gadget)[0] == 201
    assert guarded.request("POST", QUEUES, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                            "metadata": {"name": "after"}, "spec": {"weight": 1}})[0] == 201


# ---------------------------------------------------------------------------- connections


def _limited(tls_files: Any, limits: ConnectionLimits) -> ServerThread:
    return ServerThread(create_app(MemoryStore(), token=TOKEN), tls=tls_files, limits=limits).start()


def _tls_socket(server: ServerThread, ca: Any) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(ca))
    raw = socket.create_connection((server.host, server.port), timeout=10)
    return context.wrap_socket(raw, server_hostname=server.host)


def _read_all(sock: ssl.SSLSocket) -> bytes:
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ssl.SSLError, OSError):
            break
        if not chunk:
            break
        out += chunk
    return out


def test_a_client_that_stops_halfway_through_a_request_is_cut_off(tls_files: Any) -> None:
    """Issue 18: half a request line kept a connection open for good (still open after 45 s). Now the client
    gets a 408 and the connection is closed after the header timeout; a watch, once its request is in, is not."""
    server = _limited(tls_files, ConnectionLimits(header_timeout=1.0, idle_timeout=1.0, max_connections=50))
    try:
        sock = _tls_socket(server, tls_files.ca)
        sock.sendall(b"GET /api/v1/pods HT")
        start = time.monotonic()
        answer = _read_all(sock)
        assert answer.startswith(b"HTTP/1.1 408") and time.monotonic() - start < 5
        silent = _tls_socket(server, tls_files.ca)
        assert _read_all(silent).startswith(b"HTTP/1.1 408")
        kept = _tls_socket(server, tls_files.ca)
        kept.sendall(f"GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
        start = time.monotonic()
        answer = _read_all(kept)  # served, then closed once idle for the idle timeout
        assert answer.startswith(b"HTTP/1.1 200") and 0.5 < time.monotonic() - start < 5
        watch = _tls_socket(server, tls_files.ca)
        watch.sendall(f"GET /api/v1/pods?watch=1&timeoutSeconds=3 HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
        start = time.monotonic()
        answer = _read_all(watch)
        assert answer.startswith(b"HTTP/1.1 200") and time.monotonic() - start > 2.5  # lasted its own timeout
    finally:
        server.stop()


def test_past_the_connection_cap_a_client_gets_503_at_once(tls_files: Any) -> None:
    server = _limited(tls_files, ConnectionLimits(header_timeout=30.0, idle_timeout=30.0, max_connections=4))
    held = [_tls_socket(server, tls_files.ca) for _ in range(4)]
    try:
        time.sleep(0.2)
        extra = _tls_socket(server, tls_files.ca)
        start = time.monotonic()
        answer = _read_all(extra)
        assert answer.startswith(b"HTTP/1.1 503") and time.monotonic() - start < 2
        status = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert status["reason"] == "ServiceUnavailable" and status["code"] == 503
        for sock in held:
            sock.close()
        time.sleep(0.3)
        again = _tls_socket(server, tls_files.ca)
        again.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _read_all(again).startswith(b"HTTP/1.1 200")
    finally:
        server.stop()
