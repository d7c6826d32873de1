"""Reading untrusted text safely: JSON and YAML with limits on size, nesting and alias expansion.

One reader for every place pumice takes text from outside — manifest files and stdin (``pumice
apply/validate/schedule/sim``, ``pumice up -f``), the dashboard's YAML submit, and request bodies of
the API server — so that none of them can be made to exhaust memory or the stack:

- **size**: files above :data:`DEFAULT_MAX_FILE_BYTES` (64 MiB; raise it with :func:`file_size_limit`, the
  CLI's ``--max-file-size``) are refused before they are read; the API server refuses bodies above
  :data:`DEFAULT_MAX_OBJECT_BYTES` (3 MiB, Kubernetes' limit per request body) while reading them.
- **nesting**: more than :data:`MAX_DEPTH` levels of objects/arrays (mappings/sequences) is refused before
  anything is built, so no recursive code further on (copies, patches, models) can run out of stack.
  Kubernetes allows 10,000 levels; no Kubernetes or Volcano object comes near 100.
- **aliases** (billion laughs): YAML anchors and aliases are counted as they expand, and a document whose
  expansion is mostly made of aliases is refused with kube-apiserver's own words, "document contains
  excessive aliasing", by the same rule as the Go YAML decoder Kubernetes uses (more than 100 aliased
  nodes, more than 1,000 nodes, and an aliased share above 99% for small documents falling to 10% for
  documents of 4 million nodes). An alias to an anchor that contains it (a cycle) is refused too.

- **JSON only**: what is read is JSON (what an API object is): YAML's other types become what Kubernetes'
  YAML-to-JSON makes of them (keys as strings, ``!!binary`` as its base64 text, ``!!timestamp`` as text) or are
  refused (``!!set``, ``.nan``, ``.inf``, JSON's ``NaN`` and ``Infinity``).
- **text**: a lone UTF-16 surrogate (``"\\ud800"`` in JSON, which Python decodes but UTF-8 cannot encode) is
  replaced by U+FFFD, as Go's JSON decoder does, so that what was read can always be written back.

YAML is checked in a first pass over the parser's events (libyaml's parser keeps its own stack, so even a
million opening brackets cost nothing but time), then loaded; aliases stay shared in what is loaded, and
what expands them later is bounded by the rule above.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Generator, Iterator
from contextvars import ContextVar
from typing import Any

import yaml

from pumice.api.sizes import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_OBJECT_BYTES, format_bytes

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_OBJECT_BYTES",
    "MAX_DEPTH",
    "ExcessiveAliasing",
    "InputError",
    "Loader",
    "TooDeep",
    "TooLarge",
    "check_yaml",
    "file_size_limit",
    "format_bytes",
    "json_depth",
    "load_json",
    "load_yaml",
    "max_file_bytes",
    "read_text_file",
    "yaml_documents",
]

#: Deepest nesting of objects/arrays accepted anywhere (the top-level object is level 1).
MAX_DEPTH = 100

# The Go YAML decoder's alias budget (gopkg.in/yaml.v2 decode.go, used by sigs.k8s.io/yaml).
_ALIAS_MIN = 100
_NODES_MIN = 1000
_RATIO_LOW_NODES = 400_000
_RATIO_HIGH_NODES = 4_000_000


class InputError(ValueError):
    """Input refused by a limit of this module; ``str()`` is one line."""


class TooLarge(InputError):
    """More bytes than allowed (a file, a request body, an object)."""


class TooDeep(InputError):
    """Objects/arrays nested deeper than :data:`MAX_DEPTH`."""


class ExcessiveAliasing(InputError):
    """A YAML document made mostly of alias expansions (billion laughs), or an alias cycle."""


# --------------------------------------------------------------------------------------------- file size

_FILE_LIMIT: ContextVar[int] = ContextVar("pumice_max_file_bytes", default=DEFAULT_MAX_FILE_BYTES)


def max_file_bytes() -> int:
    """The file size limit in force (see :func:`file_size_limit`)."""
    return _FILE_LIMIT.get()


@contextlib.contextmanager
def file_size_limit(limit: int | None) -> Iterator[None]:
    """Read files up to ``limit`` bytes inside the block (``None``: keep the current limit)."""
    if limit is None:
        yield
        return
    if limit <= 0:
        raise ValueError("the file size limit must be positive")
    token = _FILE_LIMIT.set(limit)
    try:
        yield
    finally:
        _FILE_LIMIT.reset(token)


def read_text_file(path: str | os.PathLike[str], *, max_bytes: int | None = None,
                   encoding: str = "utf-8-sig") -> str:
    """The text of a file (``-`` is not special here), refused with :class:`TooLarge` above the limit.

    The size is checked before reading, and the read itself stops past the limit (a file that grows, a
    pipe or a device has no trustworthy size). Raises ``OSError`` and ``UnicodeDecodeError`` as ``open`` does.
    """
    limit = max_file_bytes() if max_bytes is None else max_bytes
    with open(path, "rb") as handle:
        with contextlib.suppress(OSError):
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise TooLarge(_too_large_message(size, limit))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(_too_large_message(None, limit))
    return data.decode(encoding)


def _too_large_message(size: int | None, limit: int) -> str:
    what = f"{size} bytes" if size is not None else "more"
    return f"file too large: {what}, the limit is {format_bytes(limit)} (--max-file-size raises it)"


# --------------------------------------------------------------------------------------------------- JSON

#: Bytes of text looked at in one go by ``json_depth`` (its arrays are a few times this size).
_DEPTH_CHUNK = 1 << 20
_QUOTE, _BACKSLASH = 0x22, 0x5C


def json_depth(raw: bytes | str) -> int:
    """How deeply the arrays and objects of a JSON text nest (0 for a scalar), without parsing it.

    Linear in the text, vectorised and in chunks of bounded memory: brackets inside strings do not count
    (a quote after an odd run of backslashes does not end one), unbalanced text gives a depth all the same
    (the parser reports what is wrong with it afterwards). UTF-8 bytes of other characters never look like
    quotes, backslashes or brackets, so bytes are scanned as they are.
    """
    if ("[" not in raw and "{" not in raw) if isinstance(raw, str) else (b"[" not in raw and b"{" not in raw):
        return 0
    import numpy as np  # here: commands that read no JSON text (vcctl's, kubectl's) start without NumPy

    depth = deepest = 0
    inside = 0  # 1 while in a string at a chunk's start
    trailing = 0  # backslashes ending the previous chunk
    for start in range(0, len(raw), _DEPTH_CHUNK):
        piece = raw[start:start + _DEPTH_CHUNK]  # text is encoded a chunk at a time, never copied whole
        data = piece.encode("utf-8", "surrogatepass") if isinstance(piece, str) else piece
        c = np.frombuffer(data, dtype=np.uint8)
        quotes = np.flatnonzero(c == _QUOTE)
        if trailing or b"\\" in data:  # escapes: only a quote after an even run of backslashes counts
            last_plain = np.maximum.accumulate(np.where(c == _BACKSLASH, -1, np.arange(len(c), dtype=np.int64)))
            if quotes.size:
                before = quotes - 1
                runs = np.where(before >= 0, before - last_plain[np.maximum(before, 0)], 0)
                runs += np.where((before < 0) | (last_plain[np.maximum(before, 0)] < 0), trailing, 0)
                quotes = quotes[runs % 2 == 0]  # the quotes that open or close a string
            end_plain = int(last_plain[-1])
            trailing = len(c) - 1 - end_plain + (trailing if end_plain < 0 else 0)
        folded = c | 0x20  # '[' and '{' become '{', ']' and '}' become '}'
        where = np.flatnonzero((folded == 0x7B) | (folded == 0x7D))
        if where.size and (quotes.size or inside):
            # a bracket is inside a string when an odd number of string quotes precede it
            where = where[((np.searchsorted(quotes, where) + inside) & 1) == 0]
        if where.size:
            levels = depth + np.cumsum(np.where(folded[where] == 0x7B, 1, -1), dtype=np.int64)
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
        inside = (inside + len(quotes)) & 1
    return deepest


def _too_deep(depth: int | None, max_depth: int) -> TooDeep:
    found = "" if depth is None else f" ({depth} levels)"
    return TooDeep(f"nested too deeply{found}: at most {max_depth} levels of objects and arrays are accepted")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]|\\U0000[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\\U0000[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_LONE = re.compile("[\ud800-\udfff]")


def _scrub_text(text: str) -> str:
    return _LONE.sub("\ufffd", text)


def scrub_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys included) replaced by U+FFFD (iteratively)."""
    if isinstance(value, str):
        return _scrub_text(value)
    if not isinstance(value, dict | list):
        return value
    root = [value]
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = _scrub_text(item)
                elif isinstance(item, dict | list):
                    stack.append(item)
        else:
            for key in list(node):
                item = node[key]
                if isinstance(key, str) and _LONE.search(key):
                    del node[key]
                    key = _scrub_text(key)
                    node[key] = item
                if isinstance(item, str):
                    node[key] = _scrub_text(item)
                elif isinstance(item, dict | list):
                    stack.append(item)
    return root[0]


def _may_hold_surrogates(raw: bytes | str) -> bool:
    # One-character searches run at memchr speed, two-character ones several times slower: most texts
    # hold no backslash at all.
    if isinstance(raw, str):
        if ("\\" not in raw or ("\\u" not in raw and "\\U" not in raw)) and raw.isascii():
            return False
    elif (b"\\" not in raw or (b"\\u" not in raw and b"\\U" not in raw)) and b"\xed" not in raw:
        return False
    pattern = _SURROGATE_ESCAPE_BYTES if isinstance(raw, bytes | bytearray) else _SURROGATE_ESCAPE
    return pattern.search(raw) is not None  # type: ignore[arg-type]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` with the nesting limit checked first; raises :class:`TooDeep` or ``ValueError``.

    Lone surrogates come back as U+FFFD (see the module docstring)."""
    depth = json_depth(raw)
    if depth > max_depth:
        raise _too_deep(depth, max_depth)
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:  # only if max_depth was set near the interpreter's limit
        raise _too_deep(None, max_depth) from None
    return scrub_surrogates(value) if _may_hold_surrogates(raw) else value


# --------------------------------------------------------------------------------------------------- YAML

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class Loader(_BaseLoader):  # type: ignore[valid-type, misc]
    """Safe loader that keeps unquoted timestamps as strings, like Kubernetes' YAML-to-JSON, and
    refuses duplicate keys as kubectl does (two documents glued together without ``---`` would
    otherwise silently become one). Use it through :func:`yaml_documents`, which checks limits first."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = (type(key), key) in seen  # 1 and true are two keys
            except TypeError:  # an unhashable key (a mapping as a key): the constructor says so below
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"mapping key {key!r} already defined", key_node.start_mark
                )
            seen.add((type(key), key))
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        if all(type(key) is str for key in mapping):
            return mapping
        return {_key_text(key): value for key, value in mapping.items()}  # JSON keys are strings


def _key_text(key: Any) -> str:
    """A YAML key as Kubernetes' YAML-to-JSON writes it: ``true``, ``1``, ``null``..."""
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float):
        return repr(key) if math.isfinite(key) else str(key)
    return str(key)


def _scalar_text(loader: Loader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))


def _binary_text(loader: Loader, node: yaml.Node) -> str:
    return "".join(_scalar_text(loader, node).split())  # the base64 JSON would carry for these bytes


def _finite_float(loader: Loader, node: yaml.Node) -> float:
    value = yaml.constructor.SafeConstructor.construct_yaml_float(loader, node)  # type: ignore[arg-type]
    if not math.isfinite(value):
        raise yaml.constructor.ConstructorError(
            None, None, f"{node.value!r} cannot be written as JSON (no NaN or infinity)", node.start_mark)
    return float(value)


def _no_set(loader: Loader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(None, None, "!!set cannot be written as JSON", node.start_mark)


Loader.add_constructor("tag:yaml.org,2002:timestamp", _scalar_text)  # as text, as Kubernetes keeps it
Loader.add_constructor("tag:yaml.org,2002:binary", _binary_text)
Loader.add_constructor("tag:yaml.org,2002:float", _finite_float)
Loader.add_constructor("tag:yaml.org,2002:set", _no_set)


Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


def _allowed_alias_ratio(nodes: int) -> float:
    if nodes <= _RATIO_LOW_NODES:
        return 0.99
    if nodes >= _RATIO_HIGH_NODES:
        return 0.10
    return 0.99 - 0.89 * (nodes - _RATIO_LOW_NODES) / (_RATIO_HIGH_NODES - _RATIO_LOW_NODES)


class _Document:
    """Counts of one document's expansion, as the Go decoder keeps them."""

    __slots__ = ("aliased", "anchors", "depth", "nodes", "open", "sizes")

    def __init__(self) -> None:
        self.nodes = 0  # nodes the document expands to so far (aliases counted as what they stand for)
        self.aliased = 0  # of which through aliases
        self.anchors: dict[str, int] = {}  # anchor -> the size of its node, once the node is complete
        self.sizes: list[list[Any]] = []  # open collections: [anchor or None, expanded size so far]
        self.open: set[str] = set()  # anchors of the open collections (an alias to one is a cycle)
        self.depth = 0


def check_yaml(text: str, *, max_depth: int = MAX_DEPTH) -> int:
    """Check every document of ``text`` against the nesting and alias limits; returns how many there are.

    Raises :class:`TooDeep` / :class:`ExcessiveAliasing` with ``.document`` (1-based) set. YAML syntax errors
    are left to the loader, which reports them with their position: a document that fails to parse is
    checked up to the error, and loading it stops at that same error.
    """
    loader = Loader(_scrub_text(text) if _LONE.search(text) else text)
    documents = 0
    doc = _Document()
    try:
        while True:
            try:
                event = loader.get_event()
            except yaml.YAMLError:
                return documents
            if event is None:
                return documents
            kind = type(event)
            if kind is yaml.ScalarEvent:
                _add(doc, 1)
                if event.anchor is not None:
                    doc.anchors[event.anchor] = 1
            elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
                doc.depth += 1
                if doc.depth > max_depth:
                    raise _located(_too_deep(None, max_depth), documents + 1)
                doc.nodes += 1
                doc.sizes.append([event.anchor, 1])
                if event.anchor is not None:
                    doc.open.add(event.anchor)
            elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
                doc.depth -= 1
                anchor, size = doc.sizes.pop()
                if anchor is not None:
                    doc.anchors[anchor] = size
                    doc.open.discard(anchor)
                if doc.sizes:
                    doc.sizes[-1][1] += size
            elif kind is yaml.AliasEvent:
                name = event.anchor
                if name in doc.open:
                    raise _located(ExcessiveAliasing(f"alias *{name} refers to the anchor that contains it"),
                                   documents + 1)
                size = doc.anchors.get(name)
                if size is None:
                    continue  # an undefined alias: the loader reports it where it is
                doc.aliased += size
                _add(doc, size)
                if (doc.aliased > _ALIAS_MIN and doc.nodes > _NODES_MIN
                        and doc.aliased / doc.nodes > _allowed_alias_ratio(doc.nodes)):
                    raise _located(ExcessiveAliasing("document contains excessive aliasing"), documents + 1)
            elif kind is yaml.DocumentEndEvent:
                documents += 1
                doc = _Document()
    finally:
        loader.dispose()


def _add(doc: _Document, size: int) -> None:
    doc.nodes += size
    if doc.sizes:
        doc.sizes[-1][1] += size


def _located(error: InputError, document: int) -> InputError:
    error.document = document  # type: ignore[attr-defined]
    return error


def yaml_documents(text: str, *, max_depth: int = MAX_DEPTH) -> Generator[Any, None, None]:
    """The data of each document of a YAML stream, after :func:`check_yaml` accepted the whole stream.

    Raises :class:`InputError` (with ``.document``) before anything is built, and ``yaml.YAMLError`` from the
    loader (``ValueError`` for an integer beyond Python's digit limit). Empty documents come back as None.
    """
    check_yaml(text, max_depth=max_depth)
    scrub = _may_hold_surrogates(text)
    loader = Loader(_scrub_text(text) if scrub else text)
    try:
        while loader.check_data():
            data = loader.get_data()
            yield scrub_surrogates(data) if scrub else data
    finally:
        loader.dispose()


def load_yaml(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The single document of ``text`` (None when empty), with the limits of :func:`yaml_documents`.

    A stream of several documents is refused with ``yaml.YAMLError``, as ``yaml.safe_load`` does.
    """
    documents = yaml_documents(text, max_depth=max_depth)
    try:
        first = next(documents, None)
        if next(documents, None) is not None:
            raise yaml.YAMLError("expected a single document in the stream, found more")
        return first
    finally:
        documents.close()
