"""Hypothesis strategies for hostile and careless input: objects of every served kind (valid-ish, then mutated:
wrong types, huge values, unicode, deep nesting, missing fields), patch documents, content types, query
parameters and names. Shared by the server fuzz suite and the CLI readers' fuzz suite.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import yaml
from hypothesis import strategies as st

Obj = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """A served resource: where it lives and a well-formed object of it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    has_status: bool
    template: Callable[[str], Obj]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def base(self, namespace: str | None) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            return f"{prefix}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{prefix}/{self.plural}"


def _pod(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "fuzz"}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "main", "image": "busybox", "command": ["sleep", "5"],
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def _node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": "a"}},
            "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _podgroup(name: str) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": "1"}, "priorityClassName": "hi"}}


def _queue(name: str) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": True, "capability": {"cpu": "64"}}}


def _job(name: str) -> Obj:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                     "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                     "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
                         "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "5"],
                                         "resources": {"requests": {"cpu": "100m"}}}]}}}]}}


def _hypernode(name: str) -> Obj:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "node-a"}}}]}}


def _template(name: str) -> Obj:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}
    return {"metadata": {"labels": {"app": name}},
            "spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [container]}}


def _workload(kind: str, **spec: Any) -> Callable[[str], Obj]:
    """An apps/v1 Deployment or StatefulSet of one replica."""
    def make(name: str) -> Obj:
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": _template(name),
                         **spec}}
    return make


def _batch_job(name: str) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 1, "template": _template(name)}}


def _cronjob(name: str) -> Obj:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": _job(name)["spec"]}}}


def _jobflow(name: str) -> Obj:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": name},
            "spec": {"jobRetainPolicy": "retain", "flows": [{"name": "a"}, {"name": "b", "dependsOn": {
                "targets": ["a"]}}]}}


KINDS: tuple[Kind, ...] = (
    Kind("", "v1", "pods", "Pod", True, True, _pod),
    Kind("", "v1", "nodes", "Node", False, True, _node),
    Kind("", "v1", "namespaces", "Namespace", False, True,
         lambda n: {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}),
    Kind("", "v1", "events", "Event", True, False,
         lambda n: {"apiVersion": "v1", "kind": "Event", "metadata": {"name": n}, "reason": "Fuzz", "message": "m",
                    "type": "Normal", "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}),
    Kind("", "v1", "services", "Service", True, True,
         lambda n: {"apiVersion": "v1", "kind": "Service", "metadata": {"name": n},
                    "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "fuzz"}}}),
    Kind("", "v1", "configmaps", "ConfigMap", True, False,
         lambda n: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}, "data": {"k": "v"}}),
    Kind("", "v1", "secrets", "Secret", True, False,
         lambda n: {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n}, "data": {"k": "dg=="},
                    "type": "Opaque"}),
    Kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, False,
         lambda n: {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
                    "value": 1000}),
    Kind("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True, True, _podgroup),
    Kind("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, True, _queue),
    Kind("batch.volcano.sh", "v1alpha1", "jobs", "Job", True, True, _job),
    Kind("bus.volcano.sh", "v1alpha1", "commands", "Command", True, False,
         lambda n: {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "metadata": {"name": n},
                    "action": "AbortJob", "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                                     "name": "j"}}),
    Kind("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, True, _hypernode),
    # the workload controllers' kinds
    Kind("apps", "v1", "deployments", "Deployment", True, True, _workload("Deployment")),
    Kind("apps", "v1", "statefulsets", "StatefulSet", True, True, _workload("StatefulSet", serviceName="s")),
    Kind("batch", "v1", "jobs", "Job", True, True, _batch_job),
    Kind("batch.volcano.sh", "v1alpha1", "cronjobs", "CronJob", True, True, _cronjob),
    Kind("flow.volcano.sh", "v1alpha1", "jobflows", "JobFlow", True, True, _jobflow),
)

#: A few names, so that reads, updates, patches and deletes often meet what earlier requests created.
NAMES = ("a", "b", "fuzz-1", "x.y", "default", "queue-z")
NAMESPACES = ("default", "fuzz", "kube-system")

# ---------------------------------------------------------------------------------------------- values

_unicode = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
#: Lone surrogates survive JSON's \\uXXXX escapes but not UTF-8: a classic way to break a store.
_surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3)

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, -0.0, 1e308, 5e-324]),
    st.text(max_size=12),
    _unicode,
    st.sampled_from(["", "100m", "-4", "lots", "1e400", "nan", "Infinity", "1Ei", "0x10", "∞", "true", "null",
                     "$patch", "../..", "a/b", "%00", "\x00", "\u2028", "Never", "Always", "volcano"]),
)

json_values = st.recursive(leaves, lambda children: st.lists(children, max_size=4)
                           | st.dictionaries(st.text(max_size=8), children, max_size=4), max_leaves=12)


def deep(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"d": value}
    return value


huge = st.one_of(
    st.integers(min_value=1_000, max_value=200_000).map(lambda n: "x" * n),
    st.integers(min_value=100, max_value=3_000).map(lambda n: {f"k{i}": "v" for i in range(n)}),
    st.integers(min_value=100, max_value=3_000).map(lambda n: list(range(n))),
    st.integers(min_value=90, max_value=140).map(deep),
    st.sampled_from([10**4000, -(10**300)]),
)


# ---------------------------------------------------------------------------------------------- objects


def paths(value: Any, prefix: tuple[Any, ...] = (), limit: int = 200) -> list[tuple[Any, ...]]:
    """Every path (keys and indices) into ``value``, the root excluded, depth first."""
    out: list[tuple[Any, ...]] = []
    stack = [(value, prefix)]
    while stack and len(out) < limit:
        node, here = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            out.append((*here, key))
            stack.append((child, (*here, key)))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return doc


def _delete(doc: Any, path: tuple[Any, ...]) -> Any:
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    return doc


@st.composite
def mutated(draw: st.DrawFn, obj: Obj, *, max_mutations: int = 3) -> Any:
    """``obj`` with a few random mutations (or none): wrong types, huge or odd values, missing fields."""
    doc: Any = copy.deepcopy(obj)
    for _ in range(draw(st.integers(0, max_mutations))):
        where = paths(doc)
        action = draw(st.sampled_from(["replace", "replace", "delete", "huge", "insert", "unicode", "whole"]))
        if action == "whole":
            doc = draw(json_values)
            continue
        if not where:
            continue
        path = draw(st.sampled_from(where))
        if action == "delete":
            doc = _delete(doc, path)
        elif action == "replace":
            doc = _set(doc, path, draw(json_values))
        elif action == "huge":
            doc = _set(doc, path, draw(huge))
        elif action == "unicode":
            doc = _set(doc, path, draw(st.one_of(_unicode, _surrogates)))
        else:  # insert a key into the enclosing object, if it is one
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict):
                parent[draw(st.sampled_from(["$patch", "status", "metadata", "spec", "x", "apiVersion", "kind"])
                            | st.text(max_size=6))] = draw(json_values)
    return doc


names = st.one_of(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from(NAMES),
                  st.sampled_from(["", ".", "..", "a/b", "A", "a" * 300, "a%2Fb", "é", "..%2F", "a b", "-"]),
                  st.text(max_size=10))


@st.composite
def objects(draw: st.DrawFn, kind: Kind, name: str, namespace: str | None) -> Any:
    obj = kind.template(name)
    if kind.namespaced and namespace is not None and draw(st.booleans()):
        obj["metadata"]["namespace"] = namespace
    return draw(mutated(obj))


# ---------------------------------------------------------------------------------------------- patches


@st.composite
def json_patches(draw: st.DrawFn, target: Obj) -> Any:
    where = ["/" + "/".join(str(k).replace("~", "~0").replace("/", "~1") for k in p) for p in paths(target)]
    pointers = st.sampled_from(where or ["/metadata"]) | st.sampled_from(["", "/", "/-", "/x/y", "/metadata/labels/-",
                                                                         "/spec/containers/99", "a", "/~2"])
    ops = []
    for _ in range(draw(st.integers(0, 6))):
        op: Obj = {"op": draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "nope"])),
                   "path": draw(pointers)}
        if draw(st.booleans()):
            op["value"] = draw(json_values | huge)
        if op["op"] in ("move", "copy") or draw(st.integers(0, 9)) == 0:
            op["from"] = draw(pointers)
        ops.append(draw(mutated(op, max_mutations=1)))
    return ops if draw(st.integers(0, 9)) else draw(json_values)


@st.composite
def merge_patches(draw: st.DrawFn, target: Obj) -> Any:
    patch: Any = {}
    for path in draw(st.lists(st.sampled_from(paths(target) or [("metadata",)]), max_size=3)):
        node = patch
        for key in path[:-1]:
            key = str(key)
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[str(path[-1])] = draw(json_values | huge)
    return draw(mutated(patch, max_mutations=2))


@st.composite
def strategic_patches(draw: st.DrawFn, target: Obj) -> Any:
    patch = draw(merge_patches(target))
    if isinstance(patch, dict) and draw(st.booleans()):
        spec = patch.setdefault("spec", {}) if isinstance(patch.get("spec", {}), dict) else {}
        directive = draw(st.sampled_from(["$patch", "$retainKeys", "$setElementOrder/containers",
                                          "$deleteFromPrimitiveList/finalizers", "$unknown"]))
        spec[directive] = draw(st.sampled_from(["delete", "replace", "merge", "x"]) | json_values)
        spec["containers"] = draw(st.lists(st.one_of(
            st.fixed_dictionaries({"name": st.sampled_from(["main", "c", "x"]), "image": st.text(max_size=5)}),
            st.fixed_dictionaries({"$patch": st.sampled_from(["delete", "replace", "x"]),
                                   "name": st.sampled_from(["main", "c"])}),
            json_values), max_size=4))
    return patch


# ---------------------------------------------------------------------------------------------- encodings

PATCH_TYPES = ("application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json")
CONTENT_TYPES = ("application/json", "application/json", "application/json", "application/yaml",
                 "application/json; charset=utf-8", "application/vnd.kubernetes.protobuf", "text/html", "",
                 "application/apply-patch+yaml", "application/cbor", "multipart/form-data; boundary=x",
                 *PATCH_TYPES)
ACCEPTS = ("application/json", "application/json;as=Table;v=v1;g=meta.k8s.io",
           "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", "application/vnd.kubernetes.protobuf",
           "application/yaml", "*/*", "text/html", ";;;", "")


@st.composite
def encoded(draw: st.DrawFn, value: Any, content_type: str) -> bytes:
    """``value`` in the body encoding its content type names (or, now and then, something else)."""
    choice = draw(st.integers(0, 19))
    if choice == 0:
        return draw(st.binary(max_size=64))
    if choice == 1 or "protobuf" in content_type:
        return b"k8s\x00" + draw(st.binary(max_size=64)) if draw(st.booleans()) else json.dumps(value).encode()
    if "yaml" in content_type and choice > 4:
        try:
            return yaml.safe_dump(value, allow_unicode=True).encode("utf-8", "surrogatepass")
        except yaml.YAMLError:
            return b"a: [b"
    text = json.dumps(value, ensure_ascii=draw(st.booleans()), allow_nan=True)
    return text.encode("utf-8", "surrogatepass")


_numbers = st.sampled_from(["0", "1", "2", "-1", "nan", "NaN", "inf", "-inf", "1e400", "1.5", "0x1f", "", " 1",
                            "99999999999999999999999", "9223372036854775807", "abc", "１"])
#: ``continue`` tokens: random text, and forged tokens (base64 of JSON: kube-apiserver's shape with odd values,
#: other values, deep nesting), which the server decodes.
_TOKEN_INSIDE = (st.fixed_dictionaries({"v": st.sampled_from(["meta.k8s.io/v1", "x"]),
                                        "rv": st.integers() | st.text(max_size=5) | st.none(),
                                        "start": st.text(max_size=5) | st.integers()}).map(json.dumps)
                 | st.integers(1, 3000).map(lambda depth: "[" * depth + "]" * depth)
                 | st.text(max_size=20))
_continue = st.text(max_size=10) | _TOKEN_INSIDE.map(
    lambda inside: base64.urlsafe_b64encode(inside.encode("utf-8", "surrogatepass")).decode().rstrip("="))
QUERY = {
    "timeoutSeconds": _numbers,
    "limit": _numbers,
    "gracePeriodSeconds": _numbers,
    "sinceSeconds": _numbers,
    "tailLines": _numbers,
    "limitBytes": _numbers,
    "sinceTime": st.sampled_from(["2020-01-01T00:00:00Z", "x", "", "9999-99-99"]),
    "follow": st.sampled_from(["false", "0"]),
    "resourceVersion": _numbers | st.sampled_from(["", "0", "1", "999999999"]),
    "resourceVersionMatch": st.sampled_from(["NotOlderThan", "Exact", "x", ""]),
    "continue": _continue,
    "labelSelector": st.sampled_from(["app=fuzz", "app in (a,b)", "!x", "a!=b,c", "x>1", "===", "a in (",
                                      "a" * 300, "app notin ()"]) | st.text(max_size=12),
    "fieldSelector": st.sampled_from(["metadata.name=a", "spec.nodeName=", "status.phase!=Running", "x=y=z",
                                      "metadata.namespace==default", "a\\,b=c"]) | st.text(max_size=12),
    "allowWatchBookmarks": st.sampled_from(["true", "false", "1", "x"]),
    "propagationPolicy": st.sampled_from(["Foreground", "Background", "Orphan", "x"]),
    "includeObject": st.sampled_from(["None", "Object", "Metadata", "x"]),
    "pretty": st.sampled_from(["true", "1", "x"]),
    "fieldManager": st.text(max_size=8),
    "dryRun": st.sampled_from(["All", "x"]),
    "watch": st.sampled_from(["false", "0", "no"]),
}


@st.composite
def queries(draw: st.DrawFn) -> dict[str, str]:
    keys = draw(st.lists(st.sampled_from(sorted(QUERY)), max_size=3, unique=True))
    return {key: draw(QUERY[key]) for key in keys}
