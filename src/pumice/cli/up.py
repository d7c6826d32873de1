"""``pumice up`` / ``pumice down``: the local control plane.

One process: a ``SqliteStore`` under the data directory, a ``WallClock`` (optionally sped up), the embedded
``Cluster`` (admission, controllers, simulated kubelets) driven from a background thread, its scheduler from a
thread of its own (so that it binds at its own pace however busy the API is), and the Kubernetes API server
(HTTPS with a bearer token) for kubectl. ``DIR/kubeconfig`` is written at start; ``DIR/pumice.pid`` lets
``pumice down`` stop it. Every write is committed to SQLite before it is acknowledged, so a restart (or a
crash) loses nothing a client was told had succeeded.

Secure by default: the server listens on 127.0.0.1 unless ``--bind-address`` says otherwise (with a warning);
the data directory is 0700 and every file in it 0600 (the store holds every object, Secrets included; the
token and the kubeconfig are credentials); the token is never printed or logged (the dashboard's sign-in line
names the file that holds it); request bodies are limited to ``--max-request-bytes``.
"""

from __future__ import annotations

import contextlib
import ipaddress
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

from pumice.api.reader import file_size_limit
from pumice.server.connections import DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS

from .limits import MaxFileSize, parse_size

__all__ = ["DEFAULT_PORT", "ControlPlane", "default_data_dir", "down", "read_pid_file", "up"]

#: The API server's default port (the usual kube-apiserver port).
DEFAULT_PORT = 6443
PID_FILE = "pumice.pid"
LOG_FILE = "pumice.log"
STORE_FILE = "store.db"
CLOCK_FILE = "clock"
KUBECONFIG = "kubeconfig"
TOKEN_FILE = "token"
LOOPBACK = "127.0.0.1"
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


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) only reaches this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str) -> str | None:
    """The warning for a server told to listen beyond this machine, or None."""
    if is_loopback(host):
        return None
    return (f"warning: the API server listens on {host}, not only on this machine: anyone who can reach it and "
            "holds the token (or a kubeconfig) can use the whole API")


def private_directory(path: Path) -> None:
    """Create ``path`` as 0700 (making an existing one 0700) and make the files in it 0600."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    for child in path.iterdir():
        with contextlib.suppress(OSError):
            if child.is_file() and not child.is_symlink() and child.stat().st_mode & 0o077:
                child.chmod(0o600)


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


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
    _write_private(data_dir / CLOCK_FILE, f"{now:.3f}\n")


@dataclass
class _Parts:
    store: Any
    cluster: Any
    server: Any


class ControlPlane:
    """Store + cluster + API server in this process; ``start()`` returns once the server listens."""

    def __init__(self, data_dir: Path, *, port: int = DEFAULT_PORT, time_scale: float = 1.0,
                 host: str = LOOPBACK, max_request_bytes: int | None = None, config: Path | None = None,
                 discovery: Any = None, limits: Any = None, descheduler: Any = None) -> None:
        """``config``: a ``volcano-scheduler.conf`` re-read when it changes (None: the live default, see
        ``pumice.runtime.schedconf``); ``discovery``: HyperNodes from node labels (``--discover-topology``);
        ``max_request_bytes``: the largest request body and object; ``limits``: the API server's
        ``pumice.server.ConnectionLimits`` (None: the defaults). ``start`` raises ``ConfError`` for a bad
        configuration file."""
        from pumice.runtime.schedconf import ConfFile
        from pumice.server import DEFAULT_MAX_BODY_BYTES

        self.conf_file = ConfFile(config) if config is not None else None
        self.discovery = discovery
        self.descheduler = descheduler  # the load-aware descheduler's policy (None: off)

        self.data_dir = Path(data_dir)
        self.limits = limits
        self.port = port
        self.time_scale = time_scale
        self.host = host
        self.max_request_bytes = max_request_bytes or DEFAULT_MAX_BODY_BYTES
        self._wake = threading.Event()  # the controllers' and kubelets' driver
        self._schedule_wake = threading.Event()  # the scheduler's thread
        self._stopping = threading.Event()
        self._driver: threading.Thread | None = None
        self._scheduler: threading.Thread | None = None
        self._parts: _Parts | None = None
        self.kubeconfig = self.data_dir / KUBECONFIG
        self.step_errors = 0
        self._clock: Any = None

    @property
    def url(self) -> str:
        """Where clients reach the server (a wildcard address is reached on the loopback)."""
        host = LOOPBACK if self.host in ("0.0.0.0", "::", "") else self.host
        return f"https://[{host}]:{self.port}" if ":" in host else f"https://{host}:{self.port}"

    @property
    def cluster(self) -> Any:
        """The running embedded ``Cluster`` (after ``start``)."""
        assert self._parts is not None, "not started"
        return self._parts.cluster

    @property
    def store(self) -> Any:
        assert self._parts is not None, "not started"
        return self._parts.store

    def start(self) -> ControlPlane:
        from pumice.clock import WallClock, to_datetime
        from pumice.federation.fence import add_fence_agent
        from pumice.runtime import Cluster, default_objects, load_admission
        from pumice.server import ServerThread, create_app, ensure_certificates, load_or_create_token, write_kubeconfig
        from pumice.server.tls import LOOPBACK_HOSTS
        from pumice.store import SqliteStore

        private_directory(self.data_dir)
        warning = exposure_warning(self.host)
        if warning is not None:
            log.warning("%s", warning.removeprefix("warning: "))
        running = read_pid_file(self.data_dir)
        if running and running["pid"] != os.getpid() and _alive(running["pid"]):
            raise RuntimeError(f"pumice is already running from {self.data_dir} (pid {running['pid']})")
        clock = _continued_clock(self.data_dir, self.time_scale)
        self._clock = clock
        store = SqliteStore(self.data_dir / STORE_FILE, clock=lambda: to_datetime(clock.now()),
                            admission=load_admission(cluster=True), max_object_bytes=self.max_request_bytes)
        try:
            from pumice.runtime.schedconf import live_default_conf

            conf = self.conf_file.conf if self.conf_file is not None else live_default_conf()
            cluster = Cluster(store, clock, conf, discovery=self.discovery, descheduler=self.descheduler)
            cluster.schedule_apart()  # the scheduler has a thread of its own (see ``_schedule``)
            default_objects(store)
            # a federation's member stops the federation's jobs when cut off from it; leases are real seconds
            add_fence_agent(cluster.controllers, store, clock, lease_clock=WallClock(), scale=self.time_scale)
            token = load_or_create_token(self.data_dir)
            hosts = LOOPBACK_HOSTS if self.host in (*LOOPBACK_HOSTS, "0.0.0.0", "::", "") else \
                (*LOOPBACK_HOSTS, self.host)  # the address it is told to listen on, in its certificate too
            tls = ensure_certificates(self.data_dir, hosts=hosts)
            app = create_app(store, token=token, now=clock.now, on_change=self._changed, metrics=cluster.metrics,
                             max_body_bytes=self.max_request_bytes)
            server = ServerThread(app, host=self.host, port=self.port, tls=tls, limits=self.limits).start()
        except BaseException:
            store.close()
            raise
        self.port = server.port
        try:
            write_kubeconfig(self.kubeconfig, self.url, token, ca_file=tls.ca)
        except BaseException:
            server.stop()
            store.close()
            raise
        self._parts = _Parts(store, cluster, server)
        self._driver = threading.Thread(target=self._drive, args=(cluster, clock), name="pumice-cluster",
                                        daemon=True)
        self._scheduler = threading.Thread(target=self._schedule, args=(cluster, clock), name="pumice-scheduler",
                                           daemon=True)
        self._driver.start()
        self._scheduler.start()
        pid_info = {"pid": os.getpid(), "port": self.port, "url": self.url, "kubeconfig": str(self.kubeconfig),
                    "timeScale": self.time_scale}
        _write_private(self.data_dir / PID_FILE, json.dumps(pid_info) + "\n")
        return self

    def _changed(self) -> None:
        """The store changed through the API: controllers, kubelets and the scheduler have a look."""
        self._wake.set()
        self._schedule_wake.set()

    def _drive(self, cluster: Any, clock: Any) -> None:
        """Step the controllers and kubelets when they have something due or the store changed."""
        saved = 0.0
        while not self._stopping.is_set():
            self._wake.clear()
            if time.monotonic() - saved >= 1.0:
                with contextlib.suppress(OSError):
                    _save_clock(self.data_dir, clock.now())
                saved = time.monotonic()
            delay = MAX_IDLE
            try:
                if cluster.step():
                    self._schedule_wake.set()  # they wrote (pods, PodGroups): maybe something to schedule
                    delay = 0.0  # and maybe more to do: a step gives up after a bounded number of rounds
                nxt = cluster.next_wakeup()
                if nxt is not None:
                    delay = min(MAX_IDLE, max(0.0, (nxt - clock.now()) / self.time_scale))
            except Exception:  # keep serving: log, back off, try again
                self.step_errors += 1
                log.exception("cluster step failed")
            if delay > 0:
                self._wake.wait(delay)

    def _schedule(self, cluster: Any, clock: Any) -> None:
        """The scheduler's own thread: a cycle whenever one is due (something changed, the period passed), at its
        own pace however busy the API and the controllers are (issue 15: it starved behind them)."""
        while not self._stopping.is_set():
            self._schedule_wake.clear()
            due = None
            try:
                if self.conf_file is not None:
                    conf = self.conf_file.poll()  # a bad file is logged and the running configuration kept
                    if conf is not None:
                        cluster.scheduler.conf = conf
                cycles = cluster.cycles
                due = cluster.schedule()
                if cluster.cycles != cycles:
                    self._wake.set()  # binds and evictions: kubelets and controllers react
            except Exception:  # keep serving: log, back off, try again
                self.step_errors += 1
                log.exception("scheduling cycle failed")
            if due is None:  # nothing to do: until something changes
                self._schedule_wake.wait(MAX_IDLE)
            else:  # a cycle is due (the period after the last one): changes meanwhile wait for it
                self._stopping.wait(min(MAX_IDLE, max(0.0, (due - clock.now()) / self.time_scale)))

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._schedule_wake.set()
        for thread in (self._driver, self._scheduler):
            if thread is not None:
                thread.join(30)
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


def _start_background(data_dir: Path, port: int, time_scale: float, timeout: float = 30.0, *,
                      host: str = LOOPBACK, max_request_bytes: int | None = None,
                      extra: list[str] | None = None) -> dict[str, Any]:
    """Run ``pumice up`` detached (output in DIR/pumice.log, 0600); return its pid file once it serves."""
    private_directory(data_dir)
    before = read_pid_file(data_dir)
    if before and _alive(before["pid"]):
        raise RuntimeError(f"pumice is already running from {data_dir} (pid {before['pid']})")
    cmd = [sys.executable, "-m", "pumice.cli.main", "up", "--data-dir", str(data_dir), "--port", str(port),
           "--time-scale", str(time_scale), "--bind-address", host, *(extra or [])]
    if max_request_bytes is not None:
        cmd += ["--max-request-bytes", str(max_request_bytes)]
    fd = os.open(data_dir / LOG_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as out:
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
    try:
        for obj in manifests:
            try:
                print(apply_one(kc, obj, None), flush=True)
            except (ApiError, UnknownResource) as err:
                print(f"error: {obj.get('kind')} {name_of(obj)}: {err}", file=sys.stderr, flush=True)
    finally:
        kc.close()  # an idle kept-alive connection would hold the server's graceful stop for its timeout


def up(
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="State directory (default ~/.pumice)")] = None,
    port: Annotated[int, typer.Option("--port", help="API server port")] = DEFAULT_PORT,
    time_scale: Annotated[float, typer.Option("--time-scale", help="Cluster seconds per wall second")] = 1.0,
    background: Annotated[
        bool, typer.Option("--background", "-d", help="Detach; return once the server answers")
    ] = False,
    filename: Annotated[
        list[Path] | None,
        typer.Option("--filename", "-f", help="Manifests (files or directories) to apply once it serves"),
    ] = None,
    bind_address: Annotated[
        str, typer.Option("--bind-address", help="Address to listen on (default 127.0.0.1: this machine only)")
    ] = LOOPBACK,
    max_request_bytes: Annotated[
        int | None,
        typer.Option("--max-request-bytes", parser=parse_size, metavar="SIZE",
                     help="Largest request body and object (default 3Mi, as kube-apiserver)"),
    ] = None,
    max_file_size: MaxFileSize = None,
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
    federation: Annotated[
        bool, typer.Option("--federation", help="Host a federation: jobs run in member clusters (docs/federation.md)")
    ] = False,
    members: Annotated[
        Path | None, typer.Option("--members", help="With --federation: member clusters to run here too (YAML)")
    ] = None,
    federation_config: Annotated[
        Path | None, typer.Option("--federation-config", help="With --federation: federation.yaml")
    ] = None,
    descheduler: Annotated[
        bool, typer.Option("--descheduler", help="Run the load-aware descheduler (off by default)")] = False,
    descheduler_policy_file: Annotated[
        Path | None, typer.Option("--descheduler-policy", help="With --descheduler: Volcano's DeschedulerPolicy YAML")
    ] = None,
    descheduling_interval: Annotated[
        str, typer.Option("--descheduling-interval", help="With --descheduler: how often it runs")] = "10m",
) -> None:
    """Start the local control plane: API server for kubectl + scheduler + controllers + simulated nodes."""
    from pumice.server.connections import ConnectionLimits

    directory = (data_dir or default_data_dir()).expanduser().resolve()
    with file_size_limit(max_file_size):
        manifests = _read_manifests(filename)
        discovery = _read_startup_files(config, discover_topology)
    if time_scale <= 0:
        print("error: --time-scale must be positive", file=sys.stderr)
        raise typer.Exit(2)
    warning = exposure_warning(bind_address)
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    federation_extra = _federation_args(federation, members, federation_config)
    policy = _descheduler(descheduler, descheduler_policy_file, descheduling_interval)
    try:
        limits = ConnectionLimits(header_timeout, idle_timeout, max_connections)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None
    if background:
        extra = [*(["--config", str(config.resolve())] if config else []),
                 *(["--discover-topology", str(discover_topology.resolve())] if discover_topology else []),
                 "--header-timeout", str(header_timeout), "--idle-timeout", str(idle_timeout),
                 "--max-connections", str(max_connections), *federation_extra,
                 *(["--descheduler", "--descheduling-interval", descheduling_interval] if descheduler else []),
                 *(["--descheduler-policy", str(descheduler_policy_file.resolve())] if descheduler_policy_file else [])]
        try:
            info = _start_background(directory, port, time_scale, host=bind_address,
                                     max_request_bytes=max_request_bytes, extra=extra)
        except RuntimeError as err:
            print(f"error: {err}", file=sys.stderr)
            raise typer.Exit(1) from None
        print(f"pumice is up at {info['url']} (pid {info['pid']}); "
              f"export KUBECONFIG={directory / KUBECONFIG}")
        _apply(directory / KUBECONFIG, manifests)
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    plane: Any = ControlPlane(directory, port=port, time_scale=time_scale, host=bind_address,
                              max_request_bytes=max_request_bytes, config=config, discovery=discovery, limits=limits,
                              descheduler=policy)
    if federation:  # --config and --discover-topology go to the members run here
        plane = _federation_host(directory, port, time_scale, members, federation_config, config, discovery)
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
    for name, member in getattr(plane, "members", {}).items():
        print(f"member {name} is up at {member.url}; kubeconfig {member.kubeconfig}", flush=True)
    print(f"dashboard: {plane.url}/ (sign in once at {plane.url}/?token=<the token in {directory / TOKEN_FILE}>)",
          flush=True)
    _apply(plane.kubeconfig, manifests)
    try:
        while not done.wait(0.5):
            pass
    finally:
        plane.stop()
    print("pumice stopped", flush=True)


def _descheduler(enabled: bool, policy: Path | None, interval: str) -> Any:
    """The descheduler's policy with ``--descheduler`` (None without; its options alone are an error)."""
    if not enabled:
        if policy is not None or interval != "10m":
            print("error: --descheduler-policy and --descheduling-interval go with --descheduler", file=sys.stderr)
            raise typer.Exit(2)
        return None
    from .run import descheduler_policy

    return descheduler_policy(policy, interval)


def _federation_args(federation: bool, members: Path | None, config: Path | None) -> list[str]:
    """Check the federation options (one-line errors, exit 2) and pass them on to a background ``pumice up``."""
    if not federation:
        if members is not None or config is not None:
            print("error: --members and --federation-config go with --federation", file=sys.stderr)
            raise typer.Exit(2)
        return []
    from pumice.federation.config import FederationConfigError, load_config
    from pumice.sim.errors import ScenarioError

    from .federation_host import load_members

    try:
        if config is not None:
            load_config(config)
        if members is not None:
            load_members(members)
    except (FederationConfigError, ScenarioError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(2) from None
    out = ["--federation"]
    if members is not None:
        out += ["--members", str(members.resolve())]
    if config is not None:
        out += ["--federation-config", str(config.resolve())]
    return out


def _federation_host(directory: Path, port: int, time_scale: float, members: Path | None,
                     config: Path | None, scheduler_config: Path | None, discovery: Any) -> Any:
    from .federation_host import FederationHost, load_members

    return FederationHost(directory, port=port, time_scale=time_scale, config_path=config,
                          members=load_members(members) if members is not None else [],
                          member_config=scheduler_config, member_discovery=discovery)


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
