"""Volcano's rules for combining plugins across tiers, on a live session."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.scheduler import build_cluster_state, load_conf
from pumice.scheduler.framework.points import (
    ABSTAIN,
    ALLOCATABLE,
    JOB_ORDER,
    JOB_PIPELINED,
    JOB_STARVING,
    OVERUSED,
    PERMIT,
    PREEMPTABLE,
    RECLAIMABLE,
    REJECT,
    Point,
)
from pumice.scheduler.framework.session import Session


def _session(conf_text: str) -> Session:
    state = build_cluster_state([])
    ssn = Session(state, load_conf(conf_text))
    return ssn  # not opened: the test registers its own callbacks


TWO_TIERS = """
actions: allocate
tiers:
- plugins:
  - name: a
  - name: b
    enableJobOrder: false
- plugins:
  - name: c
"""


def test_orders_take_the_first_non_zero_answer_and_skip_disabled_plugins() -> None:
    ssn = _session(TWO_TIERS)
    calls: list[str] = []

    def fn(name: str, answer: int) -> Any:
        def compare(_l: Any, _r: Any) -> int:
            calls.append(name)
            return answer
        return compare

    ssn.add(JOB_ORDER, "a", fn("a", 0))
    ssn.add(JOB_ORDER, "b", fn("b", -1))  # disabled by enableJobOrder: false
    ssn.add(JOB_ORDER, "c", fn("c", 1))
    assert ssn.job_order_less(object(), object()) is False  # c answers 1: the right one first
    assert calls == ["a", "c"]


def test_votes_reject_wins_permit_stops_all_abstain_is_true() -> None:
    ssn = _session(TWO_TIERS)
    ssn.add(JOB_PIPELINED, "a", lambda job: ABSTAIN)
    ssn.add(JOB_PIPELINED, "c", lambda job: REJECT)
    assert ssn.job_pipelined(object()) is False  # tier 1 abstains, tier 2 rejects
    ssn.add(JOB_PIPELINED, "b", lambda job: PERMIT)
    assert ssn.job_pipelined(object()) is True  # a permit in tier 1 decides
    ssn2 = _session(TWO_TIERS)
    ssn2.add(JOB_PIPELINED, "a", lambda job: ABSTAIN)
    assert ssn2.job_pipelined(object()) is True


def test_victims_intersect_within_a_tier_and_first_tier_with_an_answer_wins() -> None:
    ssn = _session(TWO_TIERS)
    x, y, z = object(), object(), object()
    ssn.add(PREEMPTABLE, "a", lambda p, c: ([x, y], PERMIT))
    ssn.add(PREEMPTABLE, "b", lambda p, c: ([y, z], PERMIT))
    ssn.add(PREEMPTABLE, "c", lambda p, c: ([z], PERMIT))
    assert ssn.preemptable(None, [x, y, z]) == [y]


def test_an_empty_answer_vetoes_its_tier_and_abstainers_are_ignored() -> None:
    ssn = _session(TWO_TIERS)
    x, y = object(), object()
    ssn.add(RECLAIMABLE, "a", lambda p, c: ([], PERMIT))
    ssn.add(RECLAIMABLE, "b", lambda p, c: ([x], ABSTAIN))
    ssn.add(RECLAIMABLE, "c", lambda p, c: ([y], PERMIT))
    assert ssn.reclaimable(None, [x, y]) == [y]


def test_starving_is_decided_by_the_first_tier_that_has_functions() -> None:
    ssn = _session(TWO_TIERS)
    assert ssn.job_starving(object()) is False  # nobody registered
    ssn.add(JOB_STARVING, "c", lambda job: True)
    assert ssn.job_starving(object()) is True
    ssn.add(JOB_STARVING, "a", lambda job: False)
    assert ssn.job_starving(object()) is False  # tier 1 answers now


def test_queue_gates_overused_or_allocatable_and() -> None:
    ssn = _session(TWO_TIERS)
    ssn.add(OVERUSED, "a", lambda q: False)
    ssn.add(OVERUSED, "c", lambda q: True)
    assert ssn.overused(object()) is True
    ssn.add(ALLOCATABLE, "a", lambda q, t: True)
    ssn.add(ALLOCATABLE, "c", lambda q, t: False)
    assert ssn.allocatable(object(), object()) is False


def test_registration_is_typed_by_the_point_and_unknown_points_are_refused() -> None:
    ssn = _session(TWO_TIERS)
    with pytest.raises(KeyError, match="unknown extension point"):
        ssn.add(Point("shuffle", None), "a", lambda tasks: tasks)
