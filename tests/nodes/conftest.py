"""Fixtures of the simulated kubelet tests: a virtual clock and a memory store on it."""

from __future__ import annotations

import pytest

from pumice.clock import VirtualClock, to_datetime
from pumice.store import MemoryStore


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def store(clock: VirtualClock) -> MemoryStore:
    return MemoryStore(clock=lambda: to_datetime(clock.now()))
