"""Shared test fixtures: where ``../shared`` is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PUMICE_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} not found: the shared folder must sit beside the repository (or set PUMICE_SHARED)")
    return SHARED
