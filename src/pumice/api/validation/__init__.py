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

import copy
import functools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from .core import BUILT_IN, KindRules
from .decode import decode_field, decode_problem, plain_metadata
from .errors import FieldError, Refusal, format_errors, invalid_status, qualified_kind, undecodable_status
from .kubetypes import TypeTable, load_table
from .meta import validate_meta, validate_meta_update
from .pods import validate_pod_spec, validate_pod_template
from .structural import apply_structural_schema

__all__ = [
    "MEMO_SIZE",
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


def _meta_of(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if type(meta) is dict else {}


def _undecodable(ref: KindRef, problem: str) -> Refusal:
    return Refusal(undecodable_status(ref.kind, ref.api_version, problem))


SchemaLookup = Callable[[str, str], dict[str, Any] | None]
_MISS = object()
#: Answers kept by the fast path at most (then forgotten all at once).
MEMO_SIZE = 4096
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


class Validator:
    """Kubernetes' decoding and validation rules, for built-in kinds and custom kinds with a schema.

    ``schemas(api_version, kind)`` gives a custom kind's schema (by default: Volcano's, from pumice's models);
    a kind that is neither built in nor has a schema gets the metadata rules only.

    **Fast path** (``memo=True``): a cluster writes the same few specs many times (every pod of a job, every
    PodGroup of a trace), so the answers about a ``spec`` (built-in kinds) or a body without its metadata (custom
    kinds) are kept, keyed by their exact JSON text; metadata, which names each object, is always checked.
    ``tests/api/test_validation.py`` checks, as a property over random objects, that it answers exactly as the
    full path (``memo=False``).
    """

    def __init__(self, table: TypeTable | None = None, schemas: SchemaLookup = volcano_schema, *,
                 memo: bool = True) -> None:
        self.table = table if table is not None else load_table()
        self.schemas = schemas
        self.memo = memo
        self._answers: dict[tuple[Any, ...], Any] = {}
        # (the value last keyed, its text), per thread and within one write only (``prepare`` then ``problems``):
        # a spec is keyed twice, by its decoding and by its rules
        self._local = threading.local()

    def _definition(self, ref: KindRef) -> str | None:
        return self.table.kind(ref.api_version, ref.kind)

    def _remember(self, key: tuple[Any, ...], value: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept for the next ``value`` of the same JSON text (fast path)."""
        if not self.memo:
            return compute()
        last = getattr(self._local, "last", None)
        if last is not None and last[0] is value:
            text = last[1]
        else:
            try:
                text = _dumps(value)
            except (TypeError, ValueError):  # not plain JSON: nothing to key it by
                return compute()
            self._local.last = (value, text)
        full = (*key, text)
        answer = self._answers.get(full, _MISS)
        if answer is _MISS:
            if len(self._answers) >= MEMO_SIZE:
                self._answers.clear()
            answer = self._answers[full] = compute()
        return answer

    # --- decoding -----------------------------------------------------------------------------------------

    def prepare(self, ref: KindRef, obj: Obj, *, create: bool) -> Obj:
        """Decode ``obj`` as its kind: a ``400`` ``Refusal`` where kube-apiserver cannot, else the object to admit
        (a custom kind's pruned and defaulted by its schema; a new object only where anything changed)."""
        self._local.last = None  # a new write: nothing keyed yet
        definition = self._definition(ref)
        if definition is not None:
            properties = self.table.definitions[definition]["properties"]
            for key, value in obj.items():
                kind = properties.get(key)
                if kind is None or value is None:
                    continue  # unknown fields are dropped by kube-apiserver's decoder
                if key == "metadata" and plain_metadata(value):
                    continue
                if type(value) is dict or type(value) is list:  # spec, status, data...: kept per text
                    problem = self._remember(("decode", definition, key), value,
                                             functools.partial(decode_field, self.table, kind, value, key))
                else:
                    problem = decode_field(self.table, kind, value, key)
                if problem is not None:
                    raise _undecodable(ref, problem)
            return obj
        meta = obj.get("metadata")
        if meta is not None and not plain_metadata(meta):
            problem = decode_problem(self.table, _OBJECT_META, meta) if type(meta) is dict else \
                decode_field(self.table, "@" + _OBJECT_META, meta, "metadata")
            if problem is not None:
                raise _undecodable(ref, problem)
        schema = self.schemas(ref.api_version, ref.kind)
        if schema is None:
            return obj
        body = {k: v for k, v in obj.items() if k != "metadata"}
        pruned, _ = self._custom(ref, schema, body, ())
        if pruned is None:
            return obj  # nothing pruned or defaulted
        out: Obj = {}
        for key, value in obj.items():  # the caller's key order, metadata in its place
            if key == "metadata":
                out[key] = value
            elif key in pruned:
                out[key] = pruned[key]
        out.update((k, v) for k, v in pruned.items() if k not in out)
        return out

    def _custom(self, ref: KindRef, schema: dict[str, Any], body: Obj,
                skip: tuple[str, ...]) -> tuple[Obj | None, list[FieldError]]:
        """A custom kind's body (without metadata) through its schema: the pruned and defaulted body (None if
        unchanged; a copy the caller owns) and the problems found."""

        def compute() -> tuple[Obj | None, list[FieldError]]:
            result = apply_structural_schema(body, schema, skip=skip)
            # == takes 2.0 for 2: the text tells whether a number became an integer
            same = result.object == body and json.dumps(result.object) == json.dumps(body)
            return (None if same else result.object), result.errors

        pruned, errors = self._remember(("schema", ref.api_version, ref.kind, skip), body, compute)
        return (None if pruned is None else copy.deepcopy(pruned)), errors

    # --- validation ---------------------------------------------------------------------------------------

    def problems(
        self, ref: KindRef, obj: Obj, old: Obj | None = None, *, skip_status: bool = False
    ) -> list[FieldError]:
        """Every rule ``obj`` breaks (as a new object, or as an update of ``old``)."""
        try:
            return self._problems(ref, obj, old, skip_status)
        finally:
            self._local.last = None  # the write is decided: its texts are not kept

    def _problems(self, ref: KindRef, obj: Obj, old: Obj | None, skip_status: bool) -> list[FieldError]:
        meta = _meta_of(obj)
        group = ref.group
        definition = self._definition(ref)
        rules = BUILT_IN.get((group, ref.kind), _DEFAULT_RULES)
        core = definition is not None and "." not in group
        if old is None:
            errors = validate_meta(meta, namespaced=ref.namespaced, name_check=rules.name, core=core)
        else:
            errors = validate_meta_update(meta, _meta_of(old), core=core)
        if definition is not None:
            if rules.reads == "spec":
                errors += self._remember(("rules", group, ref.kind), obj.get("spec"), lambda: rules.create(obj))
            elif rules.reads == "body":
                body = {k: v for k, v in obj.items() if k != "metadata"}
                errors += self._remember(("rules", group, ref.kind), body, lambda: rules.create(obj))
            else:
                errors += rules.create(obj)
            if old is not None:
                errors += rules.update(obj, old)
            return errors
        schema = self.schemas(ref.api_version, ref.kind)
        if schema is not None:
            body = {k: v for k, v in obj.items() if k != "metadata"}
            errors += self._custom(ref, schema, body, ("status",) if skip_status else ())[1]
        return errors

    def validate(self, ref: KindRef, obj: Obj, old: Obj | None = None, *, skip_status: bool = False) -> None:
        """A ``422 Invalid`` ``Refusal`` (a cause per bad field) if ``obj`` breaks any rule of its kind."""
        errors = self.problems(ref, obj, old, skip_status=skip_status)
        if errors:
            name = (obj.get("metadata") or {}).get("name") or ""
            raise invalid_refusal(ref, str(name), errors)

    def qualified(self, ref: KindRef) -> str:
        return qualified_kind(ref.kind, ref.group)
