"""``pumice run`` refuses, on one line and with a non-zero exit, what it cannot work with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pumice.cli.main import app

from .cluster import HAVE_KUBE120, KUBE120_BIN, Kube120, free_port


def _one_line(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["run", *args])
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    return result.exit_code, lines[0]


def test_unreachable_server(tmp_path: Path) -> None:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{free_port()}",
                                                     "insecure-skip-tls-verify": True}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    code, line = _one_line(["--kubeconfig", str(path), "--components", "scheduler"])
    assert code == 1 and "cannot reach https://127.0.0.1" in line and "connection refused" in line
    code, line = _one_line(["--kubeconfig", str(path), "--context", "nope", "--components", "scheduler"])
    assert code == 2 and "nope" in line


def test_bad_flags(tmp_path: Path) -> None:
    assert _one_line(["--kubeconfig", str(tmp_path / "none")])[0] == 2
    bad = tmp_path / "bad.conf"
    bad.write_text('actions: "allocate, nosuchaction"\n')
    code, line = _one_line(["--kubeconfig", str(tmp_path / "none"), "--config", str(bad)])
    assert code == 2 and "nosuchaction" in line and str(bad) in line
    code, line = _one_line(["--time-scale", "0"])
    assert code == 2 and "--time-scale" in line
    code, line = _one_line(["--listen-address", "localhost"])
    assert code == 2 and "--listen-address 'localhost'" in line


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube120]:
    """A kube-apiserver without Volcano's CRDs."""
    if not HAVE_KUBE120:
        pytest.skip(f"kube-apiserver 1.20 is not built in {KUBE120_BIN}")
    cluster = Kube120(tmp_path_factory.mktemp("kube120-bare"))
    try:
        yield cluster.start(crds=False)
    finally:
        cluster.stop()


def test_missing_crds(bare: Kube120) -> None:
    code, line = _one_line(["--kubeconfig", str(bare.kubeconfig), "--components", "scheduler"])
    assert code == 1 and "does not serve" in line and "volcano.sh" in line and "pumice crds" in line
