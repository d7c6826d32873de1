"""OpenAPI v3 schemas of the custom kinds, made from the models, and the CRDs that carry them.

One schema per kind, used wherever that kind is admitted: ``pumice crds`` puts it in the
CustomResourceDefinitions a real cluster is prepared with, and the embedded API server validates
Volcano's custom resources with the same schema and serves it for ``kubectl explain``.

How a model becomes a structural schema:

- field types: ``str`` -> string, ``Int`` -> integer, ``StrictBool`` -> boolean, ``Quantity`` -> an
  int-or-string with Kubernetes' quantity pattern, ``list[X]`` -> array, ``dict[str, X]`` -> object with
  ``additionalProperties``, ``Any`` -> any value (``x-kubernetes-preserve-unknown-fields``), a model ->
  object with its fields as properties (wire names);
- the rules given with :func:`pumice.api.base.openapi` on a field (Volcano's CRD markers: defaults,
  bounds, enums, patterns, required fields), and those pydantic itself enforces: a field without a default
  is required, ``Literal`` is an enum, ``Field(ge=, le=, min_length=, max_length=, pattern=)`` are bounds;
- Kubernetes' own types (``pumice.api.core``, ``pumice.api.meta``) are modelled only in part, so their
  schemas keep the fields they do not name: a pod template carries every PodSpec field to the API
  server. Volcano's types are modelled whole: a field they do not know is pruned, as Volcano's CRDs do;
- an object's top-level ``metadata`` is ``{type: object}`` (the API server owns its schema).

The custom kinds are those of the API registry (:data:`pumice.api.registry.MODELS`) whose API group is
not one of Kubernetes' own: a kind added there gets its CRD without any change here.
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, Literal, Union

import annotated_types
from pydantic.fields import FieldInfo

from pumice.api.base import ApiModel, Quantity
from pumice.api.meta import KubeObject
from pumice.api.registry import MODELS

__all__ = [
    "QUANTITY_PATTERN",
    "SchemaError",
    "crd_for",
    "crd_name",
    "crds",
    "custom_kinds",
    "is_custom",
    "openapi_schema",
]

#: ``resource.Quantity``'s pattern, as Kubernetes' generated schemas declare it.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)"
    r"|(\.[0-9]+))))?$"
)
#: Modules whose models are Kubernetes types of which only the fields pumice reads are modelled.
_PARTIAL_MODULES = frozenset({"pumice.api.core", "pumice.api.meta"})
#: Rules that are not schema keywords of the field itself.
_PLACEMENT_RULES = frozenset({"required", "items"})
_QUANTITY_CHECK = typing.get_args(Quantity)[1]  # the BeforeValidator that makes a str a quantity
_QUANTITY_SCHEMA: dict[str, Any] = {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": QUANTITY_PATTERN,
                                    "x-kubernetes-int-or-string": True}


class SchemaError(TypeError):
    """A model field whose type has no structural schema (a programming error, raised at generation)."""


def is_custom(model: type[KubeObject]) -> bool:
    """Whether a kind is served through a CRD: its group has a dot and is not Kubernetes' (``*.k8s.io``)."""
    group = model.API_VERSION.rpartition("/")[0]
    return "." in group and not group.endswith(".k8s.io")


def custom_kinds(models: Iterable[type[KubeObject]] = MODELS) -> tuple[type[KubeObject], ...]:
    """The custom kinds among ``models`` (by default every registered kind), in registry order."""
    return tuple(m for m in models if is_custom(m))


def crd_name(model: type[KubeObject]) -> str:
    """``jobs.batch.volcano.sh``: the CRD's name (plural.group)."""
    return f"{model.PLURAL}.{model.API_VERSION.rpartition('/')[0]}"


def openapi_schema(model: type[KubeObject]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of a kind: a fresh copy, the caller may change it."""
    return copy.deepcopy(_root_schema(model))


@cache
def _root_schema(model: type[KubeObject]) -> dict[str, Any]:
    schema = _object_schema(model, root=True, partial=False, seen=(model,))
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


def crd_for(models: Iterable[type[KubeObject]]) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind, with a version per model (the first one stored)."""
    versions = list(models)
    if not versions:
        raise ValueError("crd_for needs at least one model")
    first = versions[0]
    group = first.API_VERSION.rpartition("/")[0]
    names: dict[str, Any] = {
        "kind": first.KIND,
        "listKind": f"{first.KIND}List",
        "plural": first.PLURAL,
        "singular": first.KIND.lower(),
    }
    if first.SHORT_NAMES:
        names["shortNames"] = list(first.SHORT_NAMES)
    out_versions = []
    for index, model in enumerate(versions):
        version: dict[str, Any] = {"name": model.API_VERSION.rpartition("/")[2], "served": True,
                                   "storage": index == 0}
        if model.PRINTER_COLUMNS:
            version["additionalPrinterColumns"] = [c.definition() for c in model.PRINTER_COLUMNS]
        version["schema"] = {"openAPIV3Schema": openapi_schema(model)}
        if "status" in model.model_fields:
            version["subresources"] = {"status": {}}
        out_versions.append(version)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name(first), "labels": {"app.kubernetes.io/part-of": "pumice"}},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced" if first.NAMESPACED else "Cluster",
            "versions": out_versions,
        },
    }


def crds(models: Iterable[type[KubeObject]] = MODELS) -> list[dict[str, Any]]:
    """The CRDs of every custom kind among ``models``, one per (group, kind), sorted by name."""
    by_kind: dict[tuple[str, str], list[type[KubeObject]]] = {}
    for model in custom_kinds(models):
        by_kind.setdefault((model.API_VERSION.rpartition("/")[0], model.KIND), []).append(model)
    return sorted((crd_for(group) for group in by_kind.values()), key=lambda c: c["metadata"]["name"])


# ---------------------------------------------------------------------------- models -> schemas


def _is_partial(model: type[ApiModel]) -> bool:
    return model.__module__ in _PARTIAL_MODULES


def _rules(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def _object_schema(
    model: type[ApiModel], *, root: bool, partial: bool, seen: tuple[type[ApiModel], ...]
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        wire = info.alias or name
        rules = _rules(info)
        try:
            if _QUANTITY_CHECK in info.metadata:  # a required quantity: pydantic hoists the validator here
                schema = copy.deepcopy(_QUANTITY_SCHEMA)
            else:
                schema = _schema_for(info.annotation, rules.get("items"), seen, field=True)
        except SchemaError as err:
            raise SchemaError(f"{model.__name__}.{name}: {err}") from None
        schema.update(_constraints(info.metadata, schema))
        schema.update({k: copy.deepcopy(v) for k, v in rules.items() if k not in _PLACEMENT_RULES})
        if info.description:
            schema.setdefault("description", info.description)
        properties[wire] = schema
        if rules.get("required") or info.is_required():
            required.append(wire)
    out: dict[str, Any] = {"type": "object", "properties": dict(sorted(properties.items()))}
    if required:
        out["required"] = sorted(required)
    if partial and not root:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _schema_for(
    annotation: Any, items: dict[str, Any] | None, seen: tuple[type[ApiModel], ...], *, field: bool = False
) -> dict[str, Any]:
    """The schema of one type; ``items`` are extra rules for its elements (lists) or values (maps).

    ``X | None`` on a field (``field=True``) is how the models say "may be absent": a null there is dropped by
    the API server, as for Volcano's CRDs. Inside a list or a map it says that the model reads a null: the
    schema lets it through (``nullable``), so that ``plugins: {ssh: }`` keeps its ``ssh``.
    """
    if annotation is Any:
        return {"x-kubernetes-preserve-unknown-fields": True}
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise SchemaError(f"a union of several types ({annotation}) has no structural schema")
        schema = _schema_for(args[0], items, seen, field=field)
        if not field and len(typing.get_args(annotation)) > 1:
            schema["nullable"] = True
        return schema
    if origin is typing.Annotated:
        base, *metadata = typing.get_args(annotation)
        if _QUANTITY_CHECK in metadata:
            return copy.deepcopy(_QUANTITY_SCHEMA)
        schema = _schema_for(base, items, seen, field=field)
        schema.update(_constraints(metadata, schema))
        return schema
    if origin is Literal:
        values = list(typing.get_args(annotation))
        return {**_schema_for(type(values[0]), None, seen), "enum": values}
    if origin in (list, tuple, set, frozenset):
        element = typing.get_args(annotation)[0] if typing.get_args(annotation) else Any
        return {"type": "array", "items": {**_schema_for(element, None, seen), **copy.deepcopy(items or {})}}
    if origin is dict:
        key, value = typing.get_args(annotation) or (str, Any)
        if key is not str:
            raise SchemaError(f"map keys must be strings, not {key}")
        if value is Any:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        each = {**_schema_for(value, None, seen), **copy.deepcopy(items or {})}
        return {"type": "object", "additionalProperties": each}
    if annotation is str:
        return {"type": "string"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if isinstance(annotation, type) and issubclass(annotation, ApiModel):
        if annotation in seen:
            raise SchemaError(f"{annotation.__name__} contains itself: a CRD schema cannot be recursive")
        return _object_schema(annotation, root=False, partial=_is_partial(annotation), seen=(*seen, annotation))
    raise SchemaError(f"no OpenAPI schema for the type {annotation!r}")


def _constraints(metadata: Sequence[Any], schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI keywords for the constraints pydantic checks (``Field(ge=0)``, ``Annotated[str, Field(...)]``)."""
    out: dict[str, Any] = {}
    kind = schema.get("type")
    sized = {"array": ("minItems", "maxItems"), "object": ("minProperties", "maxProperties")}.get(
        str(kind), ("minLength", "maxLength"))
    for item in metadata:
        if isinstance(item, FieldInfo):
            out.update(_constraints(item.metadata, schema))
            extra = item.json_schema_extra
            if isinstance(extra, dict):
                out.update({k: copy.deepcopy(v) for k, v in extra.items() if k not in _PLACEMENT_RULES})
        elif isinstance(item, annotated_types.Ge):
            out["minimum"] = item.ge
        elif isinstance(item, annotated_types.Gt):
            out.update(minimum=item.gt, exclusiveMinimum=True)
        elif isinstance(item, annotated_types.Le):
            out["maximum"] = item.le
        elif isinstance(item, annotated_types.Lt):
            out.update(maximum=item.lt, exclusiveMaximum=True)
        elif isinstance(item, annotated_types.MinLen):
            out[sized[0]] = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            out[sized[1]] = item.max_length
        elif isinstance(getattr(item, "pattern", None), str):
            out["pattern"] = item.pattern
    return out
