"""``pumice up --federation``: the local control plane as a federation host, with members of its own if asked.

``--time-scale`` speeds up the embedded members' clocks (their pods run faster); the federation's own periods,
leases and grace are real seconds, as every member's fence agent counts them.

The host is a durable store (SQLite, Volcano's admission) behind the same Kubernetes API server as ``pumice up``,
running the host control plane (queues) and the federation instead of the scheduler, controllers and nodes:
Jobs submitted to it run in its members. ``--members FILE`` starts members in this process as well — each a
whole ``pumice up`` (its own store under ``DIR/members/NAME``, API server on a free loopback port, kubeconfig,
fence agent) — and registers them as Cluster objects; any other API server joins with a Cluster object naming
its kubeconfig. ``vcjob`` tables on the host show the member each job runs in (the CLUSTER column).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from .up import (
    KUBECONFIG,
    MAX_IDLE,
    PID_FILE,
    STORE_FILE,
    ControlPlane,
    _alive,
    _continued_clock,
    _save_clock,
    read_pid_file,
)

__all__ = ["FederationHost", "load_members"]

log = logging.getLogger("pumice.federation")
MEMBERS_DIR = "members"


def load_members(path: Path) -> list[Any]:
    """The ``clusters`` of a members file (the same form as a federation scenario's); ``ScenarioError`` if bad."""
    from pumice.sim.errors import ScenarioError
    from pumice.sim.federation import member_spec

    source = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ScenarioError(source, "", f"cannot read: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise ScenarioError(source, "", f"not valid YAML ({getattr(err, 'problem', None) or err})") from None
    if not isinstance(data, dict) or set(data) != {"clusters"} or not isinstance(data["clusters"], dict):
        raise ScenarioError(source, "", "expected a mapping with one key, clusters (name -> nodes, labels, cost, ...)")
    return [member_spec(str(name), spec, path.parent, source) for name, spec in data["clusters"].items()]


class FederationHost:
    """Host store + API server + federation (+ embedded members); ``start()`` returns once the host serves."""

    def __init__(self, data_dir: Path, *, port: int, time_scale: float = 1.0, host: str = "127.0.0.1",
                 config_path: Path | None = None, members: list[Any] | None = None,
                 member_config: Path | None = None, member_discovery: Any = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port
        self.time_scale = time_scale
        self.host = host
        self.config_path = config_path
        self.member_specs = list(members or [])
        self.member_config = member_config  # the embedded members' volcano-scheduler.conf and topology discovery
        self.member_discovery = member_discovery
        self.kubeconfig = self.data_dir / KUBECONFIG
        self.members: dict[str, ControlPlane] = {}
        self.step_errors = 0
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._driver: threading.Thread | None = None
        self._parts: dict[str, Any] = {}

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def start(self) -> FederationHost:
        from pumice.clock import to_datetime
        from pumice.federation.config import default_config, load_config
        from pumice.federation.federation import Federation
        from pumice.federation.host import HostControlPlane
        from pumice.federation.kubeconnect import EmbeddedOrKube
        from pumice.runtime import attach_admission, load_admission
        from pumice.server import ServerThread, create_app, ensure_certificates, load_or_create_token, write_kubeconfig
        from pumice.server.tables import federation_host_columns
        from pumice.store import SqliteStore

        config = load_config(self.config_path) if self.config_path is not None else default_config()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        running = read_pid_file(self.data_dir)
        if running and running["pid"] != os.getpid() and _alive(running["pid"]):
            raise RuntimeError(f"pumice is already running from {self.data_dir} (pid {running['pid']})")
        clock = _continued_clock(self.data_dir, 1.0)  # the federation's periods and leases are real seconds
        store = SqliteStore(self.data_dir / STORE_FILE, clock=lambda: to_datetime(clock.now()),
                            admission=load_admission())
        attach_admission(store)
        started: list[Any] = [store]
        try:
            for spec in self.member_specs:
                self.members[spec.name] = self._start_member(spec)
            plane = HostControlPlane(store, clock)
            connector = EmbeddedOrKube({n: m.store for n, m in self.members.items()})
            federation = Federation(store, clock, config, connector=connector, holder=f"pumice-up:{self.data_dir}")
            for spec in self.member_specs:
                self._register(store, spec)
            token = load_or_create_token(self.data_dir)
            tls = ensure_certificates(self.data_dir)
            app = create_app(store, token=token, now=clock.now, on_change=self._wake.set,
                             columns=federation_host_columns())
            server = ServerThread(app, host=self.host, port=self.port, tls=tls).start()
            started.append(server)
            write_kubeconfig(self.kubeconfig, server.url, token, ca_file=tls.ca)
        except BaseException:
            for part in reversed(started):
                with contextlib.suppress(Exception):
                    part.stop() if hasattr(part, "stop") else part.close()
            for member in self.members.values():
                member.stop()
            raise
        self.port = server.port
        self._parts = {"store": store, "server": server, "plane": plane, "federation": federation, "clock": clock}
        self._driver = threading.Thread(target=self._drive, name="pumice-federation", daemon=True)
        self._driver.start()
        info = {"pid": os.getpid(), "port": self.port, "url": server.url, "kubeconfig": str(self.kubeconfig),
                "timeScale": self.time_scale, "federation": True,
                "members": {n: str(m.kubeconfig) for n, m in self.members.items()}}
        (self.data_dir / PID_FILE).write_text(json.dumps(info) + "\n", encoding="utf-8")
        return self

    @property
    def federation(self) -> Any:
        return self._parts.get("federation")

    def _start_member(self, spec: Any) -> ControlPlane:
        member = ControlPlane(self.data_dir / MEMBERS_DIR / spec.name, port=0, time_scale=self.time_scale,
                              host=self.host, config=self.member_config, discovery=self.member_discovery).start()
        cluster = member.cluster
        have = {n["metadata"]["name"] for n in cluster.store.list("nodes")[0]}
        cluster.apply([n for n in spec.nodes if n["metadata"]["name"] not in have])
        cluster.apply(spec.objects)
        return member

    def _register(self, store: Any, spec: Any) -> None:
        """The member's Cluster object on the host (created, or its labels, cost and taints brought up to date)."""
        from pumice.sim.world import cluster_object
        from pumice.store import AlreadyExists

        body = cluster_object(spec)
        body["spec"]["kubeconfig"] = {"file": str(self.members[spec.name].kubeconfig)}
        try:
            store.create("clusters.federation.pumice.io", body)
        except AlreadyExists:
            store.patch("clusters.federation.pumice.io", None, spec.name,
                        {"metadata": {"labels": body["metadata"]["labels"]}, "spec": body["spec"]})

    def _drive(self) -> None:
        plane, federation, clock = self._parts["plane"], self._parts["federation"], self._parts["clock"]
        saved = 0.0
        while not self._stopping.is_set():
            self._wake.clear()
            if time.monotonic() - saved >= 1.0:
                with contextlib.suppress(OSError):
                    _save_clock(self.data_dir, clock.now())
                saved = time.monotonic()
            delay = MAX_IDLE
            try:
                for _ in range(100):  # the host's own clock runs in real time (--time-scale speeds the members)
                    moved = plane.sync()
                    moved |= federation.sync()
                    if not moved:
                        break
                nxt = federation.next_wakeup()
                if nxt is not None:
                    delay = min(MAX_IDLE, max(0.0, nxt - clock.now()))
            except Exception:  # keep serving: log, back off, try again
                self.step_errors += 1
                log.exception("federation step failed")
            self._wake.wait(delay)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._driver is not None:
            self._driver.join(30)
        parts, self._parts = self._parts, {}
        if parts:
            with contextlib.suppress(OSError):
                _save_clock(self.data_dir, parts["clock"].now())
            parts["server"].stop()
            with contextlib.suppress(Exception):
                parts["federation"].close(release=True)
            with contextlib.suppress(Exception):
                parts["plane"].close()
            parts["store"].close()
        for member in self.members.values():
            member.stop()
        info = read_pid_file(self.data_dir)
        if info and info["pid"] == os.getpid():
            with contextlib.suppress(OSError):
                (self.data_dir / PID_FILE).unlink()

    def __enter__(self) -> FederationHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
