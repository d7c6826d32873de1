"""End to end in the simulator: usage-aware placement (``examples/sim/load-aware.yaml``).

A service that really uses 3.5 times its CPU request makes its node hot; the simulated kubelet measures it
from the pod's ``pumice.io/usage`` profile, the scheduler reads the node metrics, and the usage plugin keeps
the batch job submitted later off that node. The same scenario without the plugin puts batch pods there."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.sim import load_scenario, run_scenario
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "sim" / "load-aware.yaml"


def placements(path: Path) -> tuple[str, list[str]]:
    result = run_scenario(load_scenario(path))
    assert result.errors == []
    hot = next(p.node for p in result.recorder.pods.values() if p.name.startswith("service"))
    batch = [p.node for p in result.recorder.pods.values() if p.name.startswith("batch")]
    assert len(batch) == 8 and all(batch)
    return hot, batch


@pytest.mark.parametrize("with_usage", [True, False])
def test_batch_pods_avoid_the_node_made_hot_by_real_usage(tmp_path: Path, with_usage: bool) -> None:
    text = EXAMPLE.read_text()
    assert "    - name: usage\n" in text
    path = tmp_path / "load-aware.yaml"
    path.write_text(text if with_usage else text.replace("    - name: usage\n", ""))
    hot, batch = placements(path)
    on_hot = batch.count(hot)
    if with_usage:
        assert on_hot == 0
    else:
        assert on_hot > 0  # by requests alone the hot node looks three-quarters free


def test_a_pod_kept_off_a_hot_node_is_placed_once_the_node_cools(tmp_path: Path) -> None:
    """Nothing but the node's measured usage changes: the waiting pod still gets its session when it cools."""
    import yaml

    def job(name: str, cpu: str, usage: str) -> dict[str, object]:
        return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
                "spec": {"schedulerName": "volcano", "minAvailable": 1, "tasks": [{"name": "t", "replicas": 1,
                         "template": {"metadata": {"annotations": {"pumice.io/usage": usage,
                                                                   "pumice.io/duration": "1h"}},
                                      "spec": {"restartPolicy": "Never", "containers": [
                                          {"name": "c", "image": "busybox",
                                           "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}]}}

    text = EXAMPLE.read_text()
    conf = yaml.safe_load(text)["scheduler"]
    scenario = {"name": "cooling", "cluster": {"nodes": [{"count": 1, "name": "only", "cpu": 8, "memory": "32Gi"}]},
                "scheduler": conf,
                "timeline": [{"at": "0s", "apply": job("service", "2", "cpu=1,1m:3.5,10m:0.5")},
                             {"at": "3m", "apply": job("batch", "1", "0.5")}],
                "until": "30m"}
    path = tmp_path / "cooling.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    result = run_scenario(load_scenario(path))
    batch = next(p for p in result.recorder.pods.values() if p.name.startswith("batch"))
    assert batch.start is not None and 600 < batch.start - batch.created + 180 <= 700, batch
