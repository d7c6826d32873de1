"""How long a simulated pod runs and how it ends, from its manifest."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.nodes import exit_code, parse_duration, pod_duration
from tests.builders import pod


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
    assert pod_duration(pod("p", annotations={"pumice.io/duration": "2m"}, command=["sh", "-c", "sleep 300"])) == 120.0


def test_sleeps_in_a_script_add_up_and_containers_run_side_by_side() -> None:
    assert pod_duration(pod("p", command=["sh", "-c", "echo hi && sleep 300"])) == 300.0
    assert pod_duration(pod("p", command=["sh", "-c", "sleep 100 && echo done; sleep 20"])) == 120.0
    two = [{"name": "c0", "command": ["sleep", "30"]}, {"name": "c1", "command": ["sh", "-c", "sleep 1m"]}]
    assert pod_duration(pod("p", containers=two)) == 60.0
    # the quick-start's CPU eater: a background loop, then `sleep 300; kill $PID`
    eater = "while [ $i -lt 300 ]; do :; done & PID=$!; sleep 300; kill $PID"
    assert pod_duration(pod("p", command=["sh", "-c", eater])) == 300.0


def test_no_sleep_runs_until_deleted() -> None:
    assert pod_duration(pod("p", command=["nginx"])) is None
    assert pod_duration(pod("p", command=["sh", "-c", "nosleep 5"])) is None


def test_exit_codes() -> None:
    assert exit_code(pod("p")) == 0
    assert exit_code(pod("p", annotations={"pumice.io/fail": "true"})) == 1
    assert exit_code(pod("p", annotations={"pumice.io/exit-code": "3"})) == 3
    assert exit_code(pod("p", annotations={"pumice.io/exit-code": "0", "pumice.io/fail": "true"})) == 0
