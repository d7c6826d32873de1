"""``pumice.api.validation``: what kube-apiserver checks before it stores an object, for every kind pumice serves.

Two stages, as on a real cluster:

1. **decoding** (:meth:`Validator.prepare`): a built-in kind's body must decode into its Go type (field types
   from :mod:`.kubetypes`), else ``400 BadRequest``; a custom kind's metadata likewise, and its body is pruned
   and defaulted by its structural schema (:mod:`.structural`);
2. **validation** (:meth:`Validator.validate`): the metadata rules (:mod:`.meta`) and the kind's own
   (:mod:`.core`, :mod:`.pods`; a custom kind's OpenAPI v3 schema), every problem found, ``422 Invalid`` with a
   cause per bad field.

Volcano's kinds are custom kinds: their schema is the one ``pumice crds`` installs on a cluster
(:func:`pumice.api.schema.openapi_schema`), so an object is admitted embedded exactly when a real cluster
would admit it. A custom kind that pumice has no model of (a user's CRD) brings its own schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from .core import BUILT_IN, KindRules
from .decode import decode_problem
from .errors import FieldError, Refusal, format_errors, invalid_status, qualified_kind, undecodable_status
from .kubetypes import TypeTable, load_table
from .meta import validate_meta, validate_meta_update
from .pods import validate_pod_spec, validate_pod_template
from .structural import apply_structural_schema

__all__ = [
    "FieldError",
    "KindRef",
    "Refusal",
    "Validator",
    "format_errors",
    "invalid_refusal",
    "validate_pod_spec",
    "validate_pod_template",
    "volcano_schema",
]

Obj = dict[str, Any]
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_DEFAULT_RULES = KindRules()


@dataclass(frozen=True, slots=True)
class KindRef:
    """The kind an object is validated as: its API version, kind and scope."""

    api_version: str
    kind: str
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


@cache
def volcano_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    """The ``openAPIV3Schema`` that ``pumice crds`` gives a custom kind of pumice's registry (None if none)."""
    from pumice.api.registry import MODELS
    from pumice.api.schema import is_custom, openapi_schema

    for model in MODELS:
        if api_version == model.API_VERSION and kind == model.KIND and is_custom(model):
            return openapi_schema(model)
    return None


def invalid_refusal(ref: KindRef, name: str, errors: list[FieldError]) -> Refusal:
    """The ``422 Invalid`` refusal (a cause per bad field) of an object with ``errors``."""
    return Refusal(invalid_status(ref.kind, ref.group, name, errors))


def _undecodable(ref: KindRef, problem: str) -> Refusal:
    return Refusal(undecodable_status(ref.kind, ref.api_version, problem))


SchemaLookup = Callable[[str, str], dict[str, Any] | None]


class Validator:
    """Kubernetes' decoding and validation rules, for built-in kinds and custom kinds with a schema.

    ``schemas(api_version, kind)`` gives a custom kind's schema (by default: Volcano's, from pumice's models);
    a kind that is neither built in nor has a schema gets the metadata rules only.
    """

    def __init__(self, table: TypeTable | None = None, schemas: SchemaLookup = volcano_schema) -> None:
        self.table = table if table is not None else load_table()
        self.schemas = schemas

    def _definition(self, ref: KindRef) -> str | None:
        return self.table.kind(ref.api_version, ref.kind)

    def prepare(self, ref: KindRef, obj: Obj, *, create: bool) -> Obj:
        """Decode ``obj`` as its kind: a ``400`` ``Refusal`` where kube-apiserver cannot, else the object to admit (a
        custom kind's pruned and defaulted by its schema; a new object only where anything changed)."""
        definition = self._definition(ref)
        if definition is not None:
            problem = decode_problem(self.table, definition, obj)
            if problem is not None:
                raise _undecodable(ref, problem)
            return obj
        meta = obj.get("metadata")
        if meta is not None:
            problem = decode_problem(self.table, _OBJECT_META, meta)
            if problem is not None:
                raise _undecodable(ref, problem)
        schema = self.schemas(ref.api_version, ref.kind)
        if schema is None:
            return obj
        return apply_structural_schema(obj, schema).object

    def problems(
        self, ref: KindRef, obj: Obj, old: Obj | None = None, *, skip_status: bool = False
    ) -> list[FieldError]:
        """Every rule ``obj`` breaks (as a new object, or as an update of ``old``)."""
        meta = obj.get("metadata") if type(obj.get("metadata")) is dict else {}
        group = ref.group
        builtin = self._definition(ref) is not None
        rules = BUILT_IN.get((group, ref.kind), _DEFAULT_RULES)
        core = builtin and "." not in group
        if old is None:
            errors = validate_meta(meta, namespaced=ref.namespaced, name_check=rules.name, core=core)
        else:
            old_meta = old.get("metadata") if type(old.get("metadata")) is dict else {}
            errors = validate_meta_update(meta, old_meta, core=core)
        if builtin:
            errors += rules.create(obj)
            if old is not None:
                errors += rules.update(obj, old)
            return errors
        schema = self.schemas(ref.api_version, ref.kind)
        if schema is not None:
            skip = ("status",) if skip_status else ()
            errors += apply_structural_schema(obj, schema, skip=skip).errors
        return errors

    def validate(self, ref: KindRef, obj: Obj, old: Obj | None = None, *, skip_status: bool = False) -> None:
        """A ``422 Invalid`` ``Refusal`` (a cause per bad field) if ``obj`` breaks any rule of its kind."""
        errors = self.problems(ref, obj, old, skip_status=skip_status)
        if errors:
            name = (obj.get("metadata") or {}).get("name") or ""
            raise invalid_refusal(ref, str(name), errors)

    def qualified(self, ref: KindRef) -> str:
        return qualified_kind(ref.kind, ref.group)
