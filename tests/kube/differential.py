"""The differential test's machinery: the same requests to pumice and to a real kube-apiserver, answers compared.

- a **corpus** of valid objects of every kind pumice serves (``CORPUS``);
- **mutations** of them drawn by hypothesis (``requests()``): bad names and labels, negative and malformed
  quantities, wrong JSON types, missing fields, oversize values, and updates of fields that may not change;
- **targets**: two API servers reached over HTTPS with a token (``Target``), the real one prepared as a Volcano
  cluster is (``pumice crds``, Volcano's webhooks served by ``pumice.webhooks``);
- **answer classes**: ``2xx`` or the exact error code; ``Tally`` counts them per kind and lists disagreements.

Used by ``tests/kube/test_differential.py`` (a bounded run in CI) and ``benchmarks/differential.py`` (thousands
of requests, the agreement table per kind).
"""

from __future__ import annotations

import copy
import itertools
import json
import secrets
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

Obj = dict[str, Any]
#: Volcano's webhooks the real server is given (those of its Helm chart, and the JobFlow one: the embedded
#: cluster runs every rule pumice has).
WEBHOOKS = ("/jobs/mutate", "/jobs/validate", "/podgroups/validate", "/queues/mutate", "/queues/validate",
            "/jobflows/validate")

# ---------------------------------------------------------------------------- the corpus

_CONTAINER = {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 1"],
              "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}}}
_POD_SPEC = {"restartPolicy": "Never", "containers": [_CONTAINER]}


def _meta(name: str, **extra: Any) -> Obj:
    return {"name": name, **extra}


#: kind key -> (collection path, valid objects). Namespaced kinds live in ``default``.
CORPUS: dict[str, tuple[str, list[Obj]]] = {
    "Pod": ("/api/v1/namespaces/default/pods", [
        {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("pod", labels={"app": "web", "tier": "a.b_c-d"}),
         "spec": copy.deepcopy(_POD_SPEC)},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": _meta("gpu", annotations={"example.com/owner": "team-a"}),
         "spec": {"schedulerName": "volcano", "containers": [{
             "name": "train", "image": "pytorch", "ports": [{"containerPort": 8080, "name": "http"}],
             "env": [{"name": "MODE", "value": "train"}],
             "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}],
             "nodeSelector": {"gpu": "v100"}, "tolerations": [{"key": "gpu", "operator": "Exists",
                                                               "effect": "NoSchedule"}],
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                 {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}}},
    ]),
    "Node": ("/api/v1/nodes", [
        {"apiVersion": "v1", "kind": "Node", "metadata": _meta("node", labels={"zone": "a"}),
         "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
         "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                    "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
    ]),
    "Namespace": ("/api/v1/namespaces", [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("team", labels={"team": "a"})},
    ]),
    "Service": ("/api/v1/namespaces/default/services", [
        {"apiVersion": "v1", "kind": "Service", "metadata": _meta("svc"),
         "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}},
    ]),
    "ConfigMap": ("/api/v1/namespaces/default/configmaps", [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("cm"), "data": {"a.conf": "x=1", "B_KEY": "y"}},
    ]),
    "Secret": ("/api/v1/namespaces/default/secrets", [
        {"apiVersion": "v1", "kind": "Secret", "metadata": _meta("secret"), "type": "Opaque",
         "data": {"password": "c2VjcmV0"}, "stringData": {"user": "admin"}},
    ]),
    "Event": ("/api/v1/namespaces/default/events", [
        {"apiVersion": "v1", "kind": "Event", "metadata": _meta("ev"), "reason": "Scheduled", "message": "ok",
         "type": "Normal", "involvedObject": {"kind": "Pod", "name": "pod", "namespace": "default"}},
    ]),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1/priorityclasses", [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": _meta("high"), "value": 1000,
         "description": "high"},
    ]),
    "Queue": ("/apis/scheduling.volcano.sh/v1beta1/queues", [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": _meta("q"),
         "spec": {"weight": 2, "reclaimable": True, "capability": {"cpu": "8", "memory": "16Gi"}}},
    ]),
    "PodGroup": ("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": _meta("pg"),
         "spec": {"minMember": 2, "queue": "default", "minResources": {"cpu": "2", "memory": "1Gi"}}},
    ]),
    "Job": ("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs", [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": _meta("job"),
         "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "default", "maxRetry": 2,
                  "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                  "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": copy.deepcopy(_POD_SPEC)}}]}},
    ]),
    "Command": ("/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands", [
        {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "metadata": _meta("cmd"), "action": "AbortJob",
         "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "job", "uid": "1234"}},
    ]),
    "Deployment": ("/apis/apps/v1/namespaces/default/deployments", [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("web"),
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [_CONTAINER]}}}},
    ]),
    "StatefulSet": ("/apis/apps/v1/namespaces/default/statefulsets", [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta("db"),
         "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                  "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [_CONTAINER]}}}},
    ]),
    "BatchJob": ("/apis/batch/v1/namespaces/default/jobs", [
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("pi"),
         "spec": {"completions": 2, "parallelism": 1, "backoffLimit": 3,
                  "template": {"spec": copy.deepcopy(_POD_SPEC)}}},
    ]),
    "Role": ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta("reader"),
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]},
    ]),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta("read"),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]},
    ]),
    "ServiceAccount": ("/api/v1/namespaces/default/serviceaccounts", [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("robot")},
    ]),
    "ResourceQuota": ("/api/v1/namespaces/default/resourcequotas", [
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": _meta("quota"),
         "spec": {"hard": {"cpu": "10", "memory": "20Gi", "pods": "20", "requests.nvidia.com/gpu": "4"}}},
    ]),
    "ReplicaSet": ("/apis/apps/v1/namespaces/default/replicasets", [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": _meta("rs"),
         "spec": {"replicas": 1, "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["rs"]}]},
                  "template": {"metadata": {"labels": {"app": "rs"}}, "spec": {"containers": [_CONTAINER]}}}},
    ]),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1/clusterroles", [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta("viewer"),
         "rules": [{"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
                   {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]},
    ]),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": _meta("view"),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "viewer"},
         "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"},
                      {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]},
    ]),
    "Lease": ("/apis/coordination.k8s.io/v1/namespaces/default/leases", [
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": _meta("leader"),
         "spec": {"holderIdentity": "sched-1", "leaseDurationSeconds": 15, "leaseTransitions": 0}},
    ]),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", [
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta("np"),
         "spec": {"podSelector": {"matchLabels": {"volcano.sh/job-name": "job"}}, "policyTypes": ["Ingress"],
                  "ingress": [{"from": [{"podSelector": {"matchLabels": {"volcano.sh/job-name": "job"}}},
                                        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                               "ports": [{"protocol": "TCP", "port": 8080}, {"port": "http"}]}]}},
    ]),
    "JobTemplate": ("/apis/flow.volcano.sh/v1alpha1/namespaces/default/jobtemplates", [
        {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": _meta("step"),
         "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                  "tasks": [{"name": "run", "replicas": 1, "template": {"spec": copy.deepcopy(_POD_SPEC)}}]}},
    ]),
    "JobFlow": ("/apis/flow.volcano.sh/v1alpha1/namespaces/default/jobflows", [
        {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": _meta("flow"),
         "spec": {"jobRetainPolicy": "delete", "flows": [{"name": "prepare"},
                                                         {"name": "train", "dependsOn": {"targets": ["prepare"]}}]}},
    ]),
    "Numatopology": ("/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies", [
        {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": _meta("node"),
         "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
                  "numares": {"cpu": {"allocatable": "0-7", "capacity": 8}}}},
    ]),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": _meta("widgets.example.com"),
         "spec": {"group": "example.com", "scope": "Namespaced",
                  "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                  "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                      "type": "object", "properties": {"spec": {"type": "object", "properties": {
                          "size": {"type": "integer", "minimum": 1}}}}}}}]}},
    ]),
    "HyperNode": ("/apis/topology.volcano.sh/v1alpha1/hypernodes", [
        {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": _meta("hn"),
         "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "node"}}}]}},
    ]),
}

# ---------------------------------------------------------------------------- requests


@dataclass
class Request:
    """One request of the run: ``body`` sent with ``method`` to ``path``; for an update the object is first created
    from ``original`` (and deleted afterwards either way)."""

    kind: str
    mutation: str
    method: str
    path: str
    body: Any
    content_type: str = "application/json"
    original: Obj | None = None

    def describe(self) -> str:
        text = json.dumps(self.body)
        return f"{self.method} {self.path} ({self.mutation}): {text[:300]}"


_counter = itertools.count()
_RUN = secrets.token_hex(2)  # names differ from one run to the next (a server may outlive a run)


def _unique(name: str) -> str:
    return f"{name}-{_RUN}{next(_counter)}"


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value`` (keys and indexes), the value's own first."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    target = obj
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value


def _delete(obj: Any, path: tuple[Any, ...]) -> None:
    target = obj
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]


BAD_NAMES = ["Bad Name!", "UPPER", "under_score", "-lead", "trail-", "a" * 64, "a" * 254, "dots..dots", "..",
             "a/b", "a.b", "x" * 63, ""]
LABEL_KEYS = ["a b", "-x", "x/y/z", "example.com/", "/x", "x" * 64, "Example.com/x", "ok.example.com/good", "k"]
LABEL_VALUES = ["", "a b", "x" * 64, "-v", "v_1.2-3", "ok"]
QUANTITIES: list[Any] = ["-1", "-4", "lots", "", "1.5", "100m", "1e3", "0.0001", "1Gi", "-0", 2, 1.5, -1, True, {},
                         ["1"], None]
VALUES: list[Any] = ["", "x", "Bad Name!", "-1", "lots", "1", 0, -1, 1, 2147483648, 1.5, 2.0, True, False, None,
                     [], {}, ["x"], {"a": "b"}, {"a": 1}, "x" * 300]
_QUANTITY_PARENTS = frozenset({"requests", "limits", "capacity", "allocatable", "minResources", "capability",
                               "deserved", "hard"})
#: Fields each kind keeps immutable (an update changing one is refused), with a new value to try.
IMMUTABLE: dict[str, list[tuple[tuple[Any, ...], Any]]] = {
    "Pod": [(("spec", "restartPolicy"), "Always"), (("spec", "containers", 0, "name"), "other"),
            (("spec", "nodeName"), "node-x")],
    "Job": [(("spec", "tasks", 0, "template", "spec", "containers", 0, "image"), "busybox:2"),
            (("spec", "queue"), "elsewhere"), (("spec", "tasks", 0, "name"), "other")],
    "PriorityClass": [(("value",), 7)],
    "Secret": [(("type",), "kubernetes.io/basic-auth")],
    "PodGroup": [(("spec", "minMember"), 3)],
    "Deployment": [(("spec", "selector"), {"matchLabels": {"app": "other"}})],
    "BatchJob": [(("spec", "completions"), 5), (("spec", "template", "spec", "restartPolicy"), "OnFailure")],
    "RoleBinding": [(("roleRef", "name"), "writer")],
    "Queue": [(("spec", "weight"), 3)],
    "Node": [(("spec", "taints"), [])],
    "ReplicaSet": [(("spec", "selector"), {"matchLabels": {"app": "rs"}})],
    "ClusterRoleBinding": [(("roleRef", "name"), "editor")],
}


def _request(kind: str, mutation: str, body: Obj, *, update: Obj | None = None) -> Request:
    collection, _ = CORPUS[kind]
    if update is None:
        return Request(kind, mutation, "POST", collection, body)
    name = update["metadata"]["name"]
    return Request(kind, mutation, "PUT", f"{collection}/{name}", body, original=update)


MUTATIONS = ("valid", "name", "label", "annotation", "quantity", "type", "delete", "oversize", "update")


def _fresh(kind: str, original: Obj) -> Obj:
    """A copy of a corpus object under a name of its own."""
    base = copy.deepcopy(original)
    base["metadata"]["name"] = _unique(base["metadata"]["name"])
    if kind == "CustomResourceDefinition":  # named by its plural and group: the plural is what differs
        names = base["spec"]["names"]
        names["plural"] = names["singular"] = "widget" + base["metadata"]["name"].rpartition("-")[2]
        names["kind"], names["listKind"] = f"W{names['plural'][1:]}", f"W{names['plural'][1:]}List"
        base["metadata"]["name"] = f"{names['plural']}.example.com"
    return base


def _choices(kind: str, base: Obj, mutation: str) -> list[Any]:
    """Every way ``mutation`` can change ``base`` (None: it cannot, the object is sent as it is)."""
    if mutation == "name":
        return list(BAD_NAMES)
    if mutation in ("label", "annotation"):
        return [(key, value) for key in LABEL_KEYS for value in LABEL_VALUES]
    if mutation == "quantity":
        return [(p, q) for p in _paths(base) if len(p) >= 2 and p[-2] in _QUANTITY_PARENTS for q in QUANTITIES] \
            or [None]
    if mutation == "type":
        return [(p, v) for p in _paths(base) if p and p[0] not in ("apiVersion", "kind") and p != ("metadata", "name")
                for v in VALUES]
    if mutation == "delete":
        return [p for p in _paths(base) if p and p[0] not in ("apiVersion", "kind", "metadata")] or [None]
    if mutation == "oversize":
        return ["annotation", "label", "name", "data"]
    if mutation == "update":  # a field that may not change (or, for kinds without one, a label)
        return IMMUTABLE.get(kind) or [(("metadata", "labels"), {"changed": "yes"})]
    return [None]


def _mutated(kind: str, base: Obj, mutation: str, choice: Any) -> Request:
    """The request ``mutation`` makes of ``base`` with ``choice`` (one of ``_choices``)."""
    body = copy.deepcopy(base)
    if choice is None:
        return _request(kind, "valid", body)
    if mutation == "name":
        body["metadata"]["name"] = choice if choice in ("", "..", "a/b") or len(choice) > 60 else _unique(choice)
    elif mutation in ("label", "annotation"):
        body["metadata"].setdefault("labels" if mutation == "label" else "annotations", {})[choice[0]] = choice[1]
    elif mutation in ("quantity", "type"):
        _set(body, *choice)
    elif mutation == "delete":
        _delete(body, choice)
    elif mutation == "oversize":
        if choice == "annotation":
            body["metadata"]["annotations"] = {"big": "x" * (256 * 1024)}
        elif choice == "label":
            body["metadata"]["labels"] = {"big": "x" * 64}
        elif choice == "name":
            body["metadata"]["name"] = "x" * 254
        elif kind in ("ConfigMap", "Secret"):
            body["data"] = {"big": "eA==" * (300 * 1024)}
        else:
            body["metadata"]["annotations"] = {"x" * 64: "v"}
    else:  # update
        try:
            _set(body, *choice)
        except (KeyError, IndexError, TypeError):
            return _request(kind, "valid", body)
        return _request(kind, "update", body, update=base)
    return _request(kind, mutation, body)


@st.composite
def requests(draw: st.DrawFn, kinds: tuple[str, ...] | None = None) -> Request:
    """One request: a corpus object of a drawn kind, mutated by a drawn mutation."""
    kind = draw(st.sampled_from(kinds or tuple(CORPUS)))
    base = _fresh(kind, draw(st.sampled_from(CORPUS[kind][1])))
    mutation = draw(st.sampled_from(MUTATIONS))
    return _mutated(kind, base, mutation, draw(st.sampled_from(_choices(kind, base, mutation))))


def sweep(kinds: tuple[str, ...] | None = None) -> Iterator[Request]:
    """Every request ``requests()`` can draw, each once: every corpus object with every mutation and choice."""
    for kind in kinds or tuple(CORPUS):
        for original in CORPUS[kind][1]:
            for mutation in MUTATIONS:
                for choice in _choices(kind, _fresh(kind, original), mutation):
                    yield _mutated(kind, _fresh(kind, original), mutation, choice)


# ---------------------------------------------------------------------------- targets and answers


@dataclass
class Target:
    """An API server: its URL, bearer token and TLS context."""

    name: str
    url: str
    token: str
    context: ssl.SSLContext

    def call(self, method: str, path: str, body: Any = None,
             content_type: str = "application/json") -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as resp:
                raw, code = resp.read(), resp.status
        except urllib.error.HTTPError as err:
            raw, code = err.read(), err.code
        try:
            return code, json.loads(raw)
        except ValueError:
            return code, raw.decode(errors="replace")

    def send(self, request: Request) -> tuple[int, str]:
        """Send one request (creating the original of an update first); the object is deleted afterwards."""
        if request.original is not None:
            code, created = self.call("POST", CORPUS[request.kind][0], request.original)
            if code >= 300:
                return code, f"the original could not be created: {_message(created)}"
            body = copy.deepcopy(request.body)
            for _ in range(3):  # a controller of the server (a CRD's establishing) may write it meanwhile: 409
                body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
                code, answer = self.call(request.method, request.path, body, request.content_type)
                if code != 409:
                    break
                _, created = self.call("GET", request.path)
            self.call("DELETE", request.path)
            return code, _message(answer)
        code, answer = self.call(request.method, request.path, request.body, request.content_type)
        if 200 <= code < 300 and isinstance(answer, dict):
            name = (answer.get("metadata") or {}).get("name")
            if name:
                self.call("DELETE", f"{request.path}/{urllib.parse.quote(name, safe='')}")
        return code, _message(answer)


def _message(answer: Any) -> str:
    if isinstance(answer, dict):
        return str(answer.get("message") or answer.get("reason") or "")
    return str(answer)[:300]


def answer_class(code: int) -> str:
    return "2xx" if 200 <= code < 300 else str(code)


@dataclass
class Disagreement:
    request: Request
    answers: dict[str, tuple[int, str]]

    def __str__(self) -> str:
        shown = "; ".join(f"{name} {code}: {message[:200]}" for name, (code, message) in self.answers.items())
        return f"{self.request.describe()}\n    {shown}"


@dataclass
class Tally:
    """Requests, agreements and disagreements per kind (and the known deviations, kept apart)."""

    requests: dict[str, int] = field(default_factory=dict)
    agreed: dict[str, int] = field(default_factory=dict)
    deviations: dict[str, int] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)

    def add(self, request: Request, answers: dict[str, tuple[int, str]], deviation: str | None) -> None:
        kind = request.kind
        self.requests[kind] = self.requests.get(kind, 0) + 1
        classes = {answer_class(code) for code, _ in answers.values()}
        if len(classes) == 1:
            self.agreed[kind] = self.agreed.get(kind, 0) + 1
        elif deviation is not None:
            self.deviations[kind] = self.deviations.get(kind, 0) + 1
        else:
            self.disagreements.append(Disagreement(request, answers))

    def rows(self) -> list[tuple[str, int, int, int, int]]:
        """``(kind, requests, agreed, deviations, disagreements)`` per kind, and a total row."""
        out = []
        for kind in sorted(self.requests):
            bad = sum(1 for d in self.disagreements if d.request.kind == kind)
            out.append((kind, self.requests[kind], self.agreed.get(kind, 0), self.deviations.get(kind, 0), bad))
        total = tuple(sum(r[i] for r in out) for i in range(1, 5))
        return [*out, ("total", *total)]  # type: ignore[list-item]


#: Known, documented deviations (README, "Deliberate differences"): a predicate over a request and its answers,
#: and why. An answer pair matching one is counted apart, not as a disagreement.
Deviation = Callable[[Request, dict[str, tuple[int, str]]], bool]


def _empty_string_taken_for_null(request: Request, answers: dict[str, tuple[int, str]]) -> bool:
    """kube-apiserver 1.20 refuses ``""`` in any string field of a custom resource as if it were null
    (``Invalid value: "null": ... must be of type string: "null"``): its validator takes a zero value for null, a bug
    later releases fixed. pumice checks the empty string against the schema's other rules (pattern, enum) only."""
    kube = answers.get("kube-1.20")
    text = json.dumps(request.body)
    return kube is not None and kube[0] == 422 and 'Invalid value: "null"' in kube[1] and '""' in text \
        and "null" not in text


DEVIATIONS: list[tuple[str, Deviation]] = [
    ("kube-apiserver 1.20 takes an empty string for null in custom resources", _empty_string_taken_for_null),
]


def known_deviation(request: Request, answers: dict[str, tuple[int, str]]) -> str | None:
    for reason, matches in DEVIATIONS:
        if matches(request, answers):
            return reason
    return None


def compare(request: Request, targets: list[Target], tally: Tally) -> None:
    answers = {t.name: t.send(request) for t in targets}
    tally.add(request, answers, known_deviation(request, answers))
