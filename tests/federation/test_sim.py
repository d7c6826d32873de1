"""``pumice sim`` on a federation scenario: the same code offline, policies compared on one workload."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pumice.cli.main import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "federation"


def _run(*args: str) -> dict:
    out = CliRunner().invoke(app, ["sim", str(EXAMPLE / "three-regions.yaml"), "-o", "json", *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout[out.stdout.index("{"):])


def test_three_regions_example() -> None:
    data = _run()
    jobs = {j["name"]: j for j in data["jobs"]}
    assert jobs["llm-pretrain"]["cluster"] == "us-west"  # the only 16-node tier-1 block
    assert jobs["h100-finetune"]["cluster"] == "us-west"  # the only H100s
    assert jobs["llm-eval"]["started"] >= jobs["llm-pretrain"]["finished"]  # dependsOn across members
    # eu-west (cheapest, and the preferred region) went dark at 10m: its jobs moved and finished elsewhere
    assert jobs["eu-batch-inference"]["moves"] == 1 and jobs["eu-batch-inference"]["cluster"] != "eu-west"
    assert all(j["phase"] == "Completed" for j in jobs.values())
    assert data["federation"]["overlaps"] == 0
    assert data["clusters"]["eu-west"]["state"] == "killed"


def test_policies_compared_on_the_same_workload(tmp_path: Path) -> None:
    default = _run()
    cheapest = _run("--federation-config", str(EXAMPLE / "cheapest-only.yaml"))
    place = {j["name"]: j["cluster"] for j in default["jobs"]}
    cheap = {j["name"]: j["cluster"] for j in cheapest["jobs"]}
    # the region preference is not in the cheapest-only policy: the batch job first goes where it is cheapest
    assert place["llm-pretrain"] == cheap["llm-pretrain"] == "us-west"  # topology is a requirement in both
    assert cheapest["federation"]["cost"] <= default["federation"]["cost"] + 1e-6


def test_bad_federation_scenario_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters:\n  a: {nodes: [{count: 1}], colour: red}\n")
    out = CliRunner().invoke(app, ["sim", str(bad)])
    assert out.exit_code == 2
    assert "clusters.a.colour: unknown key" in out.output
    bad.write_text("clusters:\n  a: {nodes: [{count: 1}]}\ntimeline:\n- {at: 1m, kill: b}\n")
    out = CliRunner().invoke(app, ["sim", str(bad)])
    assert out.exit_code == 2 and "no cluster named 'b'" in out.output
    cfg = tmp_path / "f.yaml"
    cfg.write_text("tiers:\n- plugins:\n  - name: teleport\n")
    out = CliRunner().invoke(app, ["sim", str(EXAMPLE / "three-regions.yaml"), "--federation-config", str(cfg)])
    assert out.exit_code == 2 and "unknown plugin 'teleport'" in out.output
