"""OpenAPI documents: just enough for kubectl's validation of the manifests it applies.

kubectl (1.29+) reads ``/openapi/v3`` first: the PATCH operation of every kind declares ``fieldValidation``,
so kubectl sends ``fieldValidation=Strict`` and validates nothing itself. Older kubectl (1.27, 1.28)
downloads ``/openapi/v2`` as protobuf and validates the manifest against the definition whose
``x-kubernetes-group-version-kind`` matches: for our custom kinds that is an object of any fields (a map of
arbitrary values, so unknown fields pass, as with ``x-kubernetes-preserve-unknown-fields``). Built-in kinds are
left out of v2 on purpose: kubectl then uses its compiled-in types, both to validate and to compute strategic
merge patches, instead of a schema too thin for either.
"""

from __future__ import annotations

import json
from typing import Any

from .resources import CORE_GROUPS, ResourceIndex

__all__ = ["OPENAPI_V2_PROTOBUF", "openapi_v2", "openapi_v2_protobuf", "openapi_v3_document", "openapi_v3_index"]


def _definition_name(group: str, version: str, kind: str) -> str:
    reverse = ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
    return f"{reverse}.{version}.{kind}"


def openapi_v2(index: ResourceIndex) -> dict[str, Any]:
    """Swagger 2.0: one definition per custom kind, an object whose fields may be anything."""
    definitions: dict[str, Any] = {}
    for r in index.resources:
        if r.group in CORE_GROUPS:
            continue
        definitions[_definition_name(r.group, r.version, r.kind)] = {
            "description": f"{r.kind} ({r.group}/{r.version}), served by pumice: any field is accepted.",
            "type": "object",
            "additionalProperties": {"description": "Any value."},
            "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.kind}],
        }
    return {
        "swagger": "2.0",
        "info": {"title": "pumice", "version": "v1.32.0"},
        "paths": {},
        "definitions": definitions,
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


def openapi_v3_document(index: ResourceIndex, group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI 3 document of one group-version: schemas and the operations of each resource."""
    resources = index.in_group_version(group, version)
    if not resources:
        return None
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    params = [{"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for name in _QUERY_PARAMS]
    for r in resources:
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        schema_name = _definition_name(r.group, r.version, r.kind)
        schemas[schema_name] = {
            "type": "object",
            "description": f"{r.kind} ({r.group_version}), served by pumice: any field is accepted.",
            "x-kubernetes-preserve-unknown-fields": True,
            "x-kubernetes-group-version-kind": [gvk],
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
        "components": {"schemas": schemas},
    }


# --- OpenAPI v2 as protobuf -----------------------------------------------------------------------------
#
# kubectl before 1.29 reads /openapi/v2 only as protobuf (gnostic's ``openapi.v2.Document``). The document
# above uses a small part of it, encoded here by hand: Document{swagger 1, info 2, paths 8, definitions 9},
# Info{title 1, version 2}, Definitions/Properties{NamedSchema 1}, NamedSchema{name 1, value 2},
# Schema{$ref 1, description 4, additionalProperties 21, type 22, properties 25, vendor extensions 31},
# AdditionalPropertiesItem{schema 1, boolean 2}, TypeItem{value 1}, NamedAny{name 1, value 2}, Any{yaml 2}.

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
    if "description" in schema:
        out += _pb_text(4, schema["description"])
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        out += _pb_bytes(21, _pb_bool(2, extra))
    elif isinstance(extra, dict):
        out += _pb_bytes(21, _pb_bytes(1, _pb_schema(extra)))
    kind = schema.get("type")
    if kind:
        out += _pb_bytes(22, b"".join(_pb_text(1, t) for t in ([kind] if isinstance(kind, str) else kind)))
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
