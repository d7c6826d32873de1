"""A pod's declared real usage (``pumice.io/usage``) as the simulated kubelet reads it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pumice.clock import rfc3339
from pumice.nodes.usage import (
    USAGE_ANNOTATION,
    Usage,
    next_change,
    node_usage,
    parse_usage,
    pod_usage,
)

T0 = 1_700_000_000.0
GI = 1024**3


def pod(usage: str | None = None, cpu: str = "2", memory: str = "4Gi", *, phase: str = "Running",
        started: float | None = T0, name: str = "p") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if usage is not None:
        meta["annotations"] = {USAGE_ANNOTATION: usage}
    status: dict[str, Any] = {"phase": phase}
    if started is not None:
        status["startTime"] = rfc3339(started)
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "resources": {"requests": {
        "cpu": cpu, "memory": memory}}}]}, "status": status}


def test_without_annotation_a_pod_uses_its_requests() -> None:
    assert pod_usage(pod(), T0 + 5) == Usage(2000.0, 4.0 * GI)


def test_flat_fraction_applies_to_cpu_and_memory() -> None:
    assert pod_usage(pod("0.5"), T0 + 5) == Usage(1000.0, 2.0 * GI)


def test_piecewise_profile_changes_level_at_its_step() -> None:
    p = pod("0.3,60s:0.9")
    assert pod_usage(p, T0 + 59).cpu == pytest.approx(600.0)
    assert pod_usage(p, T0 + 60).cpu == pytest.approx(1800.0)
    assert pod_usage(p, T0 + 3600).memory == pytest.approx(0.9 * 4 * GI)
    assert next_change(p, T0 + 10) == T0 + 60
    assert next_change(p, T0 + 60) is None


def test_per_resource_profiles_and_unnamed_resource_uses_requests() -> None:
    p = pod("cpu=0.25,1m:1.5")
    assert pod_usage(p, T0 + 1) == Usage(500.0, 4.0 * GI)
    assert pod_usage(p, T0 + 61) == Usage(3000.0, 4.0 * GI)  # bursting above requests is allowed
    both = pod("cpu=0.5;memory=0.25,30s:0.75")
    assert pod_usage(both, T0 + 40) == Usage(1000.0, 3.0 * GI)
    assert next_change(both, T0) == T0 + 30


def test_profile_starting_later_uses_requests_before_its_first_step() -> None:
    assert parse_usage("2m:0.1").fractions(30) == (1.0, 1.0)
    assert parse_usage("2m:0.1").fractions(120) == (0.1, 0.1)


def test_a_pod_without_start_time_has_just_started() -> None:
    p = pod("0.2,10s:0.8", started=None)
    assert pod_usage(p, T0).cpu == pytest.approx(400.0)


def test_node_usage_counts_running_pods_only() -> None:
    pods = [pod("0.5", name="a"), pod("0.25", name="b"), pod("1", name="c", phase="Succeeded"),
            pod("1", name="d", phase="Pending", started=None)]
    deleting = pod("1", name="e")
    deleting["metadata"]["deletionTimestamp"] = rfc3339(T0)
    assert node_usage([*pods, deleting], T0 + 1) == Usage(1500.0, 3.0 * GI)


@pytest.mark.parametrize("bad", ["", "x", "-0.5", "0.5,0.7", "0.5,10s:0.7,5s:0.1", "gpu=0.5", "cpu=0.5;cpu=0.6",
                                 "0.5,10q:0.2", "nan", "inf"])
def test_malformed_profiles_are_errors_naming_pod_and_annotation(bad: str) -> None:
    with pytest.raises(ValueError) as err:
        pod_usage(pod(bad, name="web"), T0)
    assert "default/web" in str(err.value) and USAGE_ANNOTATION in str(err.value)


@given(st.lists(st.tuples(st.integers(1, 10_000), st.floats(0, 4, allow_nan=False)), max_size=6),
       st.floats(0, 4, allow_nan=False), st.floats(0, 20_000, allow_nan=False))
def test_profile_level_is_the_last_step_reached(steps: list[tuple[int, float]], first: float, at: float) -> None:
    times = sorted({t for t, _ in steps})
    levels = {t: lv for t, lv in steps}
    text = ",".join([repr(first), *(f"{t}s:{levels[t]!r}" for t in times)])
    reached = [levels[t] for t in times if t <= at]
    expected = reached[-1] if reached else first
    assert parse_usage(text).fractions(at) == (expected, expected)
