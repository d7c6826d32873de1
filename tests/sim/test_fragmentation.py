"""``fragmentation``: the FGD measure, checked against its plain three-dimensional formulation."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pumice.sim import fragmentation


def _reference(rec: Any, top: int = 64) -> float:
    cap = rec.capacity
    dim = 2 if cap[:, 2].sum() > 0 else 0
    common = rec.shapes.most_common(top)
    shapes = np.array([np.frombuffer(k, dtype=float) for k, _ in common])
    weights = np.array([n for _, n in common], dtype=float)
    weights /= weights.sum()
    free = np.maximum(cap - rec.used, 0.0)
    fits = (free[:, None, :] + 1e-6 >= shapes[None, :, :]).all(axis=2)
    return float((free[:, dim] * ((~fits) @ weights)).sum() / cap[:, dim].sum())


@pytest.mark.parametrize(("seed", "gpus"), [(1, True), (2, True), (3, False)])
def test_fragmentation_is_the_reference_value(seed: int, gpus: bool) -> None:
    rng = np.random.default_rng(seed)
    cap = rng.integers(1, 64, size=(300, 3)).astype(float) * [1000.0, 2.0**30, 1000.0 if gpus else 0.0]
    used = np.floor(cap * rng.random((300, 3)))
    shapes: Counter[bytes] = Counter()
    for _ in range(200):  # more shapes than the 64 most common that count
        shape = np.array([rng.integers(1, 32) * 500.0, rng.integers(1, 64) * 2.0**28, rng.integers(0, 4) * 250.0])
        shapes[shape.tobytes()] += int(rng.integers(1, 20))
    rec = SimpleNamespace(capacity=cap, used=used, shapes=shapes)
    got = fragmentation(rec)  # type: ignore[arg-type]
    assert 0.0 < got < 1.0
    assert got == _reference(rec)
