"""The CLI against a whole embedded cluster served over HTTP: controllers, scheduler and kubelets react.

Unlike ``test_cli.py`` (a bare API server: the tests write PodGroup conditions themselves), here the
job controller creates the PodGroup and pods and the scheduler writes why the gang waits; the test
only advances the cluster's virtual clock between commands.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pumice.cli.main import app

NODES = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


class Live:
    def __init__(self, cluster, kubeconfig: Path) -> None:
        self.cluster = cluster
        self.kubeconfig = kubeconfig

    def run(self, *args: str):
        result = CliRunner().invoke(app, [*args, "--kubeconfig", str(self.kubeconfig)], catch_exceptions=False)
        self.cluster.run_until(self.cluster.clock.now() + 3)  # let controllers, scheduler, kubelets react
        assert result.exit_code == 0, f"exit {result.exit_code}: {result.stdout}{result.stderr}"
        return result.stdout


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    from pumice.runtime import Cluster
    from pumice.server import ServerThread, create_app, write_kubeconfig

    cluster = Cluster()
    server = ServerThread(create_app(cluster.store, token="e2e", now=cluster.clock.now)).start()
    try:
        yield Live(cluster, write_kubeconfig(tmp_path / "kubeconfig", server.url, "e2e"))
    finally:
        server.stop()
        cluster.close()


def test_jobs_run_wait_and_suspend_on_a_live_cluster(live: Live, tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    live.run("apply", "-f", str(nodes))
    live.run("job", "run", "-N", "small", "-r", "2", "-m", "2", "-R", "cpu=1")
    live.run("job", "run", "-N", "big", "-r", "3", "-m", "3", "-R", "cpu=2")   # admitted, gang cannot fit
    live.run("job", "run", "-N", "huge", "-r", "3", "-m", "3", "-R", "cpu=3")  # needs more than the cluster

    jobs = {line.split()[0]: line.split() for line in live.run("job", "list").splitlines()[1:]}
    assert jobs["small"][2] == "Running"
    pods = live.run("pod", "list", "--job", "small")
    assert "Running" in pods and ("n1" in pods or "n2" in pods)

    big = live.run("describe", "job", "big")
    why = big[big.index("Why it waits:"):big.index("\nQueue:")]
    assert "3 of 3 pods of the gang cannot be placed together" in why
    assert "Insufficient cpu" in why

    huge = live.run("describe", "job", "huge")
    why = huge[huge.index("Why it waits:"):huge.index("\nQueue:")]
    assert "Not admitted yet" in why
    assert "cpu 9 (all 2 nodes together have 8)" in why

    live.run("job", "suspend", "-N", "small")
    jobs = {line.split()[0]: line.split() for line in live.run("job", "list").splitlines()[1:]}
    assert jobs["small"][2] in ("Aborting", "Aborted")
    queues = {line.split()[0]: line.split() for line in live.run("queue", "list").splitlines()[1:]}
    assert queues["default"][1:3] == ["1", "Open"]
