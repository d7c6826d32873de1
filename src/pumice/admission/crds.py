"""CustomResourceDefinitions (``apiextensions-apiserver``): checking a CRD, establishing it, and applying its
schema to the custom resources it defines.

A CRD is checked as kube-apiserver does for what serving it needs (its name is ``<plural>.<group>``, names
and scope given, one storage version, a schema per version) and is *established* at once: the store serves
its resource from the moment it is stored, so a bundle can create a CRD and then its objects.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pumice.api.validation.names import is_dns1035_label
from pumice.store import CRDS, Invalid, NotFound, ResourceInfo, Store, custom_resource

__all__ = ["admit_crd", "custom_schema", "delete_custom_objects"]

Obj = dict[str, Any]
_SCHEMA_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_MIXED_CASE = "may have mixed case, but should otherwise match: "


def _names_problems(names: Obj) -> list[str]:
    """``ValidateCustomResourceDefinitionNames``: the plural, singular, short names and categories are DNS-1035
    labels, the kind and list kind too but for their case, and differ."""
    problems: list[str] = []
    for field in ("plural", "singular"):
        value = str(names.get(field) or "")
        if value:
            problems += [f'spec.names.{field}: Invalid value: "{value}": {msg}' for msg in is_dns1035_label(value)]
    for field in ("shortNames", "categories"):
        for index, value in enumerate(names.get(field) or []):
            problems += [f'spec.names.{field}[{index}]: Invalid value: "{value}": {msg}'
                         for msg in is_dns1035_label(str(value))]
    kind, list_kind = str(names.get("kind") or ""), str(names.get("listKind") or "")
    for field, value in (("kind", kind), ("listKind", list_kind)):
        if not value:
            problems.append(f"spec.names.{field}: Required value")
        else:
            problems += [f'spec.names.{field}: Invalid value: "{value}": {_MIXED_CASE}{msg}'
                         for msg in is_dns1035_label(value.lower())]
    if kind and kind == list_kind:
        problems.append(f'spec.names.listKind: Invalid value: "{list_kind}": kind and listKind may not be the same')
    return problems


def _schemas_problems(versions: list[Any]) -> list[str]:
    """The versions' schemas must be structural; named as kube-apiserver 1.20 names them (``spec.validation``
    when every version has the same schema)."""
    schemas = [((v or {}).get("schema") or {}).get("openAPIV3Schema") for v in versions]
    if schemas and all(s == schemas[0] for s in schemas):
        return _structural(schemas[0], "spec.validation.openAPIV3Schema", "root")
    problems: list[str] = []
    for index, schema in enumerate(schemas):
        problems += _structural(schema, f"spec.versions[{index}].schema.openAPIV3Schema", "root")
    return problems


def _structural(schema: Any, path: str, place: str) -> list[str]:
    """A structural schema's types: every node has one (at the root ``object``), but for nodes that keep unknown
    fields or are int-or-string; an array has ``items``."""
    if not isinstance(schema, dict):
        return []
    problems: list[str] = []
    kind = schema.get("type")
    if kind:
        if kind not in _SCHEMA_TYPES:
            supported = ", ".join(f'"{t}"' for t in _SCHEMA_TYPES)
            problems.append(f'{path}.type: Unsupported value: "{kind}": supported values: {supported}')
        if kind == "null":
            problems.append(f"{path}.type: Forbidden: type cannot be set to null, use nullable as an alternative")
        if place == "root" and kind != "object":
            problems.append(f'{path}.type: Invalid value: "{kind}": must be object at the root')
    elif place == "root":
        problems.append(f"{path}.type: Required value: must not be empty at the root")
    elif not schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("x-kubernetes-int-or-string"):
        problems.append(f"{path}.type: Required value: must not be empty for specified {place}")
    for key, sub in (schema.get("properties") or {}).items():  # a null property decodes as an empty schema
        problems += _structural({} if sub is None else sub, f"{path}.properties[{key}]", "object fields")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        problems += _structural(extra, f"{path}.additionalProperties", "object fields")
    items = schema.get("items")
    if kind == "array" and items is None:
        problems.append(f"{path}.items: Required value: must be specified")
    elif isinstance(items, dict):
        problems += _structural(items, f"{path}.items", "array items")
    return problems


def admit_crd(crd: Obj, old: Obj | None, stamp: str) -> None:
    """``Invalid`` for a CRD that cannot be served; otherwise fill in its defaults and status, in place."""
    raw_spec = crd.get("spec")
    spec: Obj = raw_spec if isinstance(raw_spec, dict) else {}
    name = str((crd.get("metadata") or {}).get("name") or "")
    names = dict(spec.get("names") or {})
    group, plural, kind = spec.get("group") or "", names.get("plural") or "", names.get("kind") or ""
    problems: list[str] = []
    if not group:
        problems.append("spec.group: Required value")
    elif "." not in group:
        problems.append(f'spec.group: Invalid value: "{group}": should be a domain with at least one dot')
    if not names.get("singular"):
        names["singular"] = str(kind).lower()
    if kind and not names.get("listKind"):
        names["listKind"] = f"{kind}List"
    problems += _names_problems(names)
    if group and name != f"{plural}.{group}":
        problems.append(f'metadata.name: Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        problems.append(f'spec.scope: Unsupported value: "{spec.get("scope") or ""}": supported values: '
                        '"Cluster", "Namespaced"')
    versions = spec.get("versions") or []
    if not versions:
        problems.append("spec.versions: Invalid value: must have exactly one version marked as storage version")
    seen: set[str] = set()
    for i, version in enumerate(versions):
        version_name = (version or {}).get("name") or ""
        if is_dns1035_label(version_name):
            problems.append(f'spec.versions[{i}].name: Invalid value: "{version_name}": a DNS-1035 label is required')
        if version_name in seen:
            problems.append(f'spec.versions[{i}].name: Duplicate value: "{version_name}"')
        seen.add(version_name)
        schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            problems.append(f"spec.versions[{i}].schema.openAPIV3Schema: Required value: schemas are required")
    problems += _schemas_problems(versions)
    if versions and sum(1 for v in versions if (v or {}).get("storage")) != 1:
        problems.append("spec.versions: Invalid value: must have exactly one version marked as storage version")
    if old is not None:
        old_spec = old.get("spec") or {}
        if old_spec.get("scope") != spec.get("scope"):
            problems.append("spec.scope: Invalid value: field is immutable")
        if old_spec.get("group") != spec.get("group"):
            problems.append("spec.group: Invalid value: field is immutable")
    if problems:
        raise Invalid(f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: {"; ".join(problems)}')
    crd["spec"] = {**spec, "names": names}
    storage = next(v["name"] for v in versions if v.get("storage"))
    stored = list(((old or {}).get("status") or {}).get("storedVersions") or [])
    if storage not in stored:
        stored.append(storage)
    conditions = [
        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found",
         "lastTransitionTime": stamp},
        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted", "lastTransitionTime": stamp},
    ]
    crd["status"] = {"conditions": conditions, "acceptedNames": names, "storedVersions": stored}


def custom_schema(store: Store, info: ResourceInfo, api_version: str) -> Obj | None:
    """The ``openAPIV3Schema`` of ``api_version`` of the custom resource ``info`` (its CRD's), if it has one;
    ``Invalid`` if its CRD does not serve that version."""
    try:
        crd = store.get(CRDS, None, str(info.custom), copy=False)
    except NotFound:
        return None
    version = api_version.rpartition("/")[2]
    spec = next((v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("name") == version), None)
    if spec is None or custom_resource(crd) is None:
        raise Invalid(f"version {version} of {info.name} is not served")
    schema = (spec.get("schema") or {}).get("openAPIV3Schema")
    return schema if isinstance(schema, dict) else None


def delete_custom_objects(store: Store, crd: Obj) -> None:
    """Delete every object of the kind ``crd`` defines, before the CRD goes (``customresourcecleanup``)."""
    info = custom_resource(crd)
    if info is None or info.name not in getattr(store, "resources", {}):
        return
    items, _ = store.list(info.name, copy=False)
    for item in items:
        item_meta = item.get("metadata") or {}
        with contextlib.suppress(NotFound):
            store.delete(info.name, item_meta.get("namespace") if info.namespaced else None, str(item_meta.get("name")))
