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

__all__ = ["openapi_v2"]

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
