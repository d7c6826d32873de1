"""A minimal OpenAPI v2 document: enough for ``kubectl apply``'s client-side validation of our kinds.

kubectl validates a manifest against the definition whose ``x-kubernetes-group-version-kind`` matches it and
skips kinds it finds no definition for. Custom (Volcano) kinds get a definition whose top-level fields are
known and whose ``spec``/``status`` accept anything (as a CRD with ``x-kubernetes-preserve-unknown-fields``).
Built-in kinds are left out on purpose: kubectl then uses its compiled-in types, both to validate and to
compute strategic merge patches, instead of a schema too thin for either.
"""

from __future__ import annotations

from typing import Any

from .resources import CORE_GROUPS, ResourceIndex

__all__ = ["openapi_v2", "openapi_v3_document", "openapi_v3_index"]

_ANY: dict[str, Any] = {"description": "Any value.", "x-kubernetes-preserve-unknown-fields": True}
_STRING: dict[str, Any] = {"type": "string"}

#: Top-level fields, beyond apiVersion/kind/metadata/spec/status, of kinds that have them.
_EXTRA_FIELDS: dict[str, tuple[str, ...]] = {
    "Command": ("action", "target", "reason", "message"),
}


def _definition_name(group: str, version: str, kind: str) -> str:
    reverse = ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
    return f"{reverse}.{version}.{kind}"


def openapi_v2(index: ResourceIndex) -> dict[str, Any]:
    definitions: dict[str, Any] = {
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
            "description": "Standard object metadata (any field accepted).",
            "x-kubernetes-preserve-unknown-fields": True,
        },
    }
    for r in index.resources:
        if r.group in CORE_GROUPS:
            continue
        properties: dict[str, Any] = {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
            "spec": _ANY,
            "status": _ANY,
        }
        for extra in _EXTRA_FIELDS.get(r.kind, ()):
            properties[extra] = _ANY
        definitions[_definition_name(r.group, r.version, r.kind)] = {
            "description": f"{r.kind} ({r.group}/{r.version}), served by pumice.",
            "type": "object",
            "properties": properties,
            "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.kind}],
        }
    return {
        "swagger": "2.0",
        "info": {"title": "pumice", "version": "v1.32.0"},
        "paths": {},
        "definitions": definitions,
    }


# --- OpenAPI v3 -----------------------------------------------------------------------------------------
#
# kubectl (1.27+) first reads /openapi/v3: when the PATCH operation of a kind declares the ``fieldValidation``
# query parameter, kubectl leaves validation to the server (``fieldValidation=Strict``) instead of
# downloading the protobuf-only /openapi/v2. This server accepts unknown fields, so that check passes.


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
