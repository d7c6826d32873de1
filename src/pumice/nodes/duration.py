"""How long a simulated pod runs and how it ends, read from its manifest.

Order of precedence: the ``pumice.io/duration`` annotation (seconds or a Go duration such as
``5m`` or ``1h30m``), else what the containers' commands do when :mod:`pumice.nodes.script` can follow
them (``echo ... && sleep 300``: 300 s; ``exit 3``: at once, with code 3), else the ``sleep N`` calls in
their command and args (a shell script runs them one after the other); containers run side by side, so
the longest wins, after the init containers one by one. Without any of these the pod runs until it is
deleted (``None``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .script import ContainerRun, simulate

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


def container_run(container: dict[str, Any]) -> ContainerRun:
    """``simulate(container)``, once per distinct command, args and env (replicas share their template's)."""
    env = tuple((str(e.get("name")), str(e.get("value") or "")) for e in container.get("env") or []
                if isinstance(e, dict) and "valueFrom" not in e)
    return _run(tuple(map(str, container.get("command") or ())), tuple(map(str, container.get("args") or ())), env)


@functools.lru_cache(maxsize=1024)
def _run(command: tuple[str, ...], args: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> ContainerRun:
    return simulate({"command": list(command), "args": list(args),
                     "env": [{"name": k, "value": v} for k, v in env]})


_FOREVER = float("inf")


def _container_seconds(container: dict[str, Any]) -> float | None:
    """How long one container runs: inf when forever, None when nothing tells."""
    run = container_run(container)
    if run.complete:
        return _FOREVER if run.exit_at is None else run.exit_at
    return _script_sleeps(container)


def pod_duration(pod: dict[str, Any]) -> float | None:
    """The run time of a pod in seconds, or ``None`` when it runs until deleted (see the module doc)."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    if DURATION_ANNOTATION in ann:
        return parse_duration(ann[DURATION_ANNOTATION])
    spec = pod.get("spec") or {}
    init = sum(s for c in spec.get("initContainers") or [] if (s := _container_seconds(c)) is not None)
    main = [s for c in spec.get("containers") or [] if (s := _container_seconds(c)) is not None]
    if not main or init == _FOREVER or max(main) == _FOREVER:
        return None
    return init + max(main)


def exit_code(pod: dict[str, Any]) -> int:
    """``pumice.io/exit-code: "N"``, or 1 with ``pumice.io/fail: "true"``, else the first non-zero exit of
    a container whose command is followed (``exit 3``), else 0."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    if EXIT_CODE_ANNOTATION in ann:
        try:
            return int(ann[EXIT_CODE_ANNOTATION])
        except (TypeError, ValueError):
            return 1
    if str(ann.get(FAIL_ANNOTATION, "")).lower() == "true":
        return 1
    spec = pod.get("spec") or {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        run = container_run(c)
        if run.complete and run.exit_code:
            return run.exit_code
    return 0
