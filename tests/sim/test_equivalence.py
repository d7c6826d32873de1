"""Speed work must not change what a simulation says: slices of openb against their recorded answers.

``data/golden_slices.json.gz`` holds the ``pumice sim -o json`` answer (jobs and summary, without the wall
time) of each case below, as computed before the simulator, store and controllers were optimized. Each
run also checks that no part of the cluster mutates an object the store handed out in a watch event
(those are shared among all watches, read-only).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from pumice.sim import job_rows, load_openb, run_scenario, summarize
from tests.store.helpers import shared_objects_checked

GOLDEN = Path(__file__).parent / "data" / "golden_slices.json.gz"

#: name -> (load_openb arguments, keep every n-th node): light load, contention, Volcano Jobs.
CASES: dict[str, tuple[dict[str, Any], int]] = {
    "plain": ({"limit": 300}, 1),
    "contended": ({"limit": 300, "compress": 1000}, 37),
    "jobs": ({"limit": 150, "as_jobs": True, "compress": 1000}, 37),
}


def answer(openb: Path, name: str) -> dict[str, Any]:
    kwargs, every = CASES[name]
    sc = load_openb(openb, **kwargs)
    sc.nodes = sc.nodes[::every]
    result = run_scenario(sc)
    rows = job_rows(result)
    summary = summarize(result, rows)
    summary["cluster"].pop("wall_seconds")
    for measured in ("cpu_used_mean", "memory_used_mean"):  # added after the answers were recorded
        summary["cluster"].pop(measured)
    return json.loads(json.dumps({"jobs": rows, **summary}))


@pytest.mark.parametrize("name", list(CASES))
def test_slice_answers_as_before(shared: Path, name: str) -> None:
    golden = json.loads(gzip.decompress(GOLDEN.read_bytes()))[name]
    with shared_objects_checked():
        got = answer(shared / "data" / "openb", name)
    assert got["cluster"] == golden["cluster"]
    assert got["queues"] == golden["queues"]
    assert got == golden
