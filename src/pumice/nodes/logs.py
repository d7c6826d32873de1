"""``kubectl logs`` of a simulated container: what its command printed by now, with the pod's own times.

The output is not stored anywhere: it follows from the pod (its containers' commands, its start time and
whether it has terminated) and the clock, through :mod:`pumice.nodes.script`. A line appears at the
container's start plus the time the command reaches it; a running container has printed the lines due by
``now``, a terminated one those due by its ``finishedAt``. Init containers run one after the other before
the main ones. A command that cannot be followed gets one line saying so (and what was not understood),
after the lines it printed before that point: nothing made up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .duration import container_run
from .script import simulate

__all__ = ["LogError", "LogLine", "LogOptions", "container_log", "format_lines"]

_DONE = ("Succeeded", "Failed")


class LogError(Exception):
    """A request kube-apiserver/the kubelet would refuse: ``code`` (400 or 404) and the message they give."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class LogLine:
    time: float  # seconds since the epoch
    text: str


@dataclass(frozen=True, slots=True)
class LogOptions:
    """The query of ``GET .../pods/NAME/log`` (``PodLogOptions``)."""

    container: str | None = None
    timestamps: bool = False
    tail_lines: int | None = None
    since_seconds: float | None = None
    since_time: float | None = None
    limit_bytes: int | None = None
    previous: bool = False


def _epoch(text: Any) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _pick(pod: dict[str, Any], name: str | None) -> tuple[dict[str, Any], int, bool]:
    """The container asked for: (container, index, is an init container); kube-apiserver's errors otherwise."""
    spec = pod.get("spec") or {}
    pod_name = (pod.get("metadata") or {}).get("name")
    main = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    init = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    if not name:
        if len(main) == 1:
            return main[0], 0, False
        names = " ".join(str(c.get("name")) for c in main)
        message = f"a container name must be specified for pod {pod_name}, choose one of: [{names}]"
        if init:
            message += f" or one of the init containers: [{' '.join(str(c.get('name')) for c in init)}]"
        raise LogError(message)
    for i, c in enumerate(main):
        if c.get("name") == name:
            return c, i, False
    for i, c in enumerate(init):
        if c.get("name") == name:
            return c, i, True
    raise LogError(f"container {name} is not valid for pod {pod_name}")


def _status_of(pod: dict[str, Any], name: str, init: bool) -> dict[str, Any]:
    key = "initContainerStatuses" if init else "containerStatuses"
    for st in (pod.get("status") or {}).get(key) or []:
        if isinstance(st, dict) and st.get("name") == name:
            return st
    return {}


def container_log(pod: dict[str, Any], now: float, options: LogOptions = LogOptions()) -> tuple[list[LogLine], bool]:
    """The lines the container has printed by ``now``, and whether it has terminated (nothing more will
    come). ``LogError`` for what kube-apiserver refuses (no node yet, not started, unknown container, no
    previous instance)."""
    meta = pod.get("metadata") or {}
    pod_name = str(meta.get("name"))
    container, index, is_init = _pick(pod, options.container)
    cname = str(container.get("name"))
    if options.previous:
        raise LogError(f'previous terminated container "{cname}" in pod "{pod_name}" not found')
    if not (pod.get("spec") or {}).get("nodeName"):
        raise LogError(f"pod {pod_name} does not have a host assigned")
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    started = _epoch(status.get("startTime"))
    if started is None:
        raise LogError(f'container "{cname}" in pod "{pod_name}" is waiting to start: ContainerCreating')
    spec = pod.get("spec") or {}
    # init containers run one after the other, the main ones after them all
    before = spec.get("initContainers") or []
    offset = 0.0
    for c in before[:index] if is_init else before:
        run = container_run(c)
        offset += run.exit_at if run.complete and run.exit_at is not None else 0.0
    start = started + offset
    end = None
    if phase in _DONE:
        state = _status_of(pod, cname, is_init).get("state") or {}
        end = _epoch((state.get("terminated") or {}).get("finishedAt")) or now
    cutoff = now if end is None else min(end, now)
    env = {"HOSTNAME": pod_name}  # what the kubelet sets
    run = simulate(container, env={**env, **_field_env(pod, container)}, start=start)
    lines = [LogLine(start + line.at, line.text) for line in run.lines if start + line.at <= cutoff]
    if not run.complete and start + run.stopped_at <= cutoff:
        lines.append(LogLine(start + run.stopped_at, _honest(run.problem, bool(run.lines))))
    finished = end is not None
    return lines, finished


def _field_env(pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
    """The container's ``env`` set ``valueFrom.fieldRef`` that the pod answers (name, namespace, node, ...)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    fields = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName"), "status.podIP": status.get("podIP"),
              "status.hostIP": status.get("hostIP")}
    out: dict[str, str] = {}
    for item in container.get("env") or []:
        ref = ((item.get("valueFrom") or {}).get("fieldRef") or {}) if isinstance(item, dict) else {}
        value = fields.get(str(ref.get("fieldPath")))
        if value is not None:
            out[str(item.get("name"))] = str(value)
    return out


def _honest(problem: str, printed: bool) -> str:
    if printed:
        return (f"[pumice] the rest of this container's output is not simulated: {problem} "
                "(pumice follows sh -c commands of echo, printf, sleep and exit)")
    return (f"[pumice] this simulated container's output is not known: {problem} "
            "(pumice follows sh -c commands of echo, printf, sleep and exit)")


def format_lines(lines: list[LogLine], options: LogOptions, now: float) -> bytes:
    """The response body: ``sinceSeconds``/``sinceTime``, ``tailLines``, ``timestamps``, ``limitBytes``."""
    since = options.since_time
    if options.since_seconds is not None:
        since = now - options.since_seconds
    if since is not None:
        lines = [line for line in lines if line.time >= since]
    if options.tail_lines is not None:
        lines = lines[-options.tail_lines:] if options.tail_lines > 0 else []
    body = b"".join(render_line(line, options.timestamps) for line in lines)
    if options.limit_bytes is not None:
        body = body[:options.limit_bytes]
    return body


def render_line(line: LogLine, timestamps: bool) -> bytes:
    if not timestamps:
        return (line.text + "\n").encode()
    at = datetime.fromtimestamp(line.time, UTC)
    nanos = round((line.time - int(line.time)) * 1e9) % 1_000_000_000
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"
    return f"{stamp} {line.text}\n".encode()
