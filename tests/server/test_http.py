"""The REST API over HTTP: discovery, auth, CRUD, patches, subresources, selectors, tables, errors."""

from __future__ import annotations

from tests.builders import pod, vcjob

from .conftest import Api

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
PODS = "/api/v1/namespaces/default/pods"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_requests_without_the_token_get_a_401_status(api: Api) -> None:
    for token in (None, "wrong"):
        status, body = api.request("GET", "/api/v1/namespaces", token=token)
        assert status == 401
        assert body["kind"] == "Status" and body["reason"] == "Unauthorized" and body["code"] == 401
    status, body = api.request("GET", "/healthz", token=None)
    assert (status, body) == (200, "ok")


def test_discovery_documents(api: Api) -> None:
    status, version = api.request("GET", "/version")
    assert status == 200 and version["major"] == "1" and version["gitVersion"].startswith("v1.")
    assert api.request("GET", "/api")[1]["versions"] == ["v1"]
    groups = {g["name"]: g for g in api.request("GET", "/apis")[1]["groups"]}
    assert {"batch.volcano.sh", "scheduling.volcano.sh", "topology.volcano.sh", "bus.volcano.sh",
            "scheduling.k8s.io"} <= set(groups)
    sched = api.request("GET", "/apis/scheduling.volcano.sh/v1beta1")[1]
    by_name = {r["name"]: r for r in sched["resources"]}
    assert by_name["queues"]["namespaced"] is False and by_name["queues"]["shortNames"] == ["q", "queue-v1beta1"]
    assert by_name["podgroups"]["kind"] == "PodGroup" and "pg" in by_name["podgroups"]["shortNames"]
    assert "watch" in by_name["podgroups"]["verbs"] and "podgroups/status" in by_name
    jobs = {r["name"]: r for r in api.request("GET", "/apis/batch.volcano.sh/v1alpha1")[1]["resources"]}
    assert jobs["jobs"]["shortNames"] == ["vcjob", "vj"] and jobs["jobs"]["singularName"] == "job"
    hn = api.request("GET", "/apis/topology.volcano.sh/v1alpha1")[1]["resources"][0]
    assert hn["shortNames"] == ["hn"] and hn["categories"] == ["volcano"]
    core = {r["name"]: r for r in api.request("GET", "/api/v1")[1]["resources"]}
    assert core["pods/binding"]["verbs"] == ["create"] and core["pods"]["categories"] == ["all"]
    assert core["nodes"]["namespaced"] is False
    assert api.request("GET", "/apis/nope.example.com/v1")[0] == 404
    assert api.request("GET", "/openapi/v2")[1]["swagger"] == "2.0"
    v3 = api.request("GET", "/openapi/v3")[1]["paths"]
    doc = api.request("GET", v3["apis/batch.volcano.sh/v1alpha1"]["serverRelativeURL"])[1]
    patch = doc["paths"]["/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]


def test_create_get_list_update_delete(api: Api) -> None:
    status, created = api.request("POST", JOBS, vcjob("a", namespace=None))
    assert status == 201 and created["metadata"]["namespace"] == "default" and created["metadata"]["uid"]
    assert api.request("POST", JOBS, vcjob("a", namespace=None))[1]["reason"] == "AlreadyExists"
    status, got = api.request("GET", f"{JOBS}/a")
    assert status == 200 and got == created
    status, listed = api.request("GET", "/apis/batch.volcano.sh/v1alpha1/jobs")
    assert listed["kind"] == "JobList" and [j["metadata"]["name"] for j in listed["items"]] == ["a"]
    assert int(listed["metadata"]["resourceVersion"]) >= int(created["metadata"]["resourceVersion"])
    got["spec"]["queue"] = "q2"
    status, updated = api.request("PUT", f"{JOBS}/a", got)
    assert status == 200 and updated["spec"]["queue"] == "q2" and updated["metadata"]["generation"] == 2
    status, conflict = api.request("PUT", f"{JOBS}/a", got)  # stale resourceVersion
    assert status == 409 and conflict["reason"] == "Conflict"
    status, deleted = api.request("DELETE", f"{JOBS}/a")
    assert status == 200 and deleted["metadata"]["name"] == "a"
    status, missing = api.request("GET", f"{JOBS}/a")
    assert status == 404 and missing["kind"] == "Status" and missing["reason"] == "NotFound"


def test_errors_are_status_objects(api: Api) -> None:
    status, body = api.request("POST", "/api/v1/namespaces/other/pods", {**pod("p"),
                               "metadata": {"name": "p", "namespace": "default"}})
    assert status == 400 and body["reason"] == "BadRequest"
    status, body = api.request("GET", "/api/v1/nothings")
    assert status == 404 and body["kind"] == "Status"
    status, body = api.request("GET", "/api/v1/pods/x")  # namespaced resource without a namespace
    assert status == 404
    status, body = api.request("POST", f"{PODS}/p/status", {})
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    status, body = api.request("POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {}})
    assert status == 422 and body["reason"] == "Invalid"
    api.request("POST", JOBS, vcjob("j", namespace=None))
    status, body = api.request("PATCH", f"{JOBS}/j", {"spec": {}},
                               content_type="application/strategic-merge-patch+json")
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


def test_cluster_scoped_resources(api: Api) -> None:
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "qa"},
         "spec": {"weight": 1}}
    assert api.request("POST", QUEUES, q)[0] == 201
    assert api.request("GET", f"{QUEUES}/qa")[1]["spec"]["weight"] == 1
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    assert api.request("POST", "/api/v1/namespaces", ns)[0] == 201
    status, body = api.request("PUT", "/api/v1/namespaces/team/status",
                               {**ns, "status": {"phase": "Active"}})
    assert status == 200 and body["status"]["phase"] == "Active"
    assert api.request("POST", "/api/v1/namespaces/team/pods", pod("p"))[1]["metadata"]["namespace"] == "team"


def test_patches_merge_json_and_strategic(api: Api) -> None:
    main = {"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}
    api.request("POST", PODS, pod("p", labels={"app": "web"}, containers=[main]))
    status, merged = api.request("PATCH", f"{PODS}/p", {"metadata": {"labels": {"tier": "x", "app": None}}},
                                 content_type="application/merge-patch+json")
    assert status == 200 and merged["metadata"]["labels"] == {"tier": "x"}
    status, jsoned = api.request("PATCH", f"{PODS}/p", [{"op": "add", "path": "/metadata/labels/k", "value": "v"}],
                                 content_type="application/json-patch+json")
    assert status == 200 and jsoned["metadata"]["labels"] == {"tier": "x", "k": "v"}
    smp = {"spec": {"containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]},
                                   {"name": "side", "image": "pause"}]}}
    status, strategic = api.request("PATCH", f"{PODS}/p", smp, content_type="application/strategic-merge-patch+json")
    assert status == 200
    containers = strategic["spec"]["containers"]
    assert [c["name"] for c in containers] == ["c", "side"]
    assert containers[0]["image"] == "busybox" and [e["name"] for e in containers[0]["env"]] == ["A", "B"]
    status, _ = api.request("PATCH", f"{PODS}/p", [{"op": "test", "path": "/metadata/name", "value": "q"}],
                              content_type="application/json-patch+json")
    assert status == 400


def test_binding_and_status_subresource(api: Api) -> None:
    api.request("POST", PODS, pod("p"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    status, body = api.request("POST", f"{PODS}/p/binding", binding)
    assert status == 201 and body["status"] == "Success"
    assert api.request("GET", f"{PODS}/p")[1]["spec"]["nodeName"] == "n1"
    status, body = api.request("POST", f"{PODS}/p/binding", binding)
    assert status == 409
    status, body = api.request("PATCH", f"{PODS}/p/status", {"status": {"phase": "Running"}, "spec": {"x": 1}},
                               content_type="application/merge-patch+json")
    assert status == 200 and body["status"]["phase"] == "Running" and "x" not in body["spec"]
    status, body = api.request("PATCH", f"{PODS}/p", {"status": {"phase": "Failed"}},
                               content_type="application/merge-patch+json")
    assert body["status"]["phase"] == "Running"  # the main resource does not write status


def test_label_and_field_selectors_and_deletecollection(api: Api) -> None:
    for name, app in (("a", "web"), ("b", "db"), ("c", "web")):
        api.request("POST", PODS, pod(name, labels={"app": app}))
    names = [p["metadata"]["name"] for p in api.request("GET", f"{PODS}?labelSelector=app%3Dweb")[1]["items"]]
    assert names == ["a", "c"]
    names = [p["metadata"]["name"] for p in api.request("GET", "/api/v1/pods?fieldSelector=metadata.name%3Db")[1]
             ["items"]]
    assert names == ["b"]
    status, _ = api.request("GET", f"{PODS}?labelSelector=%3D%3D%3D")
    assert status == 400
    status, gone = api.request("DELETE", f"{PODS}?labelSelector=app%3Dweb")
    assert status == 200 and len(gone["items"]) == 2
    assert [p["metadata"]["name"] for p in api.request("GET", PODS)[1]["items"]] == ["b"]


def test_tables_use_volcano_printer_columns(api: Api) -> None:
    api.request("POST", JOBS, vcjob("j", namespace=None, queue="qa"))
    api.request("PATCH", f"{JOBS}/j/status", {"status": {"state": {"phase": "Running"}, "minAvailable": 1,
                                                         "running": 2}},
                content_type="application/merge-patch+json")
    status, table = api.request("GET", JOBS, accept=TABLE)
    assert status == 200 and table["kind"] == "Table"
    cols = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert cols == [("Name", 0), ("STATUS", 0), ("minAvailable", 0), ("RUNNINGS", 0), ("AGE", 0), ("QUEUE", 1)]
    row = table["rows"][0]
    assert row["cells"][:4] == ["j", "Running", 1, 2] and row["cells"][5] == "qa"
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["namespace"] == "default"
    one = api.request("GET", f"{JOBS}/j", accept=TABLE)[1]
    assert one["kind"] == "Table" and len(one["rows"]) == 1
    api.request("POST", PODS, pod("p"))
    pods = api.request("GET", PODS, accept=TABLE)[1]
    assert [c["name"] for c in pods["columnDefinitions"]][:6] == ["Name", "Ready", "Status", "Restarts", "Age", "IP"]
    assert pods["rows"][0]["cells"][:4] == ["p", "0/1", "Pending", 0]


def test_partial_object_metadata(api: Api) -> None:
    api.request("POST", PODS, pod("a", labels={"app": "x"}))
    accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    status, body = api.request("GET", PODS, accept=accept)
    assert status == 200 and body["kind"] == "PartialObjectMetadataList"
    assert body["items"][0]["metadata"]["labels"] == {"app": "x"} and "spec" not in body["items"][0]
    one = api.request("GET", f"{PODS}/a", accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")[1]
    assert one["kind"] == "PartialObjectMetadata" and one["metadata"]["name"] == "a"
