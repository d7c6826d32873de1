"""The safe reader of untrusted text: alias bombs, deep nesting and oversized files are refused at once,
in one line naming the file, with bounded time and memory; ordinary manifests read as before."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pumice.api import ManifestError, load_file, load_text, reader
from pumice.cli.main import app


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """The classic YAML alias bomb: ``width ** levels`` strings from a few hundred bytes."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: lol}",
             "a0: &a0 [" + ",".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]")
    lines.append(f"data: {{x: *a{levels - 1}}}")
    return "\n".join(lines) + "\n"


def _limited(megabytes: int):  # a child that cannot take the machine down, fixed or not
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return apply


def test_validate_refuses_an_alias_bomb_in_under_a_second_and_200_mb(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(billion_laughs())
    small = tmp_path / "small.yaml"
    small.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\ndata: {x: y}\n")
    # The peak is VmHWM, this process image's own: ru_maxrss survives exec on Linux, so a child forked from a big
    # pytest process would report the parent's size.
    code = (
        "import re, sys, time\n"
        "def hwm():\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "from typer.testing import CliRunner\n"
        "from pumice.cli.main import app\n"
        # the command's modules load on first use (cli/lazy.py): load them on a small manifest first, so the
        # growth measured is the bomb's alone
        f"CliRunner().invoke(app, ['validate', '-f', {str(small)!r}])\n"
        "base = hwm()\n"
        "t = time.perf_counter()\n"
        f"r = CliRunner().invoke(app, ['validate', '-f', {str(bomb)!r}])\n"
        "took = time.perf_counter() - t\n"
        "peak = hwm()\n"
        "print(r.exit_code, round(took, 3), peak // 1024, (peak - base) // 1024)\n"
        "print(r.output)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          preexec_fn=_limited(2048), check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    head, output = proc.stdout.split("\n", 1)
    exit_code, took, peak_mb, grown_mb = head.split()
    assert exit_code == "2", output
    assert float(took) < 1.0, f"refusing the bomb took {took} s"
    assert int(peak_mb) < 200, f"the process peaked at {peak_mb} MB"
    assert int(grown_mb) < 50, f"reading the bomb took {grown_mb} MB"
    line = output.strip()
    assert "\n" not in line and str(bomb) in line and "excessive aliasing" in line, line


def test_a_deeply_nested_manifest_is_one_line_naming_the_file(tmp_path: Path) -> None:
    for name, text in (("flow.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: " + "[" * 5000),
                       ("block.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nx:\n"
                        + "".join("  " * (i + 1) + "-\n" for i in range(300))),
                       ("deep.json", '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"x":'
                        + "[" * 5000 + "]" * 5000 + "}")):
        path = tmp_path / name
        path.write_text(text)
        result = CliRunner().invoke(app, ["validate", "-f", str(path)])
        assert result.exit_code == 2, result.output
        line = result.output.strip()
        assert "\n" not in line and line.startswith(f"error: {path}"), line
        assert "nest" in line, line


def test_file_size_limit_and_the_flag_that_raises_it(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    pad = "x" * (2 << 20)
    path.write_text(f"# {pad}\napiVersion: v1\nkind: Namespace\nmetadata: {{name: big}}\n")  # big, still valid
    refused = CliRunner().invoke(app, ["validate", "-f", str(path), "--max-file-size", "1Mi"])
    assert refused.exit_code == 2
    line = refused.output.strip()
    assert "\n" not in line and str(path) in line and "too large" in line and "--max-file-size" in line, line
    accepted = CliRunner().invoke(app, ["validate", "-f", str(path), "--max-file-size", "4Mi"])
    assert accepted.exit_code == 0, accepted.output
    assert CliRunner().invoke(app, ["validate", "-f", str(path), "--max-file-size", "lots"]).exit_code == 2
    # the documented default: 64 MiB
    assert reader.DEFAULT_MAX_FILE_BYTES == 64 << 20 and reader.max_file_bytes() == 64 << 20
    with reader.file_size_limit(1 << 20), pytest.raises(ManifestError, match="too large"):
        load_file(path)


def test_schedule_and_sim_read_through_the_same_limits(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(billion_laughs())
    for argv in (["schedule", "-f", str(bomb)], ["sim", str(tmp_path)], ["apply", "-f", str(bomb)],
                 ["up", "-f", str(bomb), "--data-dir", str(tmp_path / "never"), "--port", "1"]):
        started = time.perf_counter()
        result = CliRunner().invoke(app, argv)
        assert time.perf_counter() - started < 1.0
        assert result.exit_code == 2, (argv, result.output)
        assert "excessive aliasing" in result.output, (argv, result.output)
    assert not (tmp_path / "never").exists()  # refused before anything started
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(billion_laughs().replace("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\n", ""))
    result = CliRunner().invoke(app, ["sim", str(scenario)])
    assert result.exit_code == 2 and "excessive aliasing" in result.output, result.output


def test_kube_apiserver_alias_rule() -> None:
    # a few aliases are fine, whatever their share (the rule needs more than 100 aliased nodes)
    ok = "x: &x {a: 1, b: 2}\n" + "\n".join(f"k{i}: *x" for i in range(40))
    assert len(next(reader.yaml_documents(ok))) == 41
    # many aliases in a large enough document are fine too while most of it is written out
    written = "\n".join(f"w{i}: {i}" for i in range(2000))
    fine = "x: &x [1, 2]\n" + written + "\n" + "\n".join(f"k{i}: *x" for i in range(200))
    assert len(next(reader.yaml_documents(fine))) == 2201
    # ... but not a small document that is 99% expansion
    with pytest.raises(reader.ExcessiveAliasing, match="excessive aliasing"):
        list(reader.yaml_documents(billion_laughs(levels=4, width=9)))
    with pytest.raises(reader.ExcessiveAliasing, match="contains it"):
        list(reader.yaml_documents("a: &a [1, *a]\n"))
    # aliases stay shared in what is loaded (nothing expands them while reading)
    doc = next(reader.yaml_documents("a: &a {x: 1}\nb: *a\n"))
    assert doc["a"] is doc["b"]


def test_the_document_of_a_refusal_is_named() -> None:
    text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n" + billion_laughs()
    with pytest.raises(ManifestError) as info:
        load_text(text, "two.yaml")
    assert info.value.document == 2 and str(info.value).startswith("two.yaml: document 2: ")


def test_json_depth_ignores_brackets_in_strings() -> None:
    assert reader.json_depth(b'{"a": "[[[[{{{{", "b": [1, {"c": "]]]"}]}') == 3
    assert reader.json_depth('"\\"[[["') == 0
    assert reader.json_depth(b"[" * 100 + b"]" * 100) == 100
    with pytest.raises(reader.TooDeep):
        reader.load_json(b"[" * 101 + b"]" * 101)
    assert reader.load_json(b"[" * 100 + b"]" * 100) is not None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab"\\[]{}:,\n\u00e9\u2028'), max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=30,
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_json_depth_is_the_depth_of_the_value(value: object, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert reader.json_depth(text) == _depth(value)
    assert reader.json_depth(text.encode()) == _depth(value)


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(1, 9))
def test_json_depth_is_the_same_in_small_chunks(value: object, chunk: int) -> None:
    """The scan carries a string, a run of backslashes and the depth across its chunks (1 MiB in use):
    cut into chunks of a few bytes, every boundary falls somewhere awkward."""
    text = json.dumps(value, ensure_ascii=False)
    saved = reader._DEPTH_CHUNK
    reader._DEPTH_CHUNK = chunk
    try:
        assert reader.json_depth(text) == _depth(value)
    finally:
        reader._DEPTH_CHUNK = saved


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_yaml_reads_what_pyyaml_reads_within_the_limits(value: object) -> None:
    text = yaml.safe_dump(value)
    assert next(reader.yaml_documents(text)) == yaml.safe_load(text)


def test_limits_are_enforced_for_stdin(tmp_path: Path) -> None:
    big = "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, annotations: {pad: " + "x" * (2 << 20) + "}}\n"
    result = CliRunner().invoke(app, ["apply", "-f", "-", "--max-file-size", "1Mi", "--server",
                                      "https://127.0.0.1:9"], input=big)
    assert result.exit_code == 2 and "<stdin>" in result.output and "too large" in result.output, result.output


def test_read_text_file_stops_reading_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    assert reader.read_text_file(path, max_bytes=1000) == "x" * 1000
    with pytest.raises(reader.TooLarge):
        reader.read_text_file(path, max_bytes=999)
    if os.path.exists("/dev/zero"):  # no size to trust: the read itself stops
        with pytest.raises(reader.TooLarge):
            reader.read_text_file("/dev/zero", max_bytes=1 << 16)


def test_a_map_key_that_does_not_print_keeps_the_error_on_one_line() -> None:
    # found by the fuzz suite: a label key "\n" with a null value put a newline into the field path
    text = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "labels": {"\\n": null}},'
            ' "spec": {"containers": [{"name": "c", "image": "busybox"}]}}')
    with pytest.raises(ManifestError) as err:
        load_text(text, "odd.yaml")
    message = str(err.value)
    assert "\n" not in message and 'labels["\\n"]' in message, message


def test_an_object_name_that_does_not_print_keeps_the_error_on_one_line() -> None:
    # found by the fuzz suite: a Pod named "\n\n    " with a spec of the wrong type
    text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: '\n\n    '\nspec: []\n"
    with pytest.raises(ManifestError) as err:
        load_text(text, "odd.yaml")
    message = str(err.value)
    assert "\n" not in message and message.startswith("odd.yaml: document 1 (") and "got a list" in message, message
