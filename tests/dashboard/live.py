"""A live dashboard for tests: uvicorn on a free loopback port over a MemoryStore, with (when available) the
API server mounted beside it and an embedded cluster advancing in the background on a fast wall clock.

Run it by hand to look at the dashboard: ``.venv/bin/python -m tests.dashboard.live`` (prints the URL).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from pumice import dashboard
from pumice.clock import WallClock, to_datetime
from pumice.dashboard import apply_manifest
from pumice.store import MemoryStore, Store

TOKEN = "test-dashboard-token"
#: Virtual seconds per wall second: a pod declared to run 60 s runs 6 s.
SCALE = 10.0

NODE = """apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{{labels}}}}}
status:
  allocatable: {{cpu: "{cpu}", memory: {memory}, {gpu}pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
"""

SEED = "\n---\n".join(
    [NODE.format(name=f"gpu-{i}", labels=f"rack: r{i // 2}", cpu=32, memory="256Gi", gpu='nvidia.com/gpu: "8", ')
     for i in range(4)]
    + [NODE.format(name="cpu-0", labels="role: cpu", cpu=64, memory="128Gi", gpu="")]
    + [
        """apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: rack-0}
spec:
  tier: 1
  tierName: rack
  members:
  - {type: Node, selector: {exactMatch: {name: gpu-0}}}
  - {type: Node, selector: {exactMatch: {name: gpu-1}}}""",
        """apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: rack-1}
spec:
  tier: 1
  tierName: rack
  members:
  - {type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}""",
        """apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine-0}
spec:
  tier: 2
  tierName: spine
  members:
  - {type: HyperNode, selector: {exactMatch: {name: rack-0}}}
  - {type: HyperNode, selector: {exactMatch: {name: rack-1}}}""",
        """apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  weight: 2
  capability: {cpu: "48", memory: 512Gi, nvidia.com/gpu: "16"}
  deserved: {cpu: "24", memory: 256Gi, nvidia.com/gpu: "8"}""",
        # a long-running gang: 2 pods x 4 GPUs for an hour (virtual)
        """apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train-llm, namespace: default}
spec: {minMember: 2, queue: research}""",
        *[
            f"""apiVersion: v1
kind: Pod
metadata:
  name: train-llm-{i}
  namespace: default
  annotations: {{scheduling.k8s.io/group-name: train-llm, pumice.io/duration: 1h}}
  labels: {{volcano.sh/task-spec: worker}}
spec:
  schedulerName: volcano
  containers:
  - name: trainer
    image: pytorch
    resources: {{requests: {{cpu: "8", memory: 64Gi, nvidia.com/gpu: "4"}}, limits: {{nvidia.com/gpu: "4"}}}}"""
            for i in range(2)
        ],
        # a gang that can never fit: 2 pods x 16 GPUs on 8-GPU nodes
        """apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: too-big, namespace: default}
spec: {minMember: 2, queue: default}""",
        *[
            f"""apiVersion: v1
kind: Pod
metadata:
  name: too-big-{i}
  namespace: default
  annotations: {{scheduling.k8s.io/group-name: too-big}}
spec:
  schedulerName: volcano
  containers: [{{name: trainer, image: pytorch,
                resources: {{requests: {{cpu: "4", nvidia.com/gpu: "16"}}, limits: {{nvidia.com/gpu: "16"}}}}}}]"""
            for i in range(2)
        ],
    ]
)


def _server_routes(store: Store, token: str) -> list[BaseRoute]:
    """The Kubernetes API server's app mounted at the root (after the dashboard), if it can be built."""
    try:
        from pumice.server import create_app  # type: ignore[attr-defined, unused-ignore]

        api = create_app(store, token=token)
    except Exception:  # not there yet, or broken: the dashboard is tested alone
        return []
    return [Mount("", app=api)]


@dataclass
class Live:
    store: Store
    url: str
    token: str
    cluster: Any = None
    api_mounted: bool = False
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _server: Any = None

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.should_exit = True
        for t in self._threads:
            t.join(15)
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()


def start(*, token: str = TOKEN, scale: float = SCALE, cluster: bool = True, seed: bool = True,
          on_change: Any = None) -> Live:
    clock = WallClock(scale=scale)
    runtime_cluster = None
    store: Store
    if cluster:
        try:
            from pumice.runtime import Cluster, load_admission

            store = MemoryStore(clock=lambda: to_datetime(clock.now()), admission=load_admission(),
                                rng=random.Random(7))
            runtime_cluster = Cluster(store=store, clock=clock, period=1.0)
        except Exception:  # the runtime is not usable: a static store
            traceback.print_exc()
            runtime_cluster = None
    if runtime_cluster is None:
        store = MemoryStore(clock=lambda: to_datetime(clock.now()), rng=random.Random(7))
    if seed:
        apply_manifest(store, SEED, "seed")

    extra = _server_routes(store, token)
    app = Starlette(routes=[*dashboard.routes(store, token, on_change=on_change), *extra])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                            lifespan="off", timeout_graceful_shutdown=1, loop="asyncio")
    server = uvicorn.Server(config)
    live = Live(store=store, url=f"http://127.0.0.1:{port}", token=token, cluster=runtime_cluster,
                api_mounted=bool(extra), _server=server)

    def serve() -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        except BaseException as exc:
            live.errors.append(f"server: {exc!r}")
        finally:
            sock.close()

    thread = threading.Thread(target=serve, name="dashboard-test-server", daemon=True)
    thread.start()
    live._threads.append(thread)
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            live.stop()
            raise RuntimeError(f"dashboard test server did not start: {live.errors}")
        time.sleep(0.02)

    if runtime_cluster is not None:
        def drive() -> None:
            while not live._stop.is_set():
                try:  # at most half a wall second per call, so stop() is prompt
                    runtime_cluster.run_until(clock.now() + scale * 0.5)
                except Exception:
                    live.errors.append("cluster: " + traceback.format_exc())
                    live._stop.wait(0.5)

        driver = threading.Thread(target=drive, name="dashboard-test-cluster", daemon=True)
        driver.start()
        live._threads.append(driver)
    return live


if __name__ == "__main__":  # pragma: no cover - manual use
    running = start()
    print(f"{running.url}/?token={running.token}  (API server mounted: {running.api_mounted}); Ctrl-C stops")
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        running.stop()
