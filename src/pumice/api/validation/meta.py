"""``ObjectMeta`` rules (``k8s.io/apimachinery/pkg/api/validation/objectmeta.go``): names, namespace, labels,
annotations, owner references, finalizers; and what an update may not change."""

from __future__ import annotations

from typing import Any

from .errors import FieldError, forbidden, invalid, required, too_long
from .names import NameCheck, is_dns1123_label, is_label_value, is_qualified_name

__all__ = [
    "STANDARD_FINALIZERS",
    "TOTAL_ANNOTATION_SIZE",
    "validate_annotations",
    "validate_labels",
    "validate_meta",
    "validate_meta_update",
]

#: Annotations of one object, keys and values together, at most (bytes).
TOTAL_ANNOTATION_SIZE = 256 * 1024
#: Finalizer names that need no domain prefix on core kinds.
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_IMMUTABLE = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")
_LABELS_OK: set[tuple[tuple[str, str], ...]] = set()  # label sets found valid (a workload repeats a few of them)


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """Keys are qualified names, values label values (errors name the map, as Kubernetes' do)."""
    if not labels or type(labels) is not dict:
        return []
    errors: list[FieldError] = []
    for key in sorted(labels):
        value = labels[key]
        errors.extend(invalid(path, key, msg) for msg in is_qualified_name(key))
        if type(value) is str:
            errors.extend(invalid(path, value, msg) for msg in is_label_value(value))
    return errors


def _labels(labels: Any, path: str) -> list[FieldError]:
    if not labels or type(labels) is not dict:
        return []
    key = tuple(labels.items())
    if len(key) <= 8 and key in _LABELS_OK:
        return []
    errors = validate_labels(labels, path)
    if not errors and len(key) <= 8:
        if len(_LABELS_OK) >= 4096:
            _LABELS_OK.clear()
        _LABELS_OK.add(key)
    return errors


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    if not annotations or type(annotations) is not dict:
        return []
    errors: list[FieldError] = []
    size = 0
    for key in sorted(annotations):
        errors.extend(invalid(path, key, msg) for msg in is_qualified_name(key.lower()))
        value = annotations[key]
        size += len(key.encode()) + (len(value.encode()) if type(value) is str else 0)
    if size > TOTAL_ANNOTATION_SIZE:
        errors.append(too_long(path, TOTAL_ANNOTATION_SIZE))
    return errors


def _owner_references(refs: Any, path: str) -> list[FieldError]:
    if not refs or type(refs) is not list:
        return []
    errors: list[FieldError] = []
    controller = ""
    for ref in refs:
        if type(ref) is not dict:
            continue
        api_version = ref.get("apiVersion") or ""
        if not api_version.rpartition("/")[2]:
            errors.append(invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        for field in ("kind", "name", "uid"):
            if not ref.get(field):
                errors.append(invalid(f"{path}.{field}", ref.get(field) or "", f"{field} must not be empty"))
        if api_version == "v1" and ref.get("kind") == "Event":
            errors.append(invalid(path, ref, "/v1, Kind=Event is disallowed from being an owner"))
        if ref.get("controller") is True:
            if controller:
                errors.append(invalid(path, refs, "Only one reference can have Controller set to true. Found "
                                                  f'"true" in references for {controller} and {ref.get("name")}'))
            else:
                controller = str(ref.get("name") or "")
    return errors


def _finalizers(finalizers: Any, path: str, core: bool) -> list[FieldError]:
    if not finalizers or type(finalizers) is not list:
        return []
    errors: list[FieldError] = []
    for index, name in enumerate(finalizers):
        if type(name) is not str:
            continue
        problems = is_qualified_name(name)
        if problems:
            errors.extend(invalid(path, name, msg) for msg in problems)
        elif core and "/" not in name and name not in STANDARD_FINALIZERS:
            errors.append(invalid(f"{path}[{index}]", name,
                                  "name is neither a standard finalizer name nor is it fully qualified"))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errors.append(invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
    return errors


def validate_meta(
    meta: dict[str, Any], *, namespaced: bool, name_check: NameCheck, core: bool, path: str = "metadata"
) -> list[FieldError]:
    """A new object's metadata (``ValidateObjectMeta``). ``core``: the kind is one of Kubernetes' own, whose
    finalizers must be standard or domain-qualified."""
    errors: list[FieldError] = []
    generate = meta.get("generateName")
    if generate and type(generate) is str:
        errors.extend(invalid(f"{path}.generateName", generate, msg) for msg in name_check(generate, True))
    name = meta.get("name")
    if not name:
        errors.append(required(f"{path}.name", "name or generateName is required"))
    elif type(name) is str:
        errors.extend(invalid(f"{path}.name", name, msg) for msg in name_check(name, False))
    namespace = meta.get("namespace")
    if namespaced:
        if not namespace:
            errors.append(required(f"{path}.namespace"))
        elif type(namespace) is str:
            errors.extend(invalid(f"{path}.namespace", namespace, msg) for msg in is_dns1123_label(namespace))
    elif namespace:
        errors.append(forbidden(f"{path}.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if type(generation) is int and generation < 0:
        errors.append(invalid(f"{path}.generation", generation, "must be greater than or equal to 0"))
    errors += _labels(meta.get("labels"), f"{path}.labels")
    errors += validate_annotations(meta.get("annotations"), f"{path}.annotations")
    errors += _owner_references(meta.get("ownerReferences"), f"{path}.ownerReferences")
    errors += _finalizers(meta.get("finalizers"), f"{path}.finalizers", core)
    return errors


def validate_meta_update(
    new: dict[str, Any], old: dict[str, Any], *, core: bool, path: str = "metadata"
) -> list[FieldError]:
    """An update's metadata (``ValidateObjectMetaUpdate``): what may not change, and the rules of a create
    that still apply (labels, annotations, owner references, finalizers)."""
    errors: list[FieldError] = []
    if old.get("deletionTimestamp"):
        added = [f for f in new.get("finalizers") or () if f not in (old.get("finalizers") or ())]
        if added:
            errors.append(forbidden(f"{path}.finalizers", "no new finalizers can be added if the object is being "
                                                          f"deleted, found new finalizers {added!r}".replace("'", '"')))
    new_generation, old_generation = new.get("generation"), old.get("generation")
    if type(new_generation) is int and type(old_generation) is int and new_generation < old_generation:
        errors.append(invalid(f"{path}.generation", new_generation, "must not be decremented"))
    for field in _IMMUTABLE:
        if new.get(field) != old.get(field):
            errors.append(invalid(f"{path}.{field}", new.get(field), "field is immutable"))
    errors += _labels(new.get("labels"), f"{path}.labels")
    errors += validate_annotations(new.get("annotations"), f"{path}.annotations")
    errors += _owner_references(new.get("ownerReferences"), f"{path}.ownerReferences")
    errors += _finalizers(new.get("finalizers"), f"{path}.finalizers", core)
    return errors
