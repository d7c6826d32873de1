"""proportion's deserved loop runs on Python floats: it must give what the vector form gives."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler.model import QueueInfo
from pumice.scheduler.plugins.proportion import QueueAttr, water_fill
from pumice.scheduler.resources import EPS, SharesOf, less_equal, share

R = 3
amount = st.one_of(st.integers(0, 64).map(lambda v: v * 500.0), st.just(0.0))
vector = st.lists(amount, min_size=R, max_size=R).map(np.array)
capability = st.one_of(vector, st.just(np.full(R, np.inf)))
queue = st.tuples(st.integers(0, 5), vector, vector, capability, vector)  # weight, allocated, request, cap, guarantee


def _vector_water_fill(attrs: dict[str, QueueAttr], total: np.ndarray) -> None:
    """Volcano's loop as written with resource vectors (the reference)."""
    remaining = total.copy()
    meet: set[str] = set()
    while True:
        weight_sum = sum(a.weight for name, a in attrs.items() if name not in meet)
        if weight_sum == 0:
            break
        old = remaining.copy()
        increased = np.zeros_like(total)
        decreased = np.zeros_like(total)
        for name, attr in attrs.items():
            if name in meet:
                continue
            prev = attr.deserved.copy()
            attr.deserved = attr.deserved + remaining * attr.weight / weight_sum
            attr.deserved = np.minimum(attr.deserved, attr.real_capability)
            attr.deserved = np.minimum(attr.deserved, attr.request)
            attr.deserved = np.maximum(attr.deserved, attr.guarantee)
            attr.share = share(attr.allocated, attr.deserved)
            if less_equal(attr.request, attr.deserved) or np.array_equal(attr.deserved, prev):
                meet.add(name)
            diff = attr.deserved - prev
            increased += np.maximum(diff, 0)
            decreased += np.maximum(-diff, 0)
        remaining = np.maximum(remaining + decreased - increased, 0)
        if bool(np.all(remaining < EPS)) or np.array_equal(remaining, old):
            break


def _attrs(queues: list[tuple]) -> dict[str, QueueAttr]:
    out = {}
    for i, (weight, allocated, request, cap, guarantee) in enumerate(queues):
        info = QueueInfo(uid=f"q{i}", name=f"q{i}", weight=weight, priority=0, parent="", state="Open",
                         reclaimable=True, capability=None, guarantee=None, deserved=None, creation=0.0, queue={})
        out[info.name] = QueueAttr(queue=info, weight=weight, guarantee=guarantee.copy(), capability=cap.copy(),
                                   allocated=allocated.copy(), request=allocated + request, inqueue=np.zeros(R),
                                   elastic=np.zeros(R), deserved=np.zeros(R), real_capability=cap.copy())
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(queue, min_size=1, max_size=5), vector)
def test_float_water_fill_matches_the_vector_form(queues: list[tuple], total: np.ndarray) -> None:
    expected, got = _attrs(queues), _attrs(queues)
    _vector_water_fill(expected, total)
    water_fill(got, total)
    for name, want in expected.items():
        assert np.array_equal(got[name].deserved, want.deserved), name
        assert got[name].share == want.share, name


@settings(max_examples=300)
@given(st.lists(st.floats(0, 1e12), min_size=R, max_size=R).map(np.array),
       st.lists(st.one_of(st.just(0.0), st.floats(0, 1e12)), min_size=R, max_size=R).map(np.array))
def test_shares_against_a_fixed_total_are_share(allocated: np.ndarray, total: np.ndarray) -> None:
    """drf's job shares, computed against the session's total with its dimensions picked once."""
    assert SharesOf(total)(allocated) == share(allocated, total)
