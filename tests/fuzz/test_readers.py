"""The CLI's readers under the fuzz suite's strategies: manifests of every kind, mutated, written as YAML or
JSON in every way a careless or hostile author could (aliases, tags, deep nesting, odd bytes), and read back.

A reader either returns objects or raises its one-line error naming the file; it never raises anything else,
never takes long, and the commands built on it (``pumice validate``, ``schedule``, ``sim``) exit with their
documented codes, never a traceback.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pumice.api import ManifestError, load_text
from pumice.cli.main import app
from pumice.scheduler import ConfError, load_conf
from pumice.sim import ScenarioError, load_path

from . import strategies as S

SLOW = 2.0  # seconds: a reader taking longer than this on a small text is a defect


def _yaml(value: Any) -> str:
    try:
        return yaml.safe_dump(value, allow_unicode=True, sort_keys=False)
    except (yaml.YAMLError, UnicodeEncodeError):
        return "a: ["


@st.composite
def yaml_tricks(draw: st.DrawFn, text: str) -> str:
    """``text`` with what YAML alone allows: anchors and aliases, tags, odd scalars, broken structure."""
    trick = draw(st.sampled_from(["none", "anchors", "tag", "scalar", "deep", "bytes", "cut", "duplicate"]))
    if trick == "anchors":
        levels = draw(st.integers(1, 9))
        width = draw(st.integers(1, 9))
        bomb = ["x0: &x0 [" + ",".join(["lol"] * width) + "]"]
        bomb += [f"x{i}: &x{i} [" + ",".join([f"*x{i - 1}"] * width) + "]" for i in range(1, levels)]
        return text + "\n".join(bomb) + f"\ny: *x{levels - 1}\n" if text.rstrip().endswith("}") is False else text
    if trick == "tag":
        tag = draw(st.sampled_from(["!!python/object:os.system", "!!binary", "!!set", "!!timestamp", "!!float",
                                    "!!str", "!custom", "!!merge", "!!omap"]))
        return text + f"extra: {tag} {draw(st.sampled_from(['x', '2020-01-01', 'aGk=', '{a: 1}', '[1]']))}\n"
    if trick == "scalar":
        value = draw(st.sampled_from([".nan", ".inf", "-.inf", "1" * 5000, "0x1F", "0o17", "1_000", "~", "<<: *a",
                                      "'\\ud800'", '"\\ud800"', '"\\x00"', "!!int 99999999999999999999999"]))
        return text + f"extra: {value}\n"
    if trick == "deep":
        depth = draw(st.integers(90, 400))
        return text + "extra: " + "[" * depth + "]" * depth + "\n"
    if trick == "bytes":
        return text + draw(st.sampled_from(["\x00", "\ufeff", "\t- a", "\x85", "\udc80", "\x1b[31m"])) + "\n"
    if trick == "cut":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if trick == "duplicate":
        return text + "kind: Again\n"
    return text


@st.composite
def manifests(draw: st.DrawFn) -> str:
    docs = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(S.KINDS))
        docs.append(draw(S.objects(kind, draw(S.names), draw(st.sampled_from([None, "default"])))))
    form = draw(st.sampled_from(["yaml", "yaml", "json", "json-list", "kind-list"]))
    if form == "json":
        return json.dumps(docs[0] if len(docs) == 1 else docs, ensure_ascii=draw(st.booleans()))
    if form == "json-list":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    if form == "kind-list":
        return _yaml({"apiVersion": "v1", "kind": "PodList", "items": docs})
    text = "---\n".join(_yaml(d) for d in docs)
    return draw(yaml_tricks(text))


@settings(max_examples=600, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(manifests())
def test_load_text_returns_objects_or_one_line_error(text: str) -> None:
    started = time.perf_counter()
    try:
        objects = load_text(text, "fuzz.yaml")
    except ManifestError as err:
        message = str(err)
        assert message.startswith("fuzz.yaml") and "\n" not in message, message
    else:
        for obj in objects:
            json.dumps(obj.to_dict())  # what was read can be written (no surrogates, no cycles, no NaN)
    assert time.perf_counter() - started < SLOW


@settings(max_examples=80, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(manifests())
def test_cli_commands_exit_with_their_codes(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    for argv, codes in ((["validate", "-f", str(path)], (0, 1, 2)), (["schedule", "-f", str(path), "-o", "json"],
                                                                        (0, 2))):
        started = time.perf_counter()
        result = CliRunner().invoke(app, argv)
        assert result.exit_code in codes, (argv, result.exit_code, result.output[-2000:], result.exception)
        assert "Traceback" not in result.output, result.output[-2000:]
        assert time.perf_counter() - started < 10 * SLOW


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(S.json_values, st.sampled_from(["scheduler", "scenario"]))
def test_configuration_readers(tmp_path: Path, value: Any, which: str) -> None:
    text = _yaml(value)
    started = time.perf_counter()
    if which == "scheduler":
        try:
            load_conf(text, source="fuzz.conf")
        except ConfError as err:
            assert "\n" not in str(err)
    else:
        path = tmp_path / "scenario.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            load_path(path)
        except (ScenarioError, ManifestError) as err:
            assert "\n" not in str(err)
    assert time.perf_counter() - started < SLOW
