"""How long a simulated pod runs and how it ends, read from its manifest.

Order of precedence: the ``pumice.io/duration`` annotation (seconds or a Go duration such as
``5m`` or ``1h30m``), else the ``sleep N`` calls in the containers' command and args (a shell
script runs them one after the other; containers run side by side, so the longest wins), else
``None``: the pod runs until it is deleted.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "DURATION_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "FAIL_ANNOTATION",
    "exit_code",
    "parse_duration",
    "pod_duration",
]

DURATION_ANNOTATION = "pumice.io/duration"
FAIL_ANNOTATION = "pumice.io/fail"
EXIT_CODE_ANNOTATION = "pumice.io/exit-code"

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)")
_SLEEP = re.compile(r"(?<![\w-])sleep\s+(\d+(?:\.\d*)?|\.\d+)([smhd]?)(?![\w.])")


def parse_duration(value: Any) -> float:
    """Seconds from ``300``, ``"300"``, ``"2.5"``, ``"5m"``, ``"1h30m"``; ``ValueError`` otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"negative duration: {value!r}")
        return float(value)
    text = str(value).strip()
    try:
        seconds = float(text)
    except ValueError:
        pos, seconds = 0, 0.0
        for m in _GO_PART.finditer(text):
            if m.start() != pos:
                break
            seconds += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if pos != len(text) or not text:
            raise ValueError(f"not a duration: {value!r} (use seconds or a Go duration like 5m, 1h30m)") from None
    if seconds < 0:
        raise ValueError(f"negative duration: {value!r}")
    return seconds


def _script_sleeps(container: dict[str, Any]) -> float | None:
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    found = _SLEEP.findall(" ".join(words))
    if not found:
        return None
    return sum(float(n) * _UNITS[u or "s"] for n, u in found)


def pod_duration(pod: dict[str, Any]) -> float | None:
    """The run time of a pod in seconds, or ``None`` when it runs until deleted (see the module doc)."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    if DURATION_ANNOTATION in ann:
        return parse_duration(ann[DURATION_ANNOTATION])
    spec = pod.get("spec") or {}
    init = sum(s for c in spec.get("initContainers") or [] if (s := _script_sleeps(c)) is not None)
    main = [s for c in spec.get("containers") or [] if (s := _script_sleeps(c)) is not None]
    if not main:
        return None
    return init + max(main)


def exit_code(pod: dict[str, Any]) -> int:
    """0 unless annotated ``pumice.io/fail: "true"`` (1) or ``pumice.io/exit-code: "N"``."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    if EXIT_CODE_ANNOTATION in ann:
        try:
            return int(ann[EXIT_CODE_ANNOTATION])
        except (TypeError, ValueError):
            return 1
    return 1 if str(ann.get(FAIL_ANNOTATION, "")).lower() == "true" else 0
