"""Fixtures of the simulator tests: the quick-start manifests, a scratch scenario writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def quickstart(shared: Path) -> Path:
    return shared / "scenarios" / "quickstart"


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return _write
