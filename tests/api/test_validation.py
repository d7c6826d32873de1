"""``pumice.api.validation``: Kubernetes' decoding and validation rules, and the fast path that keeps answers.

The wording checked here is kube-apiserver 1.20's, as measured against it (the differential test in
``tests/kube`` compares whole answers with a live one).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.kube.differential import CORPUS, requests

from pumice.api.validation import KindRef, Refusal, Validator
from pumice.api.validation.names import is_dns1123_label, is_label_value, is_qualified_name, name_is_dns_subdomain
from pumice.api.validation.structural import apply_structural_schema

POD = KindRef("v1", "Pod", True)
PODGROUP = KindRef("scheduling.volcano.sh/v1beta1", "PodGroup", True)
FULL = Validator(memo=False)


def outcome(validator: Validator, ref: KindRef, obj: dict[str, Any], old: dict[str, Any] | None = None) -> Any:
    """What a write of ``obj`` comes to: the admitted object, or the refusal's Status."""
    try:
        admitted = validator.prepare(ref, copy.deepcopy(obj), create=old is None)
        validator.validate(ref, admitted, old)
    except Refusal as refusal:
        return refusal.status
    return admitted


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def test_name_formats_answer_as_kubernetes() -> None:
    assert is_dns1123_label("my-name") == ()
    assert is_dns1123_label("My_Name")[0].startswith("a lowercase RFC 1123 label must consist of")
    assert is_qualified_name("example.com/name") == ()
    assert is_qualified_name("a b") == ("name part must consist of alphanumeric characters, '-', '_' or '.', and "
                                        "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                                        "'my.name',  or '123-abc', regex used for validation is "
                                        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",)
    assert is_qualified_name("a/b/c")[0].startswith("a qualified name must consist of")
    assert is_label_value("x" * 64) == ("must be no more than 63 characters",)
    assert name_is_dns_subdomain("job-", True) == ()  # a generateName may end with a dash


def test_requests_default_from_limits_before_validation() -> None:
    """As kube-apiserver's defaulting: a negative limit is also reported as the request it becomes."""
    status = outcome(FULL, POD, pod(containers=[{"name": "c", "image": "x", "resources": {
        "limits": {"memory": "-1Gi"}}}]))
    fields = [c["field"] for c in status["details"]["causes"]]
    assert fields == ["spec.containers[0].resources.limits[memory]", "spec.containers[0].resources.requests[memory]"]


@pytest.mark.parametrize(("resources", "message"), [
    ({"requests": {"nvidia.com/gpu": "1"}}, "spec.containers[0].resources.limits: Required value: Limit must be set "
                                            "for non overcommitable resources"),
    ({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}},
     'spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit'),
    ({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
     'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit'),
    ({"limits": {"nvidia.com/gpu": "500m"}}, 'spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: '
                                             '"500m": must be an integer'),
    ({"requests": {"foo": "1"}}, 'spec.containers[0].resources.requests[foo]: Invalid value: "foo": must be a '
                                 "standard resource type or fully qualified"),
])
def test_container_resources(resources: dict[str, Any], message: str) -> None:
    status = outcome(FULL, POD, pod(containers=[{"name": "c", "image": "x", "resources": resources}]))
    assert message in status["message"]


def test_a_custom_kind_is_pruned_defaulted_and_checked_by_its_schema() -> None:
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "pg", "namespace": "default"},
             "spec": {"minMember": 2.0, "unknown": 1, "queue": None}}
    admitted = outcome(FULL, PODGROUP, group)
    assert admitted["spec"] == {"minMember": 2, "queue": "default"}  # 2.0 is 2, unknown pruned, null defaulted
    group["spec"] = {"minResources": {"cpu": True}}
    status = outcome(FULL, PODGROUP, group)
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.minResources.cpu", "<nil>",
                                                                 "spec.minResources.cpu"]
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"tasks": {
        "type": "array", "items": {"type": "object", "required": ["name"],
                                   "properties": {"name": {"type": "string"}}}}}}}}
    result = apply_structural_schema({"spec": {"tasks": [{"name": "a"}, {}]}}, schema)
    assert [str(e) for e in result.errors] == ["spec.tasks.name: Required value"]  # no index, as 1.20 says


def test_kinds_without_rules_or_schema_get_the_metadata_rules() -> None:
    ref = KindRef("example.com/v1", "Widget", True)
    status = outcome(FULL, ref, {"apiVersion": "example.com/v1", "kind": "Widget",
                                 "metadata": {"name": "Bad_Name", "namespace": "default"}, "spec": {"any": 1}})
    assert status["code"] == 422 and status["message"].startswith('Widget.example.com "Bad_Name" is invalid:')


# ---------------------------------------------------------------------------- the fast path


_FAST = Validator()  # one for every example: its kept answers are what is under test


def _ref(key: str, body: dict[str, Any]) -> KindRef:
    collection, objects = CORPUS[key]
    return KindRef(str(objects[0]["apiVersion"]), str(objects[0]["kind"]), "/namespaces/" in collection)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests(), st.booleans())
def test_the_fast_path_answers_as_the_full_path(request: Any, again: bool) -> None:
    """Over mutated objects of every kind (a small corpus: the same specs come back again and again, so the
    fast path answers from what it kept), the fast path admits and refuses exactly as the full path."""
    body = request.body if isinstance(request.body, dict) else {}
    if not isinstance(body.get("metadata"), dict):
        return
    body["metadata"].setdefault("namespace", "default")
    ref = _ref(request.kind, body)
    old = None
    if request.original is not None:
        old = copy.deepcopy(request.original)
        old["metadata"]["namespace"] = "default"
    expected = outcome(FULL, ref, body, old)
    assert outcome(_FAST, ref, body, old) == expected
    if again:  # the same object once more: now surely from the kept answers
        assert outcome(_FAST, ref, body, old) == expected


_TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


@pytest.mark.parametrize(("api_version", "kind", "body", "messages"), [
    ("apps/v1", "Deployment", {"spec": {"selector": {"matchLabels": {"app": "b"}}, "template": _TEMPLATE,
                                        "replicas": -1, "strategy": {"type": "Weird"}}},
     ["spec.replicas: Invalid value: -1: must be greater than or equal to 0",
      "`selector` does not match template `labels`", 'spec.strategy: Unsupported value:']),
    ("apps/v1", "Deployment", {"spec": {"template": _TEMPLATE}}, ["spec.selector: Required value"]),
    ("apps/v1", "ReplicaSet", {"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {
        "metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}],
                                                      "restartPolicy": "Never"}}}},
     ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"']),
    ("apps/v1", "StatefulSet", {"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": _TEMPLATE,
                                         "podManagementPolicy": "Weird", "updateStrategy": {"type": "X"}}},
     ["spec.podManagementPolicy: Invalid value: \"Weird\": must be 'OrderedReady' or 'Parallel'",
      "must be 'RollingUpdate' or 'OnDelete'"]),
    ("batch/v1", "Job", {"spec": {"template": _TEMPLATE, "parallelism": -1, "backoffLimit": -2}},
     ["spec.parallelism: Invalid value: -1", "spec.backoffLimit: Invalid value: -2",
      'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']),
    ("batch/v1", "Job", {"spec": {"manualSelector": True, "selector": {"matchLabels": {"app": "b"}},
                                  "template": {**_TEMPLATE, "spec": {**_TEMPLATE["spec"], "restartPolicy": "Never"}}}},
     ["spec.template.metadata.labels: Invalid value:", "`selector` does not match template `labels`"]),
    ("batch/v1", "Job", {"spec": {"manualSelector": True,
                                  "template": {**_TEMPLATE, "spec": {**_TEMPLATE["spec"], "restartPolicy": "Never"}}}},
     ["spec.selector: Required value"]),
    ("apps/v1", "StatefulSet", {"spec": {"selector": {"matchLabels": {"app": None}}, "template": _TEMPLATE}},
     ["spec.template.metadata.labels: Invalid value:", "`selector` does not match template `labels`"]),  # null is ""
    ("apps/v1", "ReplicaSet", {"spec": {"selector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["a", "x" * 64]}]}, "template": _TEMPLATE}},
     ["spec.selector: Invalid value:", "invalid label selector"]),
    ("networking.k8s.io/v1", "NetworkPolicy", {"spec": {
        "podSelector": {}, "policyTypes": ["Ingress", "Both"],
        "ingress": [{"ports": [{"protocol": "ICMP", "port": 70000}, {"port": "Not A Name"}],
                     "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]},
                                   "podSelector": {}}, {"ipBlock": {"cidr": "10.0.0.1"}}]}]}},
     ['spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP"',
      "spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
      'spec.ingress[0].ports[1].port: Invalid value: "Not A Name"',
      "spec.ingress[0].from[0]: Required value: must specify a peer",
      'spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`',
      "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
      'spec.ingress[0].from[2].ipBlock.cidr: Invalid value: "10.0.0.1": not a valid CIDR',
      'spec.policyTypes[1]: Unsupported value: "Both"']),
    ("rbac.authorization.k8s.io/v1", "Role", {"rules": [{"apiGroups": [""], "resources": ["pods"]}]},
     ["rules[0].verbs: Required value: verbs must contain at least one value"]),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", {"roleRef": {"kind": "Weird", "name": ""},
                                                     "subjects": [{"kind": "Nobody", "name": ""}]},
     ['roleRef.kind: Unsupported value: "Weird"', "roleRef.name: Required value", "subjects[0].name: Required value",
      'subjects[0].kind: Unsupported value: "Nobody"']),
])
def test_workload_and_rbac_kinds(api_version: str, kind: str, body: dict[str, Any], messages: list[str]) -> None:
    """kube-apiserver 1.20's refusals of these bodies (measured), for the kinds the registry serves them as."""
    ref = KindRef(api_version, kind, True)
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "default"}, **body}
    status = outcome(FULL, ref, obj)
    assert status["code"] == 422, status
    for message in messages:
        assert message in status["message"]
    assert outcome(_FAST, ref, obj) == status


def test_a_user_subjects_empty_api_group_is_defaulted() -> None:
    """kube-apiserver defaults a User or Group subject's empty apiGroup to rbac.authorization.k8s.io (measured)."""
    ref = KindRef("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", False)
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "viewer"},
               "subjects": [{"kind": "User", "name": "alice", "apiGroup": ""}]}
    assert outcome(FULL, ref, binding)["subjects"][0]["name"] == "alice"  # admitted
    binding["subjects"][0]["apiGroup"] = "example.com"
    assert outcome(FULL, ref, binding)["code"] == 422


def test_an_integral_float_of_a_custom_kinds_integer_field_is_that_integer() -> None:
    """``replicas: 2.0`` in a Volcano Job is the integer 2 (kube-apiserver stores it so, and Volcano's webhook
    then reads 2): pruning turns it into one, though 2.0 == 2 in Python."""
    ref = KindRef("batch.volcano.sh/v1alpha1", "Job", True)
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"tasks": [{"name": "t", "replicas": 2.0, "template": {"spec": {"containers": [
               {"name": "c", "image": "x"}]}}}]}}
    replicas = outcome(FULL, ref, job)["spec"]["tasks"][0]["replicas"]
    assert replicas == 2 and type(replicas) is int


@pytest.mark.parametrize("path", [("restartPolicy",), ("dnsPolicy",), ("containers", 0, "imagePullPolicy"),
                                  ("containers", 0, "terminationMessagePolicy"),
                                  ("containers", 0, "ports", 0, "protocol")])
def test_an_empty_policy_is_taken_as_unset_and_a_wrong_one_refused(path: tuple[Any, ...]) -> None:
    """kube-apiserver defaults these fields when they are "" as when they are absent (the differential test met
    ``restartPolicy: ""`` in a sweep of its mutations: kube-1.20 created the pod, pumice refused it); any other
    unknown value is refused."""
    for value, refused in (("", False), ("Sometimes", True)):
        obj = pod(containers=[{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}])
        target = obj["spec"]
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
        status = outcome(FULL, POD, obj)
        if refused:
            assert status["reason"] == "Invalid" and "Unsupported value" in status["message"], status
        else:
            assert status.get("kind") == "Pod", status
