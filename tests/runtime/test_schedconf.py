"""The live control plane's scheduler configuration: its default honours hard topology, and a file is re-read
when it changes (a bad file keeps the running configuration)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pumice.cli.main import app
from pumice.runtime.schedconf import ConfFile, live_default_conf
from pumice.scheduler import ConfError, default_conf, run_session

RACK = "example.com/rack"


def _cluster() -> list[dict[str, Any]]:
    """Two racks of two 8-CPU nodes, and a hard-topology gang of three 8-CPU pods (tier 1: one rack)."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1}, "status": {"state": "Open"}}]
    for rack in ("r0", "r1"):
        members = []
        for i in range(2):
            name = f"{rack}-n{i}"
            res = {"cpu": "8", "memory": "32Gi", "pods": "110"}
            objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {RACK: rack}},
                            "status": {"capacity": res, "allocatable": res}})
            members.append({"type": "Node", "selector": {"exactMatch": {"name": name}}})
        objects.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": rack},
                        "spec": {"tier": 1, "members": members}})
    objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": "gang", "namespace": "default"},
                    "spec": {"minMember": 3, "queue": "default",
                             "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
                    "status": {"phase": "Inqueue"}})
    for i in range(3):
        objects.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"gang-{i}", "namespace": "default",
                                     "annotations": {"scheduling.k8s.io/group-name": "gang"}},
                        "spec": {"schedulerName": "volcano", "containers": [
                            {"name": "c", "resources": {"requests": {"cpu": "8"}}}]},
                        "status": {"phase": "Pending"}})
    return objects


def test_live_default_honours_hard_topology_where_volcano_default_does_not() -> None:
    volcano = run_session(_cluster(), default_conf())
    assert len(volcano.binds) == 3  # Volcano's shipped conf: no gradient, the gang spreads over both racks
    assert {node.split("-")[0] for node in volcano.binds.values()} == {"r0", "r1"}
    live = run_session(_cluster(), live_default_conf())
    assert live.binds == {}  # one fabric or nothing: three 8-CPU pods fit in no single rack


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    stamp = time.time() + 1  # a new modification time even within the file system's time resolution
    os.utime(path, (stamp, stamp))


def test_conf_file_is_reread_and_a_bad_one_is_kept_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    _write(path, 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    conf = ConfFile(path)
    assert conf.conf.actions == ["enqueue", "allocate"]
    assert conf.poll() is None  # unchanged
    _write(path, 'actions: "enqueue, allocate, backfill, preempt"\ntiers:\n- plugins:\n  - name: priority\n')
    fresh = conf.poll()
    assert fresh is not None and fresh.actions[-1] == "preempt"
    with caplog.at_level(logging.ERROR, logger="pumice.config"):
        _write(path, 'actions: "enqueue, allocat"\n')
        assert conf.poll() is None
    assert conf.conf.actions[-1] == "preempt"  # the running configuration stays
    assert len([r for r in caplog.records if "allocat" in r.getMessage()]) == 1
    assert "\n" not in conf.last_error and str(path) in conf.last_error


def test_bad_conf_at_start_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.conf"
    path.write_text("actions: [\n")
    with pytest.raises(ConfError):
        ConfFile(path)
    result = CliRunner().invoke(app, ["up", "--data-dir", str(tmp_path / "d"), "--config", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0]


def test_pumice_up_rereads_its_config(tmp_path: Path) -> None:
    from pumice.cli.up import ControlPlane
    from pumice.server import free_port

    path = tmp_path / "volcano-scheduler.conf"
    _write(path, 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    with ControlPlane(tmp_path / "data", port=free_port(), config=path) as plane:
        cluster = plane._parts.cluster  # type: ignore[union-attr]
        assert cluster.scheduler.conf.actions == ["enqueue", "allocate"]
        _write(path, 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n')
        deadline = time.monotonic() + 10
        while cluster.scheduler.conf.actions[-1] != "backfill" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cluster.scheduler.conf.actions[-1] == "backfill"
        _write(path, "tiers: 3\n")
        time.sleep(2.5)
        assert cluster.scheduler.conf.actions[-1] == "backfill"
        assert plane.conf_file is not None and plane.conf_file.errors == 1
