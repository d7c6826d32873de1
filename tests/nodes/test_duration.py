"""How long a simulated pod runs and how it ends, from its manifest."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.nodes import exit_code, parse_duration, pod_duration


def pod(ann: dict[str, str] | None = None, *commands: list[str]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "annotations": ann or {}},
            "spec": {"containers": [{"name": f"c{i}", "command": c} for i, c in enumerate(commands)]}}


@pytest.mark.parametrize(("text", "seconds"), [
    ("300", 300.0), (42, 42.0), ("2.5", 2.5), ("5m", 300.0), ("1h30m", 5400.0), ("1m30s", 90.0),
    ("500ms", 0.5), ("2d", 172800.0),
])
def test_parse_duration(text: Any, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "5x", "m5", "-3", "1h-2m", True])
def test_parse_duration_rejects(bad: Any) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_annotation_wins_over_sleep() -> None:
    assert pod_duration(pod({"pumice.io/duration": "2m"}, ["sh", "-c", "sleep 300"])) == 120.0


def test_sleeps_in_a_script_add_up_and_containers_run_side_by_side() -> None:
    assert pod_duration(pod(None, ["sh", "-c", "echo hi && sleep 300"])) == 300.0
    assert pod_duration(pod(None, ["sh", "-c", "sleep 100 && echo done; sleep 20"])) == 120.0
    assert pod_duration(pod(None, ["sleep", "30"], ["sh", "-c", "sleep 1m"])) == 60.0
    # the quick-start's CPU eater: a background loop, then `sleep 300; kill $PID`
    assert pod_duration(pod(None, ["sh", "-c", "while [ $i -lt 300 ]; do :; done & PID=$!; sleep 300; kill $PID"])) \
        == 300.0


def test_no_sleep_runs_until_deleted() -> None:
    assert pod_duration(pod(None, ["nginx"])) is None
    assert pod_duration(pod(None, ["sh", "-c", "nosleep 5"])) is None


def test_exit_codes() -> None:
    assert exit_code(pod()) == 0
    assert exit_code(pod({"pumice.io/fail": "true"})) == 1
    assert exit_code(pod({"pumice.io/exit-code": "3"})) == 3
    assert exit_code(pod({"pumice.io/exit-code": "0", "pumice.io/fail": "true"})) == 0
