"""What the end-to-end tests share: ``pumice run`` as a process, kubectl, and a recorder of pod history."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice.store.kube import KubeStore, from_kubeconfig

KUBECTL = "/usr/bin/kubectl"


def kubectl(kubeconfig: Path, *args: str, input: str | None = None, check: bool = True) -> str:
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          input=input, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


@dataclass
class PumiceRun:
    """``pumice run`` in a process of its own (stopped by ``stop``/``kill``)."""

    kubeconfig: Path
    log: Path
    args: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> PumiceRun:
        out = open(self.log, "ab")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "run", "--kubeconfig",
                                      str(self.kubeconfig), *self.args], stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        out.close()
        return self

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for_log(self, words: str, timeout: float = 60.0) -> None:
        eventually(lambda: words in self.text() or self.exited(), timeout, f"{words!r} in {self.log}")
        assert words in self.text(), f"pumice run exited: {self.text()[-2000:]}"

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode


def eventually(check: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached in {timeout:.0f} s")
        time.sleep(0.2)


@dataclass
class PodHistory:
    """Every pod's story as a watch saw it: when it appeared, the nodes it was bound to, its phases."""

    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))
    phases: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))
    uids: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


class Recorder:
    """Watches pods through a ``KubeStore`` of its own (which survives API server restarts)."""

    def __init__(self, kubeconfig: Path) -> None:
        self.store = KubeStore(from_kubeconfig(str(kubeconfig)))
        self.history = PodHistory()
        self._lock = threading.Lock()
        self._watch = self.store.watch("pods")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        history = self.history
        while not self._stop.is_set():
            event = self._watch.next(0.2)
            if event is None or event.type == "BOOKMARK":
                continue
            obj = event.object
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            now = time.monotonic()
            with self._lock:
                uid = str(meta.get("uid"))
                history.created.setdefault(key, now)
                history.uids[key].add(uid)
                node = (obj.get("spec") or {}).get("nodeName")
                nodes = history.bound[key]
                if node and (not nodes or nodes[-1][1] != f"{uid}:{node}"):
                    nodes.append((now, f"{uid}:{node}"))
                phase = (obj.get("status") or {}).get("phase") or "Pending"
                phases = history.phases[key]
                if not phases or phases[-1][1] != phase:
                    phases.append((now, phase))

    def bound_twice(self) -> dict[str, list[str]]:
        """Pods (one incarnation: uid) seen bound to more than one node, or bound again."""
        with self._lock:
            out = {}
            for key, binds in self.history.bound.items():
                per_uid: dict[str, set[str]] = defaultdict(set)
                for _, tagged in binds:
                    uid, node = tagged.split(":", 1)
                    per_uid[uid].add(node)
                if any(len(nodes) > 1 for nodes in per_uid.values()):
                    out[key] = [t for _, t in binds]
            return out

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        with contextlib.suppress(Exception):
            self.store.close(flush_timeout=0)
