"""The shared job cases (Volcano's own plugin and JobFlow admission tests, ``../shared/job-cases``) through
their runner, which starts ``pumice up`` on loopback: every case must pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def test_every_job_case_passes(shared: Path) -> None:
    runner, cases = shared / "tools" / "job_cases.py", shared / "job-cases"
    if not runner.is_file() or not cases.is_dir():
        pytest.fail(f"{runner} or {cases} is missing")
    proc = subprocess.run([sys.executable, str(runner), f"{sys.executable} -m pumice.cli.main", str(cases)],
                          capture_output=True, text=True, timeout=600, check=False)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-400:]
    failures = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert proc.returncode == 0, f"{summary}\n" + "\n".join(failures)
    print(summary)
