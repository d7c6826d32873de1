"""The shapes of Kubernetes' built-in kinds: which fields each type has and what JSON each field decodes from.

kube-apiserver decodes a request body into the Go type of its kind before anything else: a field of the
wrong JSON type (a string where an object belongs, ``priority: "high"``, a cpu of ``lots``) makes the body
undecodable, answered 400, while an unknown field is dropped. To answer the same, pumice needs the type of
every field of every built-in kind it serves; they come from kube-apiserver's own OpenAPI document
(``/openapi/v2`` of v1.20), reduced to facts (field names, JSON types and formats, required fields, the
strategic-merge keys and list types kubectl reads) and kept in ``kube_types.json``. Descriptions are left
out. ``python -m pumice.api.validation.kubetypes OPENAPI.json`` rebuilds the file from such a document;
a test compares it with a live kube-apiserver's when one is available.

A field's type is a short string:

- ``string``, ``boolean``, ``int32``, ``int64``, ``number``, ``byte`` (base64 text), ``time`` (RFC 3339
  text), ``quantity`` (a resource quantity, text or number), ``int-or-string``, ``any`` (any JSON value:
  ``RawExtension``, ``JSON``, free-form objects);
- ``@NAME``: an object of the type ``NAME`` (a key of ``definitions``);
- ``[T``: a list of ``T``; ``{T``: a map of string to ``T``.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["GROUPS", "TypeDef", "TypeTable", "build_table", "load_table"]

#: The API groups whose kinds are kept: those pumice serves, and the ones nearest to them.
GROUPS = frozenset({
    "", "apps", "batch", "rbac.authorization.k8s.io", "scheduling.k8s.io", "coordination.k8s.io",
    "events.k8s.io", "policy", "apiextensions.k8s.io", "networking.k8s.io", "storage.k8s.io", "node.k8s.io",
    "discovery.k8s.io", "autoscaling",
})
#: Types that are no kind of object (requests and answers of the API itself).
_SKIPPED_KINDS = frozenset({
    "Status", "WatchEvent", "DeleteOptions", "APIGroup", "APIGroupList", "APIResourceList", "APIVersions",
    "Binding", "Eviction", "Scale", "TokenRequest", "ComponentStatus",
})
#: Definitions with a JSON form of their own (their Go type implements ``UnmarshalJSON``).
_SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "time",
}
_EXTENSIONS = ("x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy", "x-kubernetes-list-type",
               "x-kubernetes-list-map-keys", "x-kubernetes-map-type")
_FILE = Path(__file__).with_name("kube_types.json")

TypeDef = dict[str, Any]
"""``{"properties": {field: type}, "required": [...], "x": {field: {extension: value}}, "gvk": [...]}``."""


class TypeTable:
    """The definitions, and the type of each built-in kind by ``(group, version, kind)``."""

    def __init__(self, definitions: dict[str, TypeDef]) -> None:
        self.definitions = definitions
        self.kinds: dict[tuple[str, str, str], str] = {}
        for name, definition in definitions.items():
            for group, version, kind in definition.get("gvk") or ():
                self.kinds.setdefault((group, version, kind), name)

    def kind(self, api_version: str, kind: str) -> str | None:
        """The definition of ``apiVersion``/``kind`` (``v1``/``Pod``), or None for a kind not built in."""
        group, _, version = api_version.rpartition("/")
        return self.kinds.get((group, version, kind))


def _type_of(schema: dict[str, Any], refs: set[str]) -> str:
    ref = schema.get("$ref")
    if ref:
        name = str(ref).rsplit("/", 1)[-1]
        refs.add(name)
        return "@" + name
    kind, fmt = schema.get("type"), schema.get("format")
    if kind == "array":
        return "[" + _type_of(schema.get("items") or {}, refs)
    if kind == "object":
        extra = schema.get("additionalProperties")
        return "{" + _type_of(extra, refs) if isinstance(extra, dict) else "any"
    if kind == "string":
        return {"byte": "byte", "date-time": "time", "int-or-string": "int-or-string"}.get(fmt or "", "string")
    if kind == "integer":
        return "int32" if fmt == "int32" else "int64"
    if kind == "number":
        return "number"
    if kind == "boolean":
        return "boolean"
    return "any"


def build_table(document: dict[str, Any]) -> dict[str, TypeDef]:
    """The definitions of every kind of ``GROUPS`` in an OpenAPI v2 document, and of the types they use."""
    source: dict[str, Any] = document.get("definitions") or {}
    roots = []
    for name, definition in source.items():
        gvks = [g for g in definition.get("x-kubernetes-group-version-kind") or ()
                if g.get("group", "") in GROUPS and g["kind"] not in _SKIPPED_KINDS]
        if gvks and not name.endswith("List"):
            roots.append(name)
    out: dict[str, TypeDef] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in out or name in _SPECIAL:
            continue
        definition = source.get(name) or {}
        refs: set[str] = set()
        entry: TypeDef = {}
        properties = definition.get("properties")
        if properties is None:
            entry["type"] = _type_of({k: v for k, v in definition.items() if k != "$ref"}, refs)
        else:
            entry["properties"] = {field: _type_of(schema, refs) for field, schema in sorted(properties.items())}
            extensions = {field: {k: schema[k] for k in _EXTENSIONS if k in schema}
                          for field, schema in sorted(properties.items())}
            extensions = {field: ext for field, ext in extensions.items() if ext}
            if extensions:
                entry["x"] = extensions
        if definition.get("required"):
            entry["required"] = sorted(definition["required"])
        gvks = definition.get("x-kubernetes-group-version-kind") or []
        if gvks and name in roots:
            entry["gvk"] = sorted([g.get("group", ""), g["version"], g["kind"]] for g in gvks)
        out[name] = entry
        pending.extend(refs)
    for name, special in _SPECIAL.items():
        out[name] = {"type": special}
    return dict(sorted(out.items()))


@cache
def load_table() -> TypeTable:
    """The table kept with pumice (``kube_types.json``)."""
    return TypeTable(json.loads(_FILE.read_text(encoding="utf-8")))


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m pumice.api.validation.kubetypes OPENAPI_V2.json", file=sys.stderr)
        return 2
    document = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    table = build_table(document)
    lines = [f"{json.dumps(name)}:{json.dumps(entry, sort_keys=True, separators=(',', ':'))}" for name, entry in
             table.items()]
    _FILE.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")  # a definition per line
    print(f"{len(table)} definitions written to {_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
