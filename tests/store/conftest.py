"""Fixtures: every shared-behaviour test runs against both MemoryStore and SqliteStore (a real file)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pumice.store import BaseStore, MemoryStore, SqliteStore

StoreFactory = Callable[..., BaseStore]


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Build stores of the parametrized kind; all are closed after the test."""
    stores: list[BaseStore] = []

    def factory(**kwargs: Any) -> BaseStore:
        if request.param == "memory":
            store: BaseStore = MemoryStore(**kwargs)
        else:
            store = SqliteStore(tmp_path / f"store-{len(stores)}.db", **kwargs)
        stores.append(store)
        return store

    yield factory
    for store in stores:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> BaseStore:
    return make_store()
