"""Fixtures: a live dashboard (uvicorn on 127.0.0.1 + store + background cluster), stopped after the module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .live import Live, start


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    running = start()
    try:
        yield running
    finally:
        running.stop()
    assert not running.errors, running.errors
