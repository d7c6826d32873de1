"""Reading and writing manifests: multi-document YAML, JSON objects and arrays, ``kind: List``.

Every problem with a manifest becomes one :class:`~pumice.api.errors.ManifestError` whose
``str()`` names the file, the document (1-based), the object and the field path.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from pumice.api import reader
from pumice.api.errors import ManifestError
from pumice.api.meta import KubeObject
from pumice.api.plain import is_plain
from pumice.api.registry import model_for, parse_object

__all__ = ["dump_json", "dump_yaml", "load_dicts", "load_file", "load_text"]

_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[valid-type, misc]
    """Safe dumper without anchors/aliases (shared sub-objects are written out in full)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    # Multi-line strings (scripts in `command`) read best as literal blocks.
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_str(data)


_Dumper.add_representer(str, _represent_str)


# ---------------------------------------------------------------------------- reading


def load_file(path: str | os.PathLike[str]) -> list[KubeObject]:
    """Read every object of a manifest file (see :func:`load_text`).

    Files larger than :func:`pumice.api.reader.max_file_bytes` are refused unread.
    """
    source = os.fspath(path)
    return load_text(_read(source), source)


def _read(source: str) -> str:
    try:
        return reader.read_text_file(source)  # refused unread past the size limit
    except reader.TooLarge as err:
        raise ManifestError(source, str(err)) from err
    except OSError as err:
        raise ManifestError(source, f"cannot read file: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise ManifestError(source, f"not UTF-8 text: {err.reason} at byte {err.start}") from err


def load_dicts(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The wire form of every object of a manifest file: ``[o.to_dict() for o in load_file(path)]``,
    with the same errors, but an object the model would give back unchanged is not put through it
    (:mod:`pumice.api.plain`), which makes reading a large file several times faster."""
    source = os.fspath(path)
    text = _read(source)
    # YAML anchors make one Python object appear at several places: build those through the model, so
    # that every object read is a document of its own, as the model's copies are.
    fast = "&" not in text or text.lstrip()[:1] in ("{", "[")
    out: list[dict[str, Any]] = []
    for document, data in _documents(text, source):
        for prefix, raw in _objects_in(data, document, source):
            if fast and type(raw) is dict:
                api_version, kind = raw.get("apiVersion"), raw.get("kind")
                if (type(api_version) is str and api_version and type(kind) is str and kind
                        and is_plain(model_for(api_version, kind), raw)):
                    out.append(raw)
                    continue
            out.append(_build(raw, prefix, document, source).to_dict())
    return out


def load_text(text: str, source: str = "<stdin>") -> list[KubeObject]:
    """Objects of a manifest, in file order.

    Accepts multi-document YAML, a JSON object, a JSON array of objects, and lists
    (``kind: List`` or ``*List`` with ``items``; a YAML/JSON sequence of objects). Unknown
    kinds come back as :class:`~pumice.api.registry.GenericObject`. Empty documents are
    skipped. Raises :class:`ManifestError`, also for text beyond the limits of
    :mod:`pumice.api.reader` (nesting, YAML aliases).
    """
    objects: list[KubeObject] = []
    for document, data in _documents(text, source):
        for prefix, raw in _objects_in(data, document, source):
            objects.append(_build(raw, prefix, document, source))
    return objects


def _documents(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """``(document number, parsed data)``, JSON tried first when the text looks like JSON."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            yield 1, reader.load_json(text)
            return
        except reader.InputError as err:
            raise ManifestError(source, str(err), document=1) from err
        except json.JSONDecodeError as err:
            json_error = err
        except ValueError as err:  # an integer beyond Python's digit limit
            raise ManifestError(source, f"invalid JSON: {err}", document=1) from err
        try:  # flow-style YAML also starts with a bracket
            documents = list(_yaml_documents(text, source))
        except ManifestError:
            message = f"invalid JSON at line {json_error.lineno} column {json_error.colno}: {json_error.msg}"
            raise ManifestError(source, message, document=1) from json_error
        yield from documents
        return
    yield from _yaml_documents(text, source)


def _yaml_documents(text: str, source: str) -> Iterator[tuple[int, Any]]:
    try:
        reader.check_yaml(text)
        loader = reader.Loader(reader.scrub_surrogates(text))
    except reader.InputError as err:
        raise ManifestError(source, str(err), document=getattr(err, "document", None)) from err
    except yaml.YAMLError as err:  # the pure-Python reader checks every character up front
        raise ManifestError(source, _yaml_message(err, text)) from err
    count = 0
    try:
        while True:
            try:
                if not loader.check_data():
                    return
                data = loader.get_data()
            except (yaml.YAMLError, ValueError) as err:
                if not isinstance(err, yaml.YAMLError):  # an integer beyond Python's digit limit
                    raise ManifestError(source, f"invalid YAML: {err}", document=count + 1) from err
                if isinstance(err, yaml.reader.ReaderError):
                    # Bad characters are found by a buffered reader, ahead of the parser:
                    # the document is unknown, the position is exact.
                    raise ManifestError(source, _yaml_message(err, text)) from err
                raise ManifestError(source, _yaml_message(err, text), document=count + 1) from err
            count += 1
            yield count, data
    finally:
        loader.dispose()


def _yaml_message(err: yaml.YAMLError, text: str) -> str:
    if isinstance(err, yaml.reader.ReaderError):
        line = text.count("\n", 0, err.position) + 1
        column = err.position - (text.rfind("\n", 0, err.position) + 1) + 1
        return f"invalid YAML at line {line} column {column}: character #x{err.character:04x} is not allowed"
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "syntax error"
        if mark is not None:
            return f"invalid YAML at line {mark.line + 1} column {mark.column + 1}: {problem}"
        return f"invalid YAML: {problem}"
    return f"invalid YAML: {err}"


def _objects_in(data: Any, document: int, source: str) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """The objects of one document, each with its path prefix inside the document."""
    if data is None:
        return
    if isinstance(data, list):
        for index, item in enumerate(data):
            yield (index,), item
        return
    if isinstance(data, Mapping):
        kind = data.get("kind")
        items = data.get("items")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            for index, item in enumerate(items):
                yield ("items", index), item
            return
        yield (), data
        return
    raise ManifestError(source, f"expected an object (a mapping), got {_describe(data)}", document=document)


def _build(raw: Any, prefix: tuple[str | int, ...], document: int, source: str) -> KubeObject:
    def fail(path: tuple[str | int, ...], message: str, obj: str | None = None) -> ManifestError:
        return ManifestError(source, message, document=document, obj=obj, path=_format_path(prefix + path))

    if not isinstance(raw, Mapping):
        raise fail((), f"expected an object (a mapping), got {_describe(raw)}")
    label = _label(raw)
    for field in ("apiVersion", "kind"):
        value = raw.get(field)
        if value is None:
            raise fail((field,), "required field is missing", label)
        if not isinstance(value, str) or not value:
            raise fail((field,), f"must be a non-empty string, got {_describe(value)}", label)
    try:
        obj = parse_object(raw)
    except ValidationError as err:
        errors = err.errors()
        first = errors[0]
        message = _validation_message(first)
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
        raise fail(tuple(first["loc"]), message, label) from None
    if not obj.metadata.name and not obj.metadata.generate_name:
        raise fail(("metadata", "name"), "required field is missing", label)
    return obj


def _label(raw: Mapping[str, Any]) -> str | None:
    """``Kind ns/name`` as far as the raw object tells."""
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind:
        return None
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return kind
    if isinstance(namespace, str) and namespace:
        return f"{kind} {namespace}/{name}"
    return f"{kind} {name}"


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def _format_path(parts: Iterable[str | int]) -> str:
    """``("spec", "containers", 0, "resources")`` -> ``spec.containers[0].resources``.

    Map keys that are not plain words (``nvidia.com/gpu``) are written in brackets, JSON-quoted when they hold
    characters that do not print (a newline would break the one-line error).
    """
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part}]" if part.isprintable() else f"[{json.dumps(part)}]"
    return out


def _validation_message(error: ErrorDetails) -> str:
    if error["type"] == "missing":
        return "required field is missing"
    message = error["msg"]
    if error["type"] == "invalid_quantity":
        return message
    message = re.sub(r" or instance of \w+", "", message)
    message = message[:1].lower() + message[1:]
    return f"{message}, got {_describe(error.get('input'))}"


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return json.dumps(value)
    return type(value).__name__


# ---------------------------------------------------------------------------- writing


def _as_list(objs: KubeObject | Iterable[KubeObject]) -> list[KubeObject]:
    return [objs] if isinstance(objs, KubeObject) else list(objs)


def dump_yaml(objs: KubeObject | Iterable[KubeObject]) -> str:
    """Multi-document YAML (``---`` between objects), wire field names, field order kept."""
    return "---\n".join(
        yaml.dump(
            obj.to_dict(),
            Dumper=_Dumper,
            sort_keys=False,
            default_flow_style=False,
            allow_unicode=True,
            width=10_000,
        )
        for obj in _as_list(objs)
    )


def dump_json(objs: KubeObject | Iterable[KubeObject]) -> str:
    """JSON like ``kubectl -o json``: one object as itself, several as a ``v1`` ``List``."""
    items = [obj.to_dict() for obj in _as_list(objs)]
    data: dict[str, Any] = (
        items[0] if len(items) == 1 else {"apiVersion": "v1", "kind": "List", "items": items}
    )
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
