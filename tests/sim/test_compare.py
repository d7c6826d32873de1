"""``pumice sim --trace openb --compare``: policies side by side on a slice of openb (CI-sized)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pumice.cli.main import app
from pumice.sim.compare import compare_policies


@pytest.fixture
def openb(shared: Path) -> Path:
    return shared / "data" / "openb"


def test_fragmentation_leaves_fewer_gpus_unallocated_than_binpack(openb: Path) -> None:
    # the first 60 GPU nodes of openb; trace pods arrive 5 a session until they ask 1.2x the GPUs
    binpack, frag = compare_policies(openb, ["binpack", "fragmentation"], nodes="gpu", node_limit=60,
                                     inflate=1.2, rate=5)
    assert binpack.pods == frag.pods > 0
    assert binpack.arrived[-1] >= 120.0
    for r in (binpack, frag):
        # nothing is allocated that was not asked, and past saturation pods fail
        assert 0.0 <= r.unallocated[-1] <= 1.0
        assert r.failed > 0 and r.placed + r.failed == r.pods
    # below saturation every pod fits either way: the curves start equal
    assert binpack.unallocated_at(50) == pytest.approx(frag.unallocated_at(50), abs=0.01)
    at_full_b, at_full_f = binpack.unallocated_at(100), frag.unallocated_at(100)
    assert at_full_b is not None and at_full_f is not None
    assert at_full_f < at_full_b


def test_cli_prints_the_table_and_writes_the_curves(openb: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["sim", "--trace", "openb", "--trace-dir", str(openb), "--trace-nodes", "gpu",
                                      "--node-limit", "20", "--inflate", "1.1", "--arrival-rate", "10",
                                      "--compare", "binpack,fragmentation", "-o", "json",
                                      "--report", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [p["policy"] for p in data["policies"]] == ["binpack", "fragmentation"]
    assert set(data["policies"][0]["unallocated_at"]) >= {"50", "100"}
    assert (tmp_path / "rep" / "unallocated.png").stat().st_size > 0
    assert "unallocated.png" in (tmp_path / "rep" / "index.html").read_text()


def test_unknown_policy_is_an_error(openb: Path) -> None:
    result = CliRunner().invoke(app, ["sim", "--trace", "openb", "--trace-dir", str(openb), "--compare", "bogus"])
    assert result.exit_code == 2
    assert "--compare: bogus: unknown policy" in result.output or "unknown policy" in result.output
