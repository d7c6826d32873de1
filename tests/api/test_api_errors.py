"""A malformed manifest gives one line: file, document, object, field path, message."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.api import ManifestError, load_file, load_text

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n%d}\n"


def error_of(text: str, source: str = "cluster.yaml") -> ManifestError:
    with pytest.raises(ManifestError) as info:
        load_text(text, source)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return info.value


def test_invalid_quantity_names_file_document_object_and_path() -> None:
    text = (
        NODE % 1
        + "---\n"
        + NODE % 2
        + """---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: c1}
spec:
  containers:
  - name: c
    resources:
      requests:
        cpu: 1x
"""
    )
    err = error_of(text)
    assert str(err) == (
        "cluster.yaml: document 3 (Pod c1/p1): "
        'spec.containers[0].resources.requests.cpu: invalid quantity "1x"'
    )
    assert (err.source, err.document, err.obj) == ("cluster.yaml", 3, "Pod c1/p1")
    assert err.path == "spec.containers[0].resources.requests.cpu"
    assert err.message == 'invalid quantity "1x"'


def test_yaml_syntax_error_names_the_document_and_position() -> None:
    text = NODE % 1 + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: [\n"
    err = error_of(text)
    assert err.document == 2
    assert str(err).startswith("cluster.yaml: document 2: invalid YAML at line 9 column 7: ")


def test_yaml_syntax_error_in_a_later_document() -> None:
    text = NODE % 1 + "---\n" + NODE % 2 + "---\n# a comment\n---\nc: d: e\n"
    err = error_of(text)
    assert str(err).startswith("cluster.yaml: document 4: invalid YAML at line 11 column 5: ")


def test_bad_character_gives_line_and_column() -> None:
    err = error_of(NODE % 1 + "---\na: \x07\n")
    assert str(err) == "cluster.yaml: invalid YAML at line 5 column 4: character #x0007 is not allowed"


def test_invalid_json() -> None:
    err = error_of('{"apiVersion": "v1", "kind": "Pod",\n "metadata": {"name": "p"}\n', "pod.json")
    assert str(err) == "pod.json: document 1: invalid JSON at line 3 column 1: Expecting ',' delimiter"


PG = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, namespace: ns}\n"
QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
POD_P = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
NODE_N = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
POD_LIST = (
    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n"
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: q, namespace: z}\n"
    "  spec: {containers: [{name: c, resources: {limits: {memory: 1.5.5}}}]}\n"
)
POD_ARRAY = (
    '[{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},'
    ' {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"}, "spec": {"priority": "x"}}]'
)
ERROR_FORMS = [
    (
        "kind: Pod\nmetadata: {name: p, namespace: x}\n",
        "document 1 (Pod x/p): apiVersion: required field is missing",
    ),
    ("apiVersion: v1\nmetadata: {name: n}\n", "document 1: kind: required field is missing"),
    (
        "apiVersion: 1\nkind: Node\nmetadata: {name: n}\n",
        "document 1 (Node n): apiVersion: must be a non-empty string, got 1",
    ),
    (
        "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\n",
        "document 1 (Pod): metadata.name: required field is missing",
    ),
    ("apiVersion: v1\nkind: Pod\n", "document 1 (Pod): metadata.name: required field is missing"),
    ("hello\n", 'document 1: expected an object (a mapping), got "hello"'),
    (NODE % 1 + "---\n- 3\n", "document 2: [0]: expected an object (a mapping), got 3"),
    (
        PG + "spec: {minMember: abc}\n",
        'document 1 (PodGroup ns/pg): spec.minMember: input should be a valid integer, got "abc"',
    ),
    (POD_P + "spec: []\n", "document 1 (Pod p): spec: input should be a valid dictionary, got a list"),
    (
        NODE_N + "status: {allocatable: {nvidia.com/gpu: x}}\n",
        'document 1 (Node n): status.allocatable[nvidia.com/gpu]: invalid quantity "x"',
    ),
    (
        NODE_N + "status: {capacity: {cpu: true}}\n",
        "document 1 (Node n): status.capacity.cpu: invalid quantity True: expected a string",
    ),
    (
        QUEUE + "spec: {reclaimable: 'yes', weight: 1.5}\n",
        "document 1 (Queue q): spec.weight: input should be a valid integer, got 1.5 (and 1 more error)",
    ),
    (
        POD_LIST,
        'document 1 (Pod z/q): items[1].spec.containers[0].resources.limits.memory: invalid quantity "1.5.5"',
    ),
    (POD_ARRAY, 'document 1 (Pod q): [1].spec.priority: input should be a valid integer, got "x"'),
]


@pytest.mark.parametrize(("text", "expected"), ERROR_FORMS)
def test_error_forms(text: str, expected: str) -> None:
    assert str(error_of(text, "f.yaml")) == f"f.yaml: {expected}"


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ManifestError) as info:
        load_file(missing)
    assert str(info.value) == f"{missing}: cannot read file: No such file or directory"
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ManifestError, match=r"binary\.yaml: not UTF-8 text"):
        load_file(binary)


def test_file_name_is_the_path_given(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        NODE % 1 + "---\napiVersion: v1\nkind: Node\nmetadata: {name: n2}\nspec: {unschedulable: 1}\n"
    )
    with pytest.raises(ManifestError) as info:
        load_file(path)
    assert str(info.value) == (
        f"{path}: document 2 (Node n2): spec.unschedulable: input should be a valid boolean, got 1"
    )


def test_two_documents_glued_without_separator_are_refused_not_merged(tmp_path) -> None:
    from pumice.api import ManifestError, load_file

    path = tmp_path / "glued.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\n"
    )
    try:
        load_file(path)
    except ManifestError as err:
        text = str(err)
        assert "glued.yaml" in text and "already defined" in text and "line 4" in text
    else:
        raise AssertionError("duplicate keys were accepted")
