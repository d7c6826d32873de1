"""The webhook server over real HTTPS on loopback: AdmissionReviews in, Volcano's answers out.

Other objects are read from a real store (a ``MemoryStore``), or through pumice's own API server with
:class:`~pumice.webhooks.ApiReader`; the real kube-apiserver calling the webhooks is ``tests/kube``.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pumice.admission import default_object
from pumice.api.resources import QUEUES
from pumice.cli.main import app
from pumice.client import KubeClient, load_config
from pumice.controllers import ensure_default_queues
from pumice.server import ServerThread, ensure_certificates
from pumice.store import MemoryStore, NotFound
from pumice.store.patch import apply_json_patch
from pumice.webhooks import (
    WEBHOOKS,
    AdmissionServer,
    ApiReader,
    Endpoint,
    configurations,
    create_app,
    enabled_webhooks,
    json_patch,
)
from pumice.webhooks.app import MAX_REQUEST_BODY
from tests.builders import queue

Obj = dict[str, Any]


class Webhooks:
    """The app served over HTTPS, and a way to post AdmissionReviews to it."""

    def __init__(self, url: str, ca: Path, store: MemoryStore) -> None:
        self.url, self.store = url, store
        self.context = ssl.create_default_context(cafile=str(ca))

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
        request = urllib.request.Request(self.url + path, data=body, method="POST",
                                         headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def oversized(self, path: str) -> int:
        """Announce a body past the limit: answered at once, before any of it is read."""
        url = urllib.parse.urlsplit(self.url)
        conn = http.client.HTTPSConnection(url.hostname or "", url.port, context=self.context, timeout=10)
        try:
            conn.putrequest("POST", path)
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(MAX_REQUEST_BODY + 1))
            conn.endheaders()
            return conn.getresponse().status
        finally:
            conn.close()

    def review(self, path: str, operation: str, obj: Obj | None, old: Obj | None = None, *,
               version: str = "v1", namespace: str = "default", name: str = "") -> Obj:
        request = {"uid": "uid-1", "operation": operation, "namespace": namespace, "name": name,
                   "resource": {"group": "x", "version": "v", "resource": path.split("/")[1]},
                   "object": obj, "oldObject": old}
        body = json.dumps({"apiVersion": f"admission.k8s.io/{version}", "kind": "AdmissionReview",
                           "request": request}).encode()
        status, answer = self.post(path, body)
        assert status == 200, answer
        doc = json.loads(answer)
        assert doc["apiVersion"] == f"admission.k8s.io/{version}" and doc["kind"] == "AdmissionReview"
        assert doc["response"]["uid"] == "uid-1"
        return doc["response"]


@pytest.fixture
def webhooks(tmp_path: Path) -> Iterator[Webhooks]:
    store = MemoryStore()
    ensure_default_queues(store)
    tls = ensure_certificates(tmp_path / "tls")
    server = ServerThread(create_app(store), tls=tls).start()
    try:
        yield Webhooks(server.url, tls.ca, store)
    finally:
        server.stop()
        store.close()


def _job(**spec: Any) -> Obj:
    tasks = spec.pop("tasks", [{"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}}}])
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "default"}, "spec": {"tasks": tasks, **spec}}


def _patched(obj: Obj, response: Obj) -> Obj:
    assert response["allowed"] is True
    if "patch" not in response:
        return obj
    assert response["patchType"] == "JSONPatch"
    return apply_json_patch(copy.deepcopy(obj), json.loads(base64.b64decode(response["patch"])))


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_mutating_answers_are_the_embedded_defaults_as_a_json_patch(webhooks: Webhooks, version: str) -> None:
    job = _job(plugins={"pytorch": []})
    out = _patched(job, webhooks.review("/jobs/mutate", "CREATE", job, version=version))
    assert out == default_object(job)
    assert out["spec"]["tasks"][0]["minAvailable"] == 2 and out["spec"]["plugins"] == {"pytorch": [], "svc": []}
    q = queue("q", weight=0)
    out = _patched(q, webhooks.review("/queues/mutate", "CREATE", q, version=version))
    assert out["spec"] == {"weight": 1, "reclaimable": True}
    assert "status" not in out  # the state is the queue controller's, not the webhook's


def test_a_complete_object_gets_no_patch(webhooks: Webhooks) -> None:
    job = default_object(_job())
    response = webhooks.review("/jobs/mutate", "CREATE", job)
    assert response == {"allowed": True, "uid": "uid-1"}


def test_refusals_carry_the_rules_message(webhooks: Webhooks) -> None:
    response = webhooks.review("/jobs/validate", "CREATE", default_object(_job(queue="nope")))
    assert response["allowed"] is False
    assert response["status"] == {"message": 'job "default/j" is invalid: unable to find job queue: queue "nope" '
                                             "does not exist"}
    response = webhooks.review("/queues/validate", "DELETE", None, queue("default"), name="default")
    assert response["status"]["message"] == 'queue "default" cannot be deleted: it is a built-in queue'
    # An API server that sends no oldObject with a DELETE: the queue is read by name.
    webhooks.store.create(QUEUES, queue("parent"))
    webhooks.store.create(QUEUES, queue("kid", parent="parent"))
    response = webhooks.review("/queues/validate", "DELETE", None, None, name="parent")
    assert "it has 1 child queues: kid" in response["status"]["message"]
    assert webhooks.review("/queues/validate", "DELETE", None, None, name="kid")["allowed"] is True


def test_updates_and_operations_a_webhook_is_not_for(webhooks: Webhooks) -> None:
    old = default_object(_job())
    new = copy.deepcopy(old)
    new["spec"]["queue"] = "elsewhere"
    response = webhooks.review("/jobs/validate", "UPDATE", new, old)
    assert "job updates may only change minAvailable" in response["status"]["message"]
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["replicas"] = 3
    assert webhooks.review("/jobs/validate", "UPDATE", new, old)["allowed"] is True
    # Jobs are defaulted on UPDATE too (not Volcano's, issue #2238): the manifest as first applied, without the
    # defaults, becomes the stored job again, so the update rule sees no change.
    undefaulted = _job()
    assert _patched(undefaulted, webhooks.review("/jobs/mutate", "UPDATE", undefaulted, old))["spec"] == \
        default_object(_job())["spec"]
    # Other kinds are mutated on CREATE only (as Volcano's): anything else passes untouched.
    assert webhooks.review("/queues/mutate", "UPDATE", old, old) == {"allowed": True, "uid": "uid-1"}


def test_podgroup_queue_from_the_namespace_annotation(webhooks: Webhooks) -> None:
    webhooks.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "team", "annotations": {"scheduling.volcano.sh/queue-name": "team-queue"}}})
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "pg", "namespace": "team"}, "spec": {"minMember": 1}}
    out = _patched(pg, webhooks.review("/podgroups/mutate", "CREATE", pg, namespace="team"))
    assert out["spec"]["queue"] == "team-queue"
    out = _patched(pg, webhooks.review("/podgroups/mutate", "CREATE", pg, namespace="default"))
    assert out["spec"]["queue"] == "default"
    named = {**pg, "spec": {"minMember": 1, "queue": "mine"}}
    assert _patched(named, webhooks.review("/podgroups/mutate", "CREATE", named, namespace="team")) == named


def test_malformed_requests(webhooks: Webhooks) -> None:
    assert webhooks.post("/jobs/validate", b"{}", content_type="text/plain")[0] == 415
    assert webhooks.post("/jobs/validate", b"not json")[0] == 400
    assert webhooks.post("/jobs/validate", json.dumps({"kind": "AdmissionReview",
                                                       "apiVersion": "admission.k8s.io/v2"}).encode())[0] == 400
    assert webhooks.oversized("/jobs/validate") == 413
    # An object that does not fit its model is refused with the first schema error, in one line.
    response = webhooks.review("/jobs/mutate", "CREATE", _job(minAvailable="three"))
    assert response["allowed"] is False and "spec.minAvailable" in response["status"]["message"]
    with urllib.request.urlopen(webhooks.url + "/healthz", context=webhooks.context, timeout=10) as resp:
        assert resp.read() == b"ok"


@pytest.mark.parametrize("body", [
    b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":' + b"[" * 5000 + b"]" * 5000 + b"}",
    json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                "request": {"uid": "u", "operation": "CREATE", "resource": "jobs", "object": _job()}}).encode(),
    json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"uid": "u"}}
               ).encode().replace(b"}}", b"}}" + b" " * 10),
    b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","x":NaN}}',
], ids=["nested-5000", "resource-a-string", "no-object", "nan"])
def test_hostile_reviews_are_answered_never_500(webhooks: Webhooks, body: bytes) -> None:
    """What kube-apiserver would never send, a careless or hostile client may: a 4xx or an answer, never a 500."""
    status, answer = webhooks.post("/jobs/validate", body)
    assert status in (200, 400), (status, answer[:200])
    if status == 400:
        assert len(answer.splitlines()) == 1, answer


# -- JSON patches


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet="ab/~c", max_size=3), inner,
                                                                max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_json_patch_turns_one_document_into_the_other(old: Any, new: Any) -> None:
    assert apply_json_patch(copy.deepcopy(old), json_patch(old, new)) == new
    assert json_patch(new, new) == []


# -- configurations, enabled webhooks, reading through an API server


def test_the_configurations_are_volcanos() -> None:
    endpoint = Endpoint.service("pumice-system", "pumice-admission-service")
    configs = configurations(enabled_webhooks(), endpoint, b"CA")
    assert [c["metadata"]["name"] for c in configs] == [
        "pumice-admission-jobs-mutate", "pumice-admission-jobs-validate", "pumice-admission-podgroups-validate",
        "pumice-admission-queues-mutate", "pumice-admission-queues-validate"]
    queues = configs[-1]["webhooks"][0]
    assert queues["name"] == "validatequeue.volcano.sh" and queues["failurePolicy"] == "Fail"
    assert queues["rules"][0]["operations"] == ["CREATE", "UPDATE", "DELETE"]
    assert queues["clientConfig"] == {"service": {"namespace": "pumice-system", "name": "pumice-admission-service",
                                                  "path": "/queues/validate", "port": 443},
                                      "caBundle": base64.b64encode(b"CA").decode()}
    assert queues["namespaceSelector"]["matchExpressions"][0]["values"] == ["pumice-system", "kube-system"]
    assert configs[0]["kind"] == "MutatingWebhookConfiguration" and configs[0]["webhooks"][0]["reinvocationPolicy"]
    assert endpoint.hosts()[0] == "pumice-admission-service.pumice-system.svc"


def test_unknown_webhooks_and_endpoints_are_errors() -> None:
    with pytest.raises(ValueError, match="/pods/validate is not one pumice serves"):
        enabled_webhooks("/jobs/mutate,/pods/validate")
    assert [h.path for h in enabled_webhooks(" /queues/validate , /jobs/mutate ")] == ["/queues/validate",
                                                                                     "/jobs/mutate"]
    with pytest.raises(ValueError, match="https only"):
        Endpoint(url="http://127.0.0.1:8443")
    with pytest.raises(ValueError, match="where the API server calls"):
        AdmissionServer(None, host="0.0.0.0")  # type: ignore[arg-type]
    assert {h.path for h in WEBHOOKS} >= {h.path for h in enabled_webhooks()}


def test_pumice_admission_configurations_prints_what_the_server_registers() -> None:
    result = CliRunner().invoke(app, ["admission", "configurations", "--webhook-namespace", "ns",
                                      "--webhook-service-name", "svc", "-o", "json"])
    assert result.exit_code == 0, result.output
    expected = configurations(enabled_webhooks(), Endpoint.service("ns", "svc"))
    assert json.loads(result.stdout)["items"] == expected
    result = CliRunner().invoke(app, ["admission", "configurations"])
    assert result.exit_code == 2 and "--webhook-url or --webhook-service-name" in result.stderr
    result = CliRunner().invoke(app, ["admission", "configurations", "--webhook-url", "https://h",
                                      "--enabled-admission", "/nope"])
    assert result.exit_code == 2 and "/nope" in result.stderr


def test_the_api_reader_reads_through_an_api_server(tmp_path: Path) -> None:
    from pumice.server import create_app as api_app
    from pumice.server import write_kubeconfig

    store = MemoryStore()
    ensure_default_queues(store)
    tls = ensure_certificates(tmp_path / "tls")
    server = ServerThread(api_app(store, token="t"), tls=tls).start()
    try:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url, "t", ca_file=tls.ca)
        reader = ApiReader(KubeClient(load_config(str(kubeconfig))))
        assert reader.get(QUEUES, None, "root")["metadata"]["name"] == "root"
        with pytest.raises(NotFound):
            reader.get(QUEUES, None, "absent")
        items, version = reader.list(QUEUES)
        assert sorted(q["metadata"]["name"] for q in items) == ["default", "root"] and version
        store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "other"},
                              "spec": {"containers": [{"name": "c"}]}})
        assert [p["metadata"]["name"] for p in reader.list("pods")[0]] == ["p"]  # all namespaces
        assert reader.list("pods", "default")[0] == []
    finally:
        server.stop()
        store.close()


def test_the_jobflow_webhook_refuses_a_cycle_with_volcanos_message(webhooks: Webhooks) -> None:
    def flow(*edges: tuple[str, list[str]]) -> Obj:
        return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                "metadata": {"name": "f", "namespace": "default"},
                "spec": {"flows": [{"name": n, "dependsOn": {"targets": t}} for n, t in edges]}}

    refused = webhooks.review("/jobflows/validate", "CREATE", flow(("a", ["c"]), ("b", ["a"]), ("c", ["b"])))
    assert refused["allowed"] is False and "jobflow Flow is not DAG" in refused["status"]["message"]
    dangling = webhooks.review("/jobflows/validate", "UPDATE", flow(("a", ["x"])), flow(("a", [])))
    assert "jobflow Flow is not DAG: vertex is not defined: x" in dangling["status"]["message"]
    assert webhooks.review("/jobflows/validate", "CREATE", flow(("a", []), ("b", ["a"])))["allowed"] is True
