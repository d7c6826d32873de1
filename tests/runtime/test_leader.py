"""Leader election on a Lease: one leader at a time, a dead leader replaced after the lease duration."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.runtime.leader import LEASES, LeaderElector
from pumice.store import MemoryStore


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(store: MemoryStore, clock: FakeTime, name: str) -> LeaderElector:
    return LeaderElector(store, "vc-scheduler", "volcano-system", name, monotonic=clock, wall=clock)


def test_second_candidate_waits_for_the_lease_to_expire() -> None:
    store, clock = MemoryStore(), FakeTime()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert a.try_acquire_or_renew() and a.leading
    assert not b.try_acquire_or_renew() and not b.leading
    for _ in range(5):  # a renews every 2 s: b never gets it
        clock.now += 2
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()
    # a dies: it stops leading after the renew deadline, b takes over after the lease duration
    clock.now += 10
    assert not a.leading
    assert not b.try_acquire_or_renew()
    clock.now += 5.1
    assert b.try_acquire_or_renew() and b.leading
    lease = store.get(LEASES, "volcano-system", "vc-scheduler")
    assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()  # the old leader, back, is refused


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.floats(0.0, 6.0)), min_size=1, max_size=60))
def test_never_two_leaders(steps: list[tuple[int, float]]) -> None:
    """Whatever the order and timing of the candidates' attempts, at most one of them is leading."""
    store, clock = MemoryStore(), FakeTime()
    candidates = [elector(store, clock, name) for name in ("a", "b", "c")]
    for who, advance in steps:
        clock.now += advance
        candidates[who].try_acquire_or_renew()
        assert sum(c.leading for c in candidates) <= 1


def test_threads_fail_over_within_the_lease_duration() -> None:
    store = MemoryStore()
    options = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.3}
    a = LeaderElector(store, "lock", "ns", "a", **options).start()
    assert a.wait_leading(5)
    b = LeaderElector(store, "lock", "ns", "b", **options).start()
    time.sleep(0.6)
    assert not b.leading
    killed = time.monotonic()
    a.stop(release=False)  # a crash: no goodbye
    assert b.wait_leading(5)
    assert time.monotonic() - killed <= 2.0 + 0.5
    b.stop()  # released: the Lease is free at once
    c = LeaderElector(store, "lock", "ns", "c", **options)
    assert c.try_acquire_or_renew()
