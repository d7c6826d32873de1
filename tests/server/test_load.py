"""A bounded run of benchmarks/load_server.py: 20 clients and 5 watchers, 600 requests (a count, not a time),
reads, writes, watches, no errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "load_server.py"


def test_load_script_runs_without_errors() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--clients", "20", "--watchers", "5", "--duration", "30",
         "--max-requests", "600", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.stdout.strip(), proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["errors"] == 0, summary["error_samples"]
    assert proc.returncode == 0
    assert {"get", "list", "create", "patch", "delete"} <= set(summary["ops"])
    assert summary["watch_events"] > 0
