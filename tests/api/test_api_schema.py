"""The CRD schemas made from the models (``pumice.api.schema``) and ``pumice crds``.

Whether the real kube-apiserver accepts them and enforces them is ``tests/kube/test_kube_crds.py``; here:
every custom kind of the registry gets a structural schema naming every field of its model, with
Volcano's names, scope, printer columns and rules.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, ClassVar, Literal

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field
from typer.testing import CliRunner

from pumice.api import MODELS, ApiModel, Int, KubeObject, Quantity, ResourceList
from pumice.api.base import openapi
from pumice.api.meta import PrinterColumn
from pumice.api.schema import QUANTITY_PATTERN, SchemaError, crds, custom_kinds, is_custom, openapi_schema
from pumice.cli.main import app

# What Volcano's own CRDs declare (config/crd/volcano/bases at ed72c7c8): names, scope, printer columns.
VOLCANO = {
    "jobs.batch.volcano.sh": ("Job", "Namespaced", ["vcjob", "vj"],
                              ["STATUS", "minAvailable", "RUNNINGS", "AGE", "QUEUE"]),
    "commands.bus.volcano.sh": ("Command", "Namespaced", None, None),
    "podgroups.scheduling.volcano.sh": ("PodGroup", "Namespaced", ["pg", "podgroup-v1beta1"],
                                        ["STATUS", "minMember", "RUNNINGS", "AGE", "QUEUE"]),
    "queues.scheduling.volcano.sh": ("Queue", "Cluster", ["q", "queue-v1beta1"], ["PARENT"]),
    "hypernodes.topology.volcano.sh": ("HyperNode", "Cluster", ["hn"], ["Tier", "TierName", "NodeCount", "Age"]),
}


def _by_name() -> dict[str, dict[str, Any]]:
    return {crd["metadata"]["name"]: crd for crd in crds()}


def _schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def _structural_problems(schema: dict[str, Any], path: str = "") -> list[str]:
    """Kubernetes' structural-schema rules (apiextensions v1) that a generator can break."""
    problems = []
    special = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    if "type" not in schema and not special:
        problems.append(f"{path or '<root>'}: no type")
    if "$ref" in schema:
        problems.append(f"{path}: $ref")
    if "anyOf" in schema and not schema.get("x-kubernetes-int-or-string"):
        problems.append(f"{path}: anyOf outside int-or-string")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: both properties and additionalProperties")
    if schema.get("type") == "array" and "items" not in schema:
        problems.append(f"{path}: array without items")
    for name, sub in (schema.get("properties") or {}).items():
        problems += _structural_problems(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        problems += _structural_problems(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += _structural_problems(schema["additionalProperties"], f"{path}{{}}")
    for key in schema.get("required") or []:
        if key not in (schema.get("properties") or {}):
            problems.append(f"{path}: required {key} is not a property")
    return problems


def test_every_custom_kind_of_the_registry_has_a_crd_with_volcanos_names_and_columns() -> None:
    by_name = _by_name()
    assert set(by_name) == {f"{m.PLURAL}.{m.API_VERSION.rpartition('/')[0]}" for m in custom_kinds()}
    assert set(VOLCANO) <= set(by_name)
    for name, (kind, scope, short, columns) in VOLCANO.items():
        spec = by_name[name]["spec"]
        assert spec["names"]["kind"] == kind and spec["names"]["listKind"] == f"{kind}List"
        assert spec["names"].get("shortNames") == short, name
        assert spec["scope"] == scope
        version = spec["versions"][0]
        assert version["served"] and version["storage"]
        assert [c["name"] for c in version.get("additionalPrinterColumns") or []] == (columns or [])
        # Commands have no status; every other kind's status is written through its subresource.
        assert ("subresources" in version) == (kind != "Command")
    queue_wide = by_name["jobs.batch.volcano.sh"]["spec"]["versions"][0]["additionalPrinterColumns"][-1]
    assert queue_wide == {"name": "QUEUE", "type": "string", "jsonPath": ".spec.queue", "priority": 1}


def test_built_in_kinds_get_no_crd() -> None:
    assert not any(is_custom(m) for m in MODELS if m.API_VERSION in ("v1", "scheduling.k8s.io/v1"))
    assert all(is_custom(m) for m in custom_kinds())


@pytest.mark.parametrize("name", sorted(_by_name()))
def test_schemas_are_structural(name: str) -> None:
    schema = _schema_of(_by_name()[name])
    assert _structural_problems(schema) == []
    assert schema["properties"]["metadata"] == {"type": "object"}


def _fields_missing(model: type[ApiModel], schema: dict[str, Any], path: str) -> list[str]:
    """Model fields without a property in the schema, recursively through nested models."""
    import typing

    missing = []
    for name, info in model.model_fields.items():
        wire = info.alias or name
        prop = (schema.get("properties") or {}).get(wire)
        if prop is None:
            missing.append(f"{path}.{wire}")
            continue
        for arg in _model_args(info.annotation, typing):
            sub = prop
            while "properties" not in sub and ("items" in sub or "additionalProperties" in sub):
                sub = sub.get("items") or sub.get("additionalProperties")
            if wire == "metadata" and "." not in path:
                continue  # an object's own metadata is the API server's: {type: object}
            if isinstance(arg, type) and issubclass(arg, ApiModel) and path.count(".") < 12:
                missing += _fields_missing(arg, sub, f"{path}.{wire}")
    return missing


def _model_args(annotation: Any, typing: Any) -> list[Any]:
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, ApiModel):
        return [annotation]
    return [a for arg in args for a in _model_args(arg, typing)]


@pytest.mark.parametrize("model", custom_kinds(), ids=lambda m: m.KIND)
def test_every_field_of_the_model_is_in_the_schema(model: type[KubeObject]) -> None:
    assert _fields_missing(model, openapi_schema(model), model.KIND) == []


def test_kubernetes_types_keep_unknown_fields_and_volcano_types_do_not() -> None:
    job = openapi_schema(MODELS[[m.KIND for m in MODELS].index("Job")])
    spec = job["properties"]["spec"]
    task = spec["properties"]["tasks"]["items"]
    template = task["properties"]["template"]
    pod_spec = template["properties"]["spec"]
    container = pod_spec["properties"]["containers"]["items"]
    # pumice models only part of PodSpec: the rest (volumes, securityContext, ...) must reach the cluster.
    assert pod_spec.get("x-kubernetes-preserve-unknown-fields") is True
    assert container.get("x-kubernetes-preserve-unknown-fields") is True
    assert template["properties"]["metadata"].get("x-kubernetes-preserve-unknown-fields") is True
    # Volcano's own types are whole: what they do not know is pruned, as by Volcano's CRDs.
    assert "x-kubernetes-preserve-unknown-fields" not in spec
    assert "x-kubernetes-preserve-unknown-fields" not in task
    assert "x-kubernetes-preserve-unknown-fields" not in job


def test_volcano_rules_are_in_the_schema() -> None:
    by_name = _by_name()
    queue = _schema_of(by_name["queues.scheduling.volcano.sh"])["properties"]["spec"]["properties"]
    assert queue["weight"] == {"type": "integer", "default": 1, "minimum": 1, "maximum": 65535}
    assert queue["capability"]["additionalProperties"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }
    assert queue["dequeueStrategy"]["enum"] == ["fifo", "traverse"]
    hypernode = _schema_of(by_name["hypernodes.topology.volcano.sh"])["properties"]["spec"]
    assert hypernode["required"] == ["tier"]
    assert hypernode["properties"]["members"]["minItems"] == 1
    assert hypernode["properties"]["members"]["items"]["required"] == ["type"]
    job = _schema_of(by_name["jobs.batch.volcano.sh"])["properties"]["spec"]["properties"]
    assert job["queue"]["default"] == "default"
    assert job["tasks"]["items"]["properties"]["partitionPolicy"]["required"] == ["partitionSize",
                                                                                 "totalPartitions"]
    events = job["policies"]["items"]["properties"]["events"]
    assert "PodEvicted" in events["items"]["enum"]
    # A null plugin argument list (``ssh:`` in YAML) is what the model reads: it is let through.
    assert job["plugins"]["additionalProperties"]["nullable"] is True
    # Lists of rules are not shared between places (YAML would write anchors, a mutation would leak).
    topology = job["networkTopology"]["properties"]["mode"]["enum"]
    partition = job["tasks"]["items"]["properties"]["partitionPolicy"]["properties"]["networkTopology"]
    other = partition["properties"]["mode"]["enum"]
    assert topology == other and topology is not other


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(custom_kinds()))
def test_openapi_schema_hands_out_copies(model: type[KubeObject]) -> None:
    first = openapi_schema(model)
    first["properties"].clear()
    assert openapi_schema(model)["properties"]


# -- a kind added to the registry gets its CRD without touching the generator


class _Spec(ApiModel):
    size: Int | None = openapi(required=True, minimum=1)
    flavour: str | None = openapi(enum=["a", "b"])
    limits: ResourceList | None = None
    extra: dict[str, Any] | None = None


class _Status(ApiModel):
    ready: Quantity | None = None


class Widget(KubeObject):
    API_VERSION: ClassVar[str] = "example.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "Widget"
    PLURAL: ClassVar[str] = "widgets"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("wd",)
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (PrinterColumn("SIZE", "integer", ".spec.size"),)

    spec: _Spec | None = None
    status: _Status | None = None


def test_a_new_kind_gets_its_crd_from_its_model_alone() -> None:
    (crd,) = [c for c in crds([*MODELS, Widget]) if c["metadata"]["name"] == "widgets.example.volcano.sh"]
    spec = crd["spec"]
    assert spec["group"] == "example.volcano.sh" and spec["scope"] == "Cluster"
    assert spec["names"]["shortNames"] == ["wd"]
    version = spec["versions"][0]
    assert version["name"] == "v1beta1" and version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == [{"name": "SIZE", "type": "integer", "jsonPath": ".spec.size"}]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert schema["required"] == ["size"]
    assert schema["properties"]["flavour"] == {"type": "string", "enum": ["a", "b"]}
    assert schema["properties"]["extra"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert _structural_problems(version["schema"]["openAPIV3Schema"]) == []


class _Constrained(ApiModel):
    """Constraints pydantic enforces itself (the style of ``pumice.api.flow``) reach the schema as well."""

    port: Annotated[Int, Field(ge=0, le=65535)]
    amount: Quantity
    name: Annotated[str, Field(min_length=1, pattern="^[a-z]+$")] | None = None
    mode: Literal["retain", "delete"] | None = None
    tags: list[str] | None = Field(None, min_length=1, max_length=3)
    ratio: Annotated[int, Field(gt=0, lt=10)] | None = None


def test_pydantic_constraints_become_schema_rules() -> None:
    class Constrained(KubeObject):
        API_VERSION: ClassVar[str] = "example.volcano.sh/v1"
        KIND: ClassVar[str] = "Constrained"
        PLURAL: ClassVar[str] = "constraineds"
        spec: _Constrained | None = None

    spec = openapi_schema(Constrained)["properties"]["spec"]
    assert spec["required"] == ["amount", "port"]
    props = spec["properties"]
    assert props["port"] == {"type": "integer", "minimum": 0, "maximum": 65535}
    assert props["amount"]["x-kubernetes-int-or-string"] is True
    assert props["name"] == {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"}
    assert props["mode"] == {"type": "string", "enum": ["retain", "delete"]}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
    assert props["ratio"] == {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 10,
                              "exclusiveMaximum": True}


def test_a_field_type_without_a_structural_schema_is_an_error_naming_it() -> None:
    class _Bad(ApiModel):
        either: int | str | None = None

    class Bad(KubeObject):
        API_VERSION: ClassVar[str] = "example.volcano.sh/v1"
        KIND: ClassVar[str] = "Bad"
        PLURAL: ClassVar[str] = "bads"
        spec: _Bad | None = None

    with pytest.raises(SchemaError, match=r"_Bad\.either"):
        crds([Bad])


# -- pumice crds


def test_pumice_crds_prints_every_crd_as_yaml_or_json() -> None:
    result = CliRunner().invoke(app, ["crds"])
    assert result.exit_code == 0, result.output
    documents = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert documents == crds()
    assert "&id" not in result.stdout  # no YAML anchors: each schema written out in full
    result = CliRunner().invoke(app, ["crds", "-o", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"apiVersion": "v1", "kind": "List", "items": crds()}


def test_pumice_crds_refuses_an_unknown_output_format() -> None:
    result = CliRunner().invoke(app, ["crds", "-o", "xml"])
    assert result.exit_code == 2
    assert re.search(r"--output must be yaml or json", result.stderr)
