"""``pumice up`` / ``pumice down``: the local control plane.

One process: a ``SqliteStore`` under the data directory, a ``WallClock`` (optionally sped up), the embedded
``Cluster`` (admission, controllers, scheduler, simulated kubelets) driven from a background thread, and the
Kubernetes API server (HTTPS with a bearer token, loopback only) for kubectl. ``DIR/kubeconfig`` is written
at start; ``DIR/pumice.pid`` lets ``pumice down`` stop it. Every write is committed to SQLite before it is
acknowledged, so a restart (or a crash) loses nothing a client was told had succeeded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from pumice.server.connections import DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS

__all__ = ["DEFAULT_PORT", "ControlPlane", "default_data_dir", "down", "read_pid_file", "up"]

#: The API server's default port (the usual kube-apiserver port).
DEFAULT_PORT = 6443
PID_FILE = "pumice.pid"
LOG_FILE = "pumice.log"
STORE_FILE = "store.db"
CLOCK_FILE = "clock"
KUBECONFIG = "kubeconfig"
#: Longest sleep of the driver thread between two cluster steps (wall seconds).
MAX_IDLE = 1.0

log = logging.getLogger("pumice.up")


def default_data_dir() -> Path:
    """``$PUMICE_HOME``, else ``~/.pumice``, else ``./.pumice`` when there is no usable home directory."""
    env = os.environ.get("PUMICE_HOME")
    if env:
        return Path(env)
    home = Path.home()
    if home.is_dir() and os.access(home, os.W_OK):
        return home / ".pumice"
    return Path.cwd() / ".pumice"


def read_pid_file(data_dir: Path) -> dict[str, Any] | None:
    try:
        info = json.loads((data_dir / PID_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and isinstance(info.get("pid"), int) else None


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs and is a pumice process (a pid reused by another program does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc: trust the pid
        return True
    return not cmdline or b"pumice" in cmdline


def _continued_clock(data_dir: Path, scale: float) -> Any:
    """A ``WallClock`` that never starts before the cluster time saved by a previous run.

    A sped-up clock runs ahead of the wall clock; without this a restart would move the cluster's time back
    and every timestamp written before it would lie in the future.
    """
    from pumice.clock import WallClock

    clock = WallClock(scale)
    try:
        saved = float((data_dir / CLOCK_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return clock
    if saved > clock.now():
        clock._origin_wall = saved  # resume where the previous run stopped
    return clock


def _save_clock(data_dir: Path, now: float) -> None:
    tmp = data_dir / (CLOCK_FILE + ".tmp")
    tmp.write_text(f"{now:.3f}\n", encoding="utf-8")
    os.replace(tmp, data_dir / CLOCK_FILE)


@dataclass
class _Parts:
    store: Any
    cluster: Any
    server: Any


class ControlPlane:
    """Store + cluster + API server in this process; ``start()`` returns once the server listens."""

    def __init__(self, data_dir: Path, *, port: int = DEFAULT_PORT, time_scale: float = 1.0,
                 host: str = "127.0.0.1", config: Path | None = None, discovery: Any = None,
                 limits: Any = None) -> None:
        """``config``: a ``volcano-scheduler.conf`` re-read when it changes (None: the live default, see
        ``pumice.runtime.schedconf``); ``discovery``: HyperNodes from node labels (``--discover-topology``).
        ``start`` raises ``ConfError`` for a bad configuration file. ``limits``: the API server's
        ``pumice.server.ConnectionLimits`` (None: the defaults)."""
        from pumice.runtime.schedconf import ConfFile

        self.conf_file = ConfFile(config) if config is not None else None
        self.discovery = discovery
        self.data_dir = Path(data_dir)
        self.limits = limits
        self.port = port
        self.time_scale = time_scale
        self.host = host
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._driver: threading.Thread | None = None
        self._parts: _Parts | None = None
        self.kubeconfig = self.data_dir / KUBECONFIG
        self.step_errors = 0
        self._clock: Any = None

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def start(self) -> ControlPlane:
        from pumice.clock import to_datetime
        from pumice.runtime import Cluster, default_objects, load_admission
        from pumice.server import ServerThread, create_app, ensure_certificates, load_or_create_token, write_kubeconfig
        from pumice.store import SqliteStore

        self.data_dir.mkdir(parents=True, exist_ok=True)
        running = read_pid_file(self.data_dir)
        if running and running["pid"] != os.getpid() and _alive(running["pid"]):
            raise RuntimeError(f"pumice is already running from {self.data_dir} (pid {running['pid']})")
        clock = _continued_clock(self.data_dir, self.time_scale)
        self._clock = clock
        store = SqliteStore(self.data_dir / STORE_FILE, clock=lambda: to_datetime(clock.now()),
                            admission=load_admission(cluster=True))
        try:
            from pumice.runtime.schedconf import live_default_conf

            conf = self.conf_file.conf if self.conf_file is not None else live_default_conf()
            cluster = Cluster(store, clock, conf, discovery=self.discovery)
            default_objects(store)
            token = load_or_create_token(self.data_dir)
            tls = ensure_certificates(self.data_dir)
            app = create_app(store, token=token, now=clock.now, on_change=self._wake.set, metrics=cluster.metrics)
            server = ServerThread(app, host=self.host, port=self.port, tls=tls, limits=self.limits).start()
        except BaseException:
            store.close()
            raise
        try:
            write_kubeconfig(self.kubeconfig, server.url, token, ca_file=tls.ca)
        except BaseException:
            server.stop()
            store.close()
            raise
        self.port = server.port
        self._parts = _Parts(store, cluster, server)
        self._driver = threading.Thread(target=self._drive, args=(cluster, clock), name="pumice-cluster",
                                        daemon=True)
        self._driver.start()
        pid_info = {"pid": os.getpid(), "port": self.port, "url": server.url, "kubeconfig": str(self.kubeconfig),
                    "timeScale": self.time_scale}
        (self.data_dir / PID_FILE).write_text(json.dumps(pid_info) + "\n", encoding="utf-8")
        return self

    def _drive(self, cluster: Any, clock: Any) -> None:
        """Step the cluster when it has something due or the store changed through the API."""
        saved = 0.0
        while not self._stopping.is_set():
            self._wake.clear()
            if time.monotonic() - saved >= 1.0:
                with contextlib.suppress(OSError):
                    _save_clock(self.data_dir, clock.now())
                saved = time.monotonic()
                if self.conf_file is not None:
                    conf = self.conf_file.poll()  # a bad file is logged and the running configuration kept
                    if conf is not None:
                        cluster.scheduler.conf = conf
            delay = MAX_IDLE
            try:
                cluster.step()
                nxt = cluster.next_wakeup()
                if nxt is not None:
                    delay = min(MAX_IDLE, max(0.0, (nxt - clock.now()) / self.time_scale))
            except Exception:  # keep serving: log, back off, try again
                self.step_errors += 1
                log.exception("cluster step failed")
            self._wake.wait(delay)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._driver is not None:
            self._driver.join(30)
        parts, self._parts = self._parts, None
        if parts is not None:
            with contextlib.suppress(OSError):
                _save_clock(self.data_dir, self._clock.now())
            parts.server.stop()
            with contextlib.suppress(Exception):
                parts.cluster.close()
            parts.store.close()
        info = read_pid_file(self.data_dir)
        if info and info["pid"] == os.getpid():
            with contextlib.suppress(OSError):
                (self.data_dir / PID_FILE).unlink()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _healthy(url: str, ca: Path) -> bool:
    try:
        context = ssl.create_default_context(cafile=str(ca))
        with urllib.request.urlopen(f"{url}/healthz", timeout=1, context=context) as resp:
            return bool(resp.status == 200)
    except (OSError, ValueError):
        return False


def _start_background(data_dir: Path, port: int, time_scale: float, timeout: float = 30.0,
                      extra: list[str] | None = None) -> dict[str, Any]:
    """Run ``pumice up`` detached (output in DIR/pumice.log); return its pid file once it serves."""
    data_dir.mkdir(parents=True, exist_ok=True)
    before = read_pid_file(data_dir)
    if before and _alive(before["pid"]):
        raise RuntimeError(f"pumice is already running from {data_dir} (pid {before['pid']})")
    cmd = [sys.executable, "-m", "pumice.cli.main", "up", "--data-dir", str(data_dir), "--port", str(port),
           "--time-scale", str(time_scale), *(extra or [])]
    with open(data_dir / LOG_FILE, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"pumice up exited with {proc.returncode}; see {data_dir / LOG_FILE}")
        info = read_pid_file(data_dir)
        if info and info["pid"] == proc.pid and _healthy(info["url"], data_dir / "ca.crt"):
            return info
        time.sleep(0.1)
    proc.terminate()
    raise RuntimeError(f"pumice up did not become ready within {timeout} s; see {data_dir / LOG_FILE}")


def _read_manifests(files: list[Path] | None) -> list[dict[str, Any]]:
    """All manifests, read (and refused, one line, exit 2) before anything starts."""
    if not files:
        return []
    from pumice.api import ManifestError
    from pumice.cli.toolkit import UsageError, read_manifests

    try:
        return read_manifests(files)
    except (ManifestError, UsageError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None


def _apply(kubeconfig: Path, manifests: list[dict[str, Any]]) -> None:
    """Apply through the API, as ``kubectl apply`` would (admission included)."""
    if not manifests:
        return
    from pumice.cli.kubectl import apply_one
    from pumice.cli.toolkit import name_of
    from pumice.client import ApiError, UnknownResource, connect

    kc = connect(str(kubeconfig))
    for obj in manifests:
        try:
            print(apply_one(kc, obj, None), flush=True)
        except (ApiError, UnknownResource) as err:
            print(f"error: {obj.get('kind')} {name_of(obj)}: {err}", file=sys.stderr, flush=True)


def up(
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="State directory (default ~/.pumice)")] = None,
    port: Annotated[int, typer.Option("--port", help="API server port on 127.0.0.1")] = DEFAULT_PORT,
    time_scale: Annotated[float, typer.Option("--time-scale", help="Cluster seconds per wall second")] = 1.0,
    background: Annotated[
        bool, typer.Option("--background", "-d", help="Detach; return once the server answers")
    ] = False,
    filename: Annotated[
        list[Path] | None,
        typer.Option("--filename", "-f", help="Manifests (files or directories) to apply once it serves"),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="volcano-scheduler.conf, re-read when it changes (default: Volcano's "
                                      "with network-topology-aware)"),
    ] = None,
    discover_topology: Annotated[
        Path | None,
        typer.Option("--discover-topology", help="Label discovery config: keep HyperNodes from the Nodes' labels"),
    ] = None,
    header_timeout: Annotated[float, typer.Option(
        "--header-timeout", help="Seconds a client has to send a request's headers (else 408 and closed)")
    ] = DEFAULT_HEADER_TIMEOUT,
    idle_timeout: Annotated[float, typer.Option(
        "--idle-timeout", help="Seconds a kept-alive connection may stay idle")] = DEFAULT_IDLE_TIMEOUT,
    max_connections: Annotated[int, typer.Option(
        "--max-connections", help="Open connections at most (watches included); more are answered 503")
    ] = DEFAULT_MAX_CONNECTIONS,
) -> None:
    """Start the local control plane: API server for kubectl + scheduler + controllers + simulated nodes."""
    from pumice.server.connections import ConnectionLimits

    directory = (data_dir or default_data_dir()).expanduser().resolve()
    manifests = _read_manifests(filename)
    if time_scale <= 0:
        print("error: --time-scale must be positive", file=sys.stderr)
        raise typer.Exit(2)
    try:
        limits = ConnectionLimits(header_timeout, idle_timeout, max_connections)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None
    discovery = _read_startup_files(config, discover_topology)
    if background:
        extra = [*(["--config", str(config.resolve())] if config else []),
                 *(["--discover-topology", str(discover_topology.resolve())] if discover_topology else []),
                 "--header-timeout", str(header_timeout), "--idle-timeout", str(idle_timeout),
                 "--max-connections", str(max_connections)]
        try:
            info = _start_background(directory, port, time_scale, extra=extra)
        except RuntimeError as err:
            print(f"error: {err}", file=sys.stderr)
            raise typer.Exit(1) from None
        print(f"pumice is up at {info['url']} (pid {info['pid']}); "
              f"export KUBECONFIG={directory / KUBECONFIG}")
        _apply(directory / KUBECONFIG, manifests)
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    plane = ControlPlane(directory, port=port, time_scale=time_scale, config=config, discovery=discovery,
                         limits=limits)
    try:
        plane.start()
    except Exception as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(1) from None
    done = threading.Event()

    def _signal(signum: int, frame: object) -> None:
        done.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _signal)
    print(f"pumice is up at {plane.url} (data {directory}, time scale {time_scale}); "
          f"export KUBECONFIG={plane.kubeconfig}", flush=True)
    print(f"dashboard: {plane.url}/?token={(directory / 'token').read_text().strip()}", flush=True)
    _apply(plane.kubeconfig, manifests)
    try:
        while not done.wait(0.5):
            pass
    finally:
        plane.stop()
    print("pumice stopped", flush=True)


def _read_startup_files(config: Path | None, discover_topology: Path | None) -> Any:
    """Check ``--config`` and read ``--discover-topology`` before anything starts: one line and exit 2 if bad."""
    from pumice.runtime.schedconf import ConfFile
    from pumice.scheduler import ConfError
    from pumice.topology_discovery import DiscoveryConfigError, load_discovery_config

    try:
        if config is not None:
            ConfFile(config)
        return load_discovery_config(discover_topology) if discover_topology is not None else None
    except (ConfError, DiscoveryConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None


def down(
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="State directory (default ~/.pumice)")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for a clean stop")] = 30.0,
) -> None:
    """Stop the control plane started by ``pumice up`` (SIGTERM to the pid in DIR/pumice.pid)."""
    directory = (data_dir or default_data_dir()).expanduser().resolve()
    info = read_pid_file(directory)
    if info is None or not _alive(info["pid"]):
        print(f"pumice is not running from {directory}")
        with contextlib.suppress(OSError):
            (directory / PID_FILE).unlink()
        return
    pid = info["pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    if _alive(pid):
        print(f"error: pumice (pid {pid}) did not stop within {timeout} s", file=sys.stderr)
        raise typer.Exit(1)
    print(f"pumice stopped (pid {pid})")
