"""Every command is listed and runs, while each start imports only the command it runs (pumice.cli.lazy)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pumice.cli.lazy import COMMANDS, load_command
from pumice.cli.main import app

#: Libraries only some commands use: the server, the Kubernetes client, plots, the webhooks' TLS.
HEAVY = ("aiohttp", "starlette", "uvicorn", "kubernetes", "matplotlib", "cryptography", "pumice.sim",
         "pumice.server", "pumice.store.kube")
#: What a dry run of a file of pods and nodes needs none of: the store's machinery, the models of other kinds,
#: the job controller (for files with VolcanoJobs), the extender plugin's HTTP client.
DRY_RUN_UNUSED = (*HEAVY, "asyncio", "sqlite3", "pumice.store.base", "pumice.api.apps", "pumice.api.flow",
                  "pumice.api.rbac", "pumice.api.batch", "pumice.controllers.job_build", "http.client")


def test_help_lists_every_command_with_its_summary() -> None:
    result = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    for name in ["schedule", *COMMANDS]:
        line = next((line for line in result.stdout.splitlines() if line.strip("│ ").startswith(name + " ")), None)
        assert line is not None, f"{name} not listed"
        assert line.strip("│ ")[len(name):].strip(), f"{name} has no summary"


def test_each_lazy_command_builds_with_its_options() -> None:
    for name in COMMANDS:
        command = load_command(name)
        assert command.name == name
        result = CliRunner().invoke(app, [name, "--help"])
        assert result.exit_code == 0, (name, result.stdout)
        assert "Usage" in result.stdout


def test_a_dry_run_imports_neither_the_server_nor_the_store(tmp_path: Path) -> None:
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n"
        "  allocatable: {cpu: '8', memory: 16Gi, pods: '110'}\n"
        "  conditions: [{type: Ready, status: 'True'}]\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n"
        "spec: {schedulerName: volcano, containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}\n")
    code = ("import sys, json\nfrom pumice.cli.main import app\nsys.argv = ['pumice', 'schedule', '-f', sys.argv[1], "
            "'-o', 'json']\ntry:\n    app()\nexcept SystemExit:\n    pass\nprint(json.dumps(sorted(m for m in "
            f"sys.modules if m.startswith({DRY_RUN_UNUSED!r}))), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(manifest)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "binds" in json.loads(done.stdout)  # the session ran and printed its decisions
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []


#: What a command that only talks to a server (``get``, vcctl's ``list``) needs none of: the engine's NumPy,
#: the models of kinds it does not read.
CLIENT_UNUSED = ("numpy", "pumice.api.core", "pumice.api.batch", "pumice.api.scheduling", "pumice.scheduler",
                 "aiohttp", "starlette", "uvicorn")


@pytest.mark.parametrize("command", [["get", "pods", "-A"], ["job", "list"], ["queue", "list"]])
def test_client_commands_start_without_the_engine_or_the_models(command: list[str]) -> None:
    code = ("import sys, json\nfrom pumice.cli.main import app\nsys.argv = ['pumice', *sys.argv[1:]]\ntry:\n"
            "    app()\nexcept SystemExit as exit:\n    print('exit', exit.code, file=sys.stderr)\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({CLIENT_UNUSED!r}))), file=sys.stderr)")
    # nothing listens on port 1: the command gets as far as its request, then fails in one line
    done = subprocess.run([sys.executable, "-c", code, *command, "--server", "http://127.0.0.1:1"],
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert lines[-2] == "exit 1", done.stderr
    assert json.loads(lines[-1]) == []
