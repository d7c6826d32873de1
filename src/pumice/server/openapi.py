"""OpenAPI documents: the schema of every served kind, for kubectl (``explain``, validation, patches).

Built-in kinds are described by Kubernetes' own types (``pumice.api.validation.kubetypes``: the field types,
required fields, strategic-merge keys and list types of kube-apiserver's document, without its descriptions);
custom kinds (Volcano's) by the OpenAPI v3 schema of their CRD, the one ``pumice crds`` installs and the
embedded server validates with (``pumice.api.validation.volcano_schema``), in its v2 form for ``/openapi/v2`` as
kube-apiserver converts it. kubectl 1.29+ reads ``/openapi/v3`` (``kubectl explain vcjob.spec``); older kubectl
downloads ``/openapi/v2`` as protobuf.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from pumice.api.validation import volcano_schema
from pumice.api.validation.kubetypes import TypeTable, load_table

from .resources import ApiResource, ResourceIndex

__all__ = ["OPENAPI_V2_PROTOBUF", "openapi_v2", "openapi_v2_protobuf", "openapi_v3_document", "openapi_v3_index"]

#: ``(apiVersion, kind) -> openAPIV3Schema`` of a custom kind (None if it has none).
SchemaOf = Callable[[str, str], dict[str, Any] | None]
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_TOP_FIELDS = {
    "apiVersion": {"description": "The versioned schema of this representation of an object.", "type": "string"},
    "kind": {"description": "The REST resource this object represents.", "type": "string"},
}
_SCALARS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "integer", "format": "int64"},
    "number": {"type": "number", "format": "double"},
    "byte": {"type": "string", "format": "byte"},
    "time": {"type": "string", "format": "date-time"},
    "quantity": {"type": "string"},
    "int-or-string": {"type": "string", "format": "int-or-string"},
    "any": {"type": "object"},
}


def _definition_name(group: str, version: str, kind: str) -> str:
    reverse = ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
    return f"{reverse}.{version}.{kind}"


def _gvk(r: ApiResource) -> list[dict[str, str]]:
    return [{"group": r.group, "version": r.version, "kind": r.kind}]


class _Builder:
    """Definitions of the served kinds, and of the types they use, as OpenAPI schemas."""

    def __init__(self, table: TypeTable, schema_of: SchemaOf, ref_prefix: str, v2: bool) -> None:
        self.table, self.schema_of, self.prefix, self.v2 = table, schema_of, ref_prefix, v2
        self.out: dict[str, Any] = {}

    def _type(self, kind: str) -> dict[str, Any]:
        head = kind[0]
        if head == "@":
            self._builtin(kind[1:])
            return {"$ref": self.prefix + kind[1:]}
        if head == "[":
            return {"type": "array", "items": self._type(kind[1:])}
        if head == "{":
            return {"type": "object", "additionalProperties": self._type(kind[1:])}
        return dict(_SCALARS.get(kind, {"type": "object"}))

    def _builtin(self, name: str, gvks: list[dict[str, str]] | None = None) -> None:
        if name in self.out:
            if gvks:
                self.out[name].setdefault("x-kubernetes-group-version-kind", []).extend(
                    g for g in gvks if g not in self.out[name].get("x-kubernetes-group-version-kind", []))
            return
        definition = self.table.definitions.get(name) or {}
        if "properties" not in definition:
            self.out[name] = dict(_SCALARS.get(definition.get("type", "any"), {"type": "object"}))
            return
        schema: dict[str, Any] = {"type": "object"}
        self.out[name] = schema  # before the properties: types may refer to themselves
        properties = {}
        extensions = definition.get("x") or {}
        for field, kind in definition["properties"].items():
            properties[field] = {**self._type(kind), **copy.deepcopy(extensions.get(field, {}))}
        schema["properties"] = properties
        if definition.get("required"):
            schema["required"] = list(definition["required"])
        if gvks:
            schema["x-kubernetes-group-version-kind"] = list(gvks)

    def kind(self, r: ApiResource) -> str | None:
        """Add the schema of a served kind; its definition name (None if there is no schema for it)."""
        api_version = r.group_version
        builtin = self.table.kind(api_version, r.kind)
        if builtin is not None:
            self._builtin(builtin, _gvk(r))
            return builtin
        schema = self.schema_of(api_version, r.kind)
        if schema is None:
            return None
        name = _definition_name(r.group, r.version, r.kind)
        converted = _custom(schema, v2=self.v2)
        properties = converted.setdefault("properties", {})
        properties.update(copy.deepcopy(_TOP_FIELDS))
        properties["metadata"] = {"$ref": self.prefix + _OBJECT_META}
        self._builtin(_OBJECT_META)
        converted["x-kubernetes-group-version-kind"] = _gvk(r)
        self.out[name] = converted
        return name


_V2_DROPPED = ("anyOf", "oneOf", "allOf", "not", "nullable", "x-kubernetes-validations")


def _custom(schema: Any, *, v2: bool) -> Any:
    """A CRD schema as kube-apiserver publishes it: in v2 without what Swagger 2.0 lacks (``anyOf`` & co., a type
    for int-or-string fields)."""
    if isinstance(schema, list):
        return [_custom(item, v2=v2) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if value is None or (v2 and key in _V2_DROPPED):  # null: absent, as the API server decodes the schema
            continue
        if key in ("properties", "patternProperties", "definitions") and isinstance(value, dict):
            out[key] = {k: _custom(v, v2=v2) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not") or key in ("anyOf", "oneOf", "allOf"):
            out[key] = _custom(value, v2=v2)
        else:
            out[key] = copy.deepcopy(value)
    if v2 and out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    return out


def openapi_v2(index: ResourceIndex, schema_of: SchemaOf = volcano_schema,
               table: TypeTable | None = None) -> dict[str, Any]:
    """Swagger 2.0: a definition per served kind (``x-kubernetes-group-version-kind``) and the types they use."""
    builder = _Builder(table or load_table(), schema_of, "#/definitions/", v2=True)
    for r in index.resources:
        builder.kind(r)
    return {
        "swagger": "2.0",
        "info": {"title": "pumice", "version": "v1.32.0"},
        "paths": {},
        "definitions": dict(sorted(builder.out.items())),
    }


# --- OpenAPI v3 -----------------------------------------------------------------------------------------


def _v3_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_index(index: ResourceIndex) -> dict[str, Any]:
    """``/openapi/v3``: where each group-version's document lives."""
    paths = {}
    for group, versions in index.groups().items():
        for version in versions:
            key = _v3_key(group, version)
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}"}
    return {"paths": paths}


_QUERY_PARAMS = ("fieldValidation", "fieldManager", "dryRun", "pretty")


def openapi_v3_document(index: ResourceIndex, group: str, version: str, schema_of: SchemaOf = volcano_schema,
                        table: TypeTable | None = None) -> dict[str, Any] | None:
    """The OpenAPI 3 document of one group-version: the schemas of its kinds (and of the types they use), and
    the operations of each resource."""
    resources = index.in_group_version(group, version)
    if not resources:
        return None
    builder = _Builder(table or load_table(), schema_of, "#/components/schemas/", v2=False)
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Any] = {}
    params = [{"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for name in _QUERY_PARAMS]
    for r in resources:
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        schema_name = builder.kind(r)
        if schema_name is None:  # no schema known: any object
            schema_name = _definition_name(r.group, r.version, r.kind)
            builder.out[schema_name] = {
                "type": "object", "description": f"{r.kind} ({r.group_version}): any field is accepted.",
                "x-kubernetes-preserve-unknown-fields": True, "x-kubernetes-group-version-kind": [gvk],
            }
        ref = {"schema": {"$ref": f"#/components/schemas/{schema_name}"}}
        body_types = ["application/json-patch+json", "application/merge-patch+json"]
        item = f"{base}/namespaces/{{namespace}}/{r.plural}/{{name}}" if r.namespaced else f"{base}/{r.plural}/{{name}}"
        collection = item.rsplit("/", 1)[0]
        ok = {"200": {"description": "OK", "content": {"application/json": ref}}}
        paths[item] = {
            "get": {"operationId": f"read{r.kind}", "x-kubernetes-action": "get",
                    "x-kubernetes-group-version-kind": gvk, "responses": ok},
            "put": {"operationId": f"replace{r.kind}", "x-kubernetes-action": "put",
                    "x-kubernetes-group-version-kind": gvk, "parameters": params,
                    "requestBody": {"content": {"application/json": ref}}, "responses": ok},
            "patch": {"operationId": f"patch{r.kind}", "x-kubernetes-action": "patch",
                      "x-kubernetes-group-version-kind": gvk, "parameters": params,
                      "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in body_types}},
                      "responses": ok},
            "delete": {"operationId": f"delete{r.kind}", "x-kubernetes-action": "delete",
                       "x-kubernetes-group-version-kind": gvk, "responses": ok},
        }
        paths[collection] = {
            "get": {"operationId": f"list{r.kind}", "x-kubernetes-action": "list",
                    "x-kubernetes-group-version-kind": gvk, "responses": ok},
            "post": {"operationId": f"create{r.kind}", "x-kubernetes-action": "post",
                     "x-kubernetes-group-version-kind": gvk, "parameters": params,
                     "requestBody": {"content": {"application/json": ref}}, "responses": ok},
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "pumice", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": dict(sorted(builder.out.items()))},
    }


# --- OpenAPI v2 as protobuf -----------------------------------------------------------------------------
#
# kubectl before 1.29 reads /openapi/v2 only as protobuf (gnostic's ``openapi.v2.Document``). The document
# above uses a small part of it, encoded here by hand: Document{swagger 1, info 2, paths 8, definitions 9},
# Info{title 1, version 2}, Definitions/Properties{NamedSchema 1}, NamedSchema{name 1, value 2},
# Schema{$ref 1, format 2, description 4, required 19, enum 20, additionalProperties 21, type 22, items 23,
# properties 25, vendor extensions 31}, AdditionalPropertiesItem{schema 1, boolean 2}, TypeItem{value 1},
# ItemsItem{schema 1}, NamedAny{name 1, value 2}, Any{yaml 2} (checked against kube-apiserver 1.20's answer).

#: The content type kube-apiserver answers with (clients ask for ``...spec.v2@v1.0+protobuf``; Go's mime parser
#: refuses the ``@`` in a response).
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _pb_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _pb_bytes(number: int, payload: bytes) -> bytes:
    return _pb_varint(number << 3 | 2) + _pb_varint(len(payload)) + payload


def _pb_text(number: int, text: str) -> bytes:
    return _pb_bytes(number, text.encode("utf-8"))


def _pb_bool(number: int, value: bool) -> bytes:
    return _pb_varint(number << 3) + _pb_varint(int(value))


def _pb_schema(schema: dict[str, Any]) -> bytes:
    out = bytearray()
    if "$ref" in schema:
        out += _pb_text(1, schema["$ref"])
    if "format" in schema:
        out += _pb_text(2, schema["format"])
    if "description" in schema:
        out += _pb_text(4, schema["description"])
    for name in schema.get("required") or ():
        out += _pb_text(19, name)
    for value in schema.get("enum") or ():
        out += _pb_bytes(20, _pb_text(2, json.dumps(value)))
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        out += _pb_bytes(21, _pb_bool(2, extra))
    elif isinstance(extra, dict):
        out += _pb_bytes(21, _pb_bytes(1, _pb_schema(extra)))
    kind = schema.get("type")
    if kind:
        out += _pb_bytes(22, b"".join(_pb_text(1, t) for t in ([kind] if isinstance(kind, str) else kind)))
    items = schema.get("items")
    if isinstance(items, dict):
        out += _pb_bytes(23, _pb_bytes(1, _pb_schema(items)))
    properties = schema.get("properties")
    if properties:
        named = b"".join(_pb_bytes(1, _pb_text(1, name) + _pb_bytes(2, _pb_schema(sub)))
                         for name, sub in properties.items())
        out += _pb_bytes(25, named)
    for key, value in schema.items():
        if key.startswith("x-"):
            any_value = _pb_text(2, json.dumps(value))  # gnostic keeps extension values as YAML text
            out += _pb_bytes(31, _pb_text(1, key) + _pb_bytes(2, any_value))
    return bytes(out)


def openapi_v2_protobuf(document: dict[str, Any]) -> bytes:
    """``document`` (as made by ``openapi_v2``) in gnostic's protobuf encoding."""
    info = document.get("info") or {}
    out = bytearray(_pb_text(1, document.get("swagger", "2.0")))
    out += _pb_bytes(2, _pb_text(1, info.get("title", "")) + _pb_text(2, info.get("version", "")))
    out += _pb_bytes(8, b"")
    named = b"".join(_pb_bytes(1, _pb_text(1, name) + _pb_bytes(2, _pb_schema(schema)))
                     for name, schema in (document.get("definitions") or {}).items())
    out += _pb_bytes(9, named)
    return bytes(out)
