"""Read the Kubernetes protobuf encoding for the few kinds kubectl's typed commands send that way.

``kubectl create namespace|configmap|secret|priorityclass`` and ``kubectl auth can-i|whoami`` POST
``application/vnd.kubernetes.protobuf``: the
magic ``k8s\\0`` then a ``runtime.Unknown`` (typeMeta, raw) whose ``raw`` is the object's generated message.
Only those kinds are decoded here (with the ObjectMeta fields a client sets); any other kind gets ``415``, as
the server answers JSON and YAML bodies only. Proto2 encodes empty optional strings, which read as absent.
"""

from __future__ import annotations

import base64
from typing import Any

from pumice.store import StoreError

__all__ = ["MAGIC", "UnsupportedMediaType", "decode_delete_options", "decode_object"]

MAGIC = b"k8s\x00"


class UnsupportedMediaType(StoreError):
    """A request body in an encoding (or of a kind) this server cannot read."""

    code = 415
    reason = "UnsupportedMediaType"


# A schema: field number -> (JSON name, type); a type is a scalar name or a nested schema.
Schema = dict[int, tuple[str, Any]]

_OBJECT_META: Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    5: ("uid", "string"),
    6: ("resourceVersion", "string"),
    11: ("labels", "map_string"),
    12: ("annotations", "map_string"),
    14: ("finalizers", "repeated_string"),
}

_RESOURCE_ATTRIBUTES: Schema = {
    1: ("namespace", "string"), 2: ("verb", "string"), 3: ("group", "string"), 4: ("version", "string"),
    5: ("resource", "string"), 6: ("subresource", "string"), 7: ("name", "string"),
}
_NON_RESOURCE_ATTRIBUTES: Schema = {1: ("path", "string"), 2: ("verb", "string")}

_KINDS: dict[tuple[str, str], Schema] = {
    # ``kubectl auth can-i``: the reviews it sends (answered, never stored)
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: ("metadata", _OBJECT_META),
        2: ("spec", {1: ("resourceAttributes", _RESOURCE_ATTRIBUTES),
                     2: ("nonResourceAttributes", _NON_RESOURCE_ATTRIBUTES)}),
    },
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): {
        1: ("metadata", _OBJECT_META),
        2: ("spec", {1: ("namespace", "string")}),
    },
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: ("metadata", _OBJECT_META)},
    ("v1", "Namespace"): {
        1: ("metadata", _OBJECT_META),
        2: ("spec", {1: ("finalizers", "repeated_string")}),
        3: ("status", {1: ("phase", "string")}),
    },
    ("v1", "ConfigMap"): {
        1: ("metadata", _OBJECT_META),
        2: ("data", "map_string"),
        3: ("binaryData", "map_bytes"),
        4: ("immutable", "bool"),
    },
    ("v1", "Secret"): {
        1: ("metadata", _OBJECT_META),
        2: ("data", "map_bytes"),
        3: ("type", "string"),
        4: ("stringData", "map_string"),
        5: ("immutable", "bool"),
    },
    ("scheduling.k8s.io/v1", "PriorityClass"): {
        1: ("metadata", _OBJECT_META),
        2: ("value", "int32"),
        3: ("globalDefault", "bool"),
        4: ("description", "string"),
        5: ("preemptionPolicy", "string"),
    },
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise UnsupportedMediaType("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: varints as ints, length-delimited as bytes; fixed widths skipped."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise UnsupportedMediaType("truncated protobuf field")
            out.append((number, data[pos:pos + size]))
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise UnsupportedMediaType(f"unsupported protobuf wire type {wire}")
    return out


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise UnsupportedMediaType("protobuf: expected a string")
    return value.decode("utf-8")


def _message(data: bytes, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(kind, dict):
            if not isinstance(value, bytes):
                raise UnsupportedMediaType(f"protobuf: {name} is not a message")
            nested = _message(value, kind)
            if nested:
                out[name] = nested
        elif kind == "string":
            text = _text(value)
            if text:
                out[name] = text
        elif kind == "repeated_string":
            out.setdefault(name, []).append(_text(value))
        elif kind in ("map_string", "map_bytes"):
            if not isinstance(value, bytes):
                raise UnsupportedMediaType(f"protobuf: {name} is not a map entry")
            entry = dict(_fields(value))
            key = _text(entry.get(1, b""))
            raw = entry.get(2, b"")
            if not isinstance(raw, bytes):
                raise UnsupportedMediaType(f"protobuf: bad value in {name}")
            out.setdefault(name, {})[key] = (raw.decode("utf-8") if kind == "map_string"
                                             else base64.b64encode(raw).decode())
        elif kind == "bool":
            out[name] = bool(value)
        elif kind == "int64":
            if not isinstance(value, int):
                raise UnsupportedMediaType(f"protobuf: {name} is not an integer")
            out[name] = value - (1 << 64) if value >= 1 << 63 else value
        elif kind == "int32":
            if not isinstance(value, int):
                raise UnsupportedMediaType(f"protobuf: {name} is not an integer")
            value &= 0xFFFFFFFF
            out[name] = value - (1 << 32) if value >= 1 << 31 else value
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object; ``UnsupportedMediaType`` for kinds not listed above."""
    if not body.startswith(MAGIC):
        raise UnsupportedMediaType("a protobuf body must start with the k8s magic number")
    envelope = dict(_fields(body[len(MAGIC):]))
    type_meta = envelope.get(1, b"")
    raw = envelope.get(2, b"")
    if not isinstance(type_meta, bytes) or not isinstance(raw, bytes):
        raise UnsupportedMediaType("malformed protobuf envelope")
    meta = dict(_fields(type_meta))
    api_version, kind = _text(meta.get(1, b"")), _text(meta.get(2, b""))
    schema = _KINDS.get((api_version, kind))
    if schema is None:
        known = ", ".join(k for _, k in _KINDS)
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format (protobuf {api_version} {kind}; protobuf is read "
            f"for {known} only) - accepted media types include: application/json, application/yaml"
        )
    return {"apiVersion": api_version, "kind": kind, **_message(raw, schema)}


_DELETE_OPTIONS: Schema = {
    1: ("gracePeriodSeconds", "int64"),
    2: ("preconditions", {1: ("uid", "string"), 2: ("resourceVersion", "string")}),
    3: ("orphanDependents", "bool"),
    4: ("propagationPolicy", "string"),
    5: ("dryRun", "repeated_string"),
}


def decode_delete_options(body: bytes) -> dict[str, Any]:
    """A protobuf ``DeleteOptions`` (what typed clients such as ``kubectl drain`` send with DELETE)."""
    if not body.startswith(MAGIC):
        raise UnsupportedMediaType("a protobuf body must start with the k8s magic number")
    raw = dict(_fields(body[len(MAGIC):])).get(2, b"")
    if not isinstance(raw, bytes):
        raise UnsupportedMediaType("malformed protobuf envelope")
    return _message(raw, _DELETE_OPTIONS)
