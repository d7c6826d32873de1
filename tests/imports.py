"""What a piece of code imports: run in a fresh interpreter, so that the test's own imports do not count."""

from __future__ import annotations

import json
import subprocess
import sys


def imported_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` are imported once ``code`` has run in a new Python process (sorted)."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found
