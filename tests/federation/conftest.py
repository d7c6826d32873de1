"""Fixtures of the federation tests: worlds are closed after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pumice.sim.world import FederatedWorld

from .builders import world


@pytest.fixture
def make_world() -> Iterator[Callable[..., FederatedWorld]]:
    made: list[FederatedWorld] = []

    def _make(*args: Any, **kwargs: Any) -> FederatedWorld:
        w = world(*args, **kwargs)
        made.append(w)
        return w

    yield _make
    for w in made:
        w.close()
