"""CustomResourceDefinitions (``apiextensions-apiserver``): checking a CRD, establishing it, and applying its
schema to the custom resources it defines.

A CRD is checked as kube-apiserver does for what serving it needs (its name is ``<plural>.<group>``, names
and scope given, one storage version, a schema per version) and is *established* at once: the store serves
its resource from the moment it is stored, so a bundle can create a CRD and then its objects.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from pumice.store import CRDS, Invalid, NotFound, Store, custom_resource

from .schema import apply_schema

__all__ = ["admit_crd", "admit_custom_resource", "delete_custom_objects"]

Obj = dict[str, Any]
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


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
    if not plural or not _DNS_LABEL.match(plural):
        problems.append(f'spec.names.plural: Invalid value: "{plural}": a lowercase RFC 1123 label is required')
    if not kind or not _KIND.match(kind):
        problems.append(f'spec.names.kind: Invalid value: "{kind}": a CamelCase kind is required')
    if group and plural and name != f"{plural}.{group}":
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
        if not _DNS_LABEL.match(version_name):
            problems.append(f'spec.versions[{i}].name: Invalid value: "{version_name}": a DNS-1035 label is required')
        if version_name in seen:
            problems.append(f'spec.versions[{i}].name: Duplicate value: "{version_name}"')
        seen.add(version_name)
        schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            problems.append(f"spec.versions[{i}].schema.openAPIV3Schema: Required value: schemas are required")
        elif schema.get("type") != "object":
            problems.append(f'spec.versions[{i}].schema.openAPIV3Schema.type: Unsupported value: '
                            f'"{schema.get("type") or ""}": supported values: "object"')
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
    names.setdefault("singular", kind.lower())
    names.setdefault("listKind", f"{kind}List")
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


def admit_custom_resource(store: Store, resource: str, obj: Obj) -> Obj:
    """The custom resource defaulted and pruned by its version's schema; ``Invalid`` with every problem."""
    info = store.resources.info(resource) if hasattr(store, "resources") else None  # type: ignore[attr-defined]
    if info is None or not info.custom:
        return obj
    try:
        crd = store.get(CRDS, None, info.custom, copy=False)
    except NotFound:
        return obj
    api_version = str(obj.get("apiVersion") or info.api_version)
    version = api_version.rpartition("/")[2]
    spec = next((v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("name") == version), None)
    if spec is None or custom_resource(crd) is None:
        raise Invalid(f'{info.kind} "{(obj.get("metadata") or {}).get("name")}": version {version} of '
                      f"{info.name} is not served")
    schema = (spec.get("schema") or {}).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return obj
    out, problems = apply_schema(obj, schema)
    if problems:
        raise Invalid(f'{info.kind}.{info.group} "{(obj.get("metadata") or {}).get("name")}" is invalid: '
                      f'{"; ".join(problems)}')
    return out


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
