"""A short, bounded run of benchmarks/load_server.py: 50 concurrent clients, reads, writes, watches, no errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "load_server.py"


def test_load_script_runs_without_errors() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--clients", "50", "--watchers", "5", "--duration", "3",
         "--max-requests", "4000", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.stdout.strip(), proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["errors"] == 0, summary["error_samples"]
    assert proc.returncode == 0
    assert {"get", "list", "create", "patch", "delete"} <= set(summary["ops"])
    assert summary["watch_events"] > 0
