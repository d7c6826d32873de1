"""Helpers of the ``pumice up`` tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float = 15.0, state: Callable[[], object] | None = None) -> T:
    """The first truthy value of ``check()``, polled every 0.1 s; AssertionError after ``timeout`` seconds
    (saying what ``state()`` shows then: a timeout in CI is otherwise hard to read)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("not reached in time" + (f"; state: {state()!r}" if state is not None else ""))
