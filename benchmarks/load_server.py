"""Load test of pumice's API server: concurrent aiohttp clients doing reads, writes and watches.

By default it starts its own server in a child process (SqliteStore in a temporary directory, HTTPS with a
bearer token, 127.0.0.1 only, no scheduler), so the clients and the server do not share a GIL. Bounded by
``--duration`` seconds and ``--max-requests`` requests. Prints throughput, p50/p99 latency per operation and
the error count (``--json`` for a machine-readable summary).

``--control-plane`` runs the whole ``pumice up`` in the child instead (scheduler, controllers, simulated
kubelets on ``--nodes`` nodes) and adds the row that matters for a scheduler under API load: **bind latency**,
from a pod's acknowledged create to the moment a watch sees it bound, while the clients keep the API busy
(and ``--settle`` seconds after they stop: how many of their pods are still unbound then).

    .venv/bin/python benchmarks/load_server.py --clients 50 --watchers 5 --duration 20
    .venv/bin/python benchmarks/load_server.py --control-plane --clients 50 --watchers 5 --duration 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import aiohttp


def _serve_control_plane(directory: Path, port: int) -> None:
    """Child mode: run ``pumice up`` (the whole control plane) until stdin closes."""
    from pumice.cli.up import ControlPlane

    plane = ControlPlane(directory / "state", port=port).start()
    token = (directory / "state" / "token").read_text().strip()
    print(json.dumps({"url": plane.url, "token": token, "ca": str(directory / "state" / "ca.crt")}), flush=True)
    try:
        sys.stdin.read()
    finally:
        plane.stop()


def _serve(directory: Path, port: int) -> None:
    """Child mode: run the server until stdin closes."""
    from pumice.server import ServerThread, create_app, ensure_certificates, load_or_create_token
    from pumice.store import SqliteStore

    store = SqliteStore(directory / "store.db")
    tls = ensure_certificates(directory)
    token = load_or_create_token(directory)
    server = ServerThread(create_app(store, token=token), host="127.0.0.1", port=port, tls=tls).start()
    print(json.dumps({"url": server.url, "token": token, "ca": str(tls.ca)}), flush=True)
    try:
        sys.stdin.read()
    finally:
        server.stop()
        store.close()


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class Load:
    def __init__(self, url: str, token: str, ca: str, *, clients: int, watchers: int, duration: float,
                 max_requests: int, seed: int) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}"}
        self.ssl = ssl.create_default_context(cafile=ca) if url.startswith("https") else False
        self.clients = clients
        self.watchers = watchers
        self.duration = duration
        self.max_requests = max_requests
        self.rng = random.Random(seed)
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.error_samples: list[str] = []
        self.requests = 0
        self.watch_events = 0
        self.deadline = 0.0
        #: pod namespace/name -> when its create was acknowledged; and when a watch first saw it bound
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.deleted: set[str] = set()

    def _pods(self, ns: str) -> str:
        return f"{self.url}/api/v1/namespaces/{ns}/pods"

    def _more(self) -> bool:
        return time.monotonic() < self.deadline and self.requests < self.max_requests

    def _error(self, op: str, detail: str) -> None:
        self.errors[op] += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(f"{op}: {detail}")

    async def _call(self, session: aiohttp.ClientSession, op: str, method: str, url: str,
                    body: Any = None, content_type: str = "application/json", ok: tuple[int, ...] = (200, 201)) -> Any:
        self.requests += 1
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = content_type
        started = time.perf_counter()
        try:
            async with session.request(method, url, data=data, headers=headers, ssl=self.ssl) as resp:
                payload = await resp.read()
                status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._error(op, repr(exc))
            return None
        self.latencies[op].append(time.perf_counter() - started)
        if status not in ok:
            self._error(op, f"HTTP {status}: {payload[:200]!r}")
            return None
        return json.loads(payload) if payload else None

    async def client(self, session: aiohttp.ClientSession, cid: int) -> None:
        rng = random.Random(self.rng.random())
        ns = f"load-{cid % 5}"
        mine: list[str] = []
        serial = 0
        while self._more():
            op = rng.choices(["get", "list", "create", "patch", "delete"], [35, 20, 15, 20, 10])[0]
            if len(mine) < 3:
                op = "create"
            if op == "create":
                serial += 1
                name = f"c{cid}-{serial}"
                pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "labels": {"client": str(cid), "app": "load"}},
                       "spec": {"schedulerName": "volcano",
                                "containers": [{"name": "main", "image": "busybox",
                                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}
                if await self._call(session, op, "POST", self._pods(ns), pod) is not None:
                    mine.append(name)
                    self.created[f"{ns}/{name}"] = time.monotonic()
            elif op == "get":
                await self._call(session, op, "GET", f"{self._pods(ns)}/{rng.choice(mine)}")
            elif op == "list":
                await self._call(session, op, "GET", f"{self._pods(ns)}?labelSelector=client%3D{cid}")
            elif op == "patch":
                patch = {"metadata": {"labels": {"step": str(rng.randrange(1000))}}}
                await self._call(session, op, "PATCH", f"{self._pods(ns)}/{rng.choice(mine)}", patch,
                                 content_type="application/merge-patch+json")
            else:
                name = mine.pop(rng.randrange(len(mine)))
                self.deleted.add(f"{ns}/{name}")
                await self._call(session, op, "DELETE", f"{self._pods(ns)}/{name}")

    async def watcher(self, session: aiohttp.ClientSession, wid: int) -> None:
        """List, then watch from the list's resourceVersion; on expiry or 410 list again."""
        version = ""
        while self._more():
            if not version:
                listed = await self._call(session, "watch-list", "GET", f"{self.url}/api/v1/pods")
                if listed is None:
                    await asyncio.sleep(0.1)
                    continue
                version = listed["metadata"]["resourceVersion"]
            remaining = max(1, int(min(5.0, self.deadline - time.monotonic())))
            url = (f"{self.url}/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion={version}"
                   f"&timeoutSeconds={remaining}")
            started = time.perf_counter()
            try:
                async with session.get(url, headers=self.headers, ssl=self.ssl) as resp:
                    self.latencies["watch-open"].append(time.perf_counter() - started)
                    if resp.status != 200:
                        self._error("watch", f"HTTP {resp.status}")
                        version = ""
                        continue
                    async for line in resp.content:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        if event["type"] == "ERROR":
                            if event["object"].get("code") != 410:
                                self._error("watch", str(event["object"]))
                            version = ""
                            break
                        self.watch_events += 1
                        version = event["object"]["metadata"]["resourceVersion"]
                        if not self._more():
                            break
            except (aiohttp.ClientError, TimeoutError) as exc:
                self._error("watch", repr(exc))
                version = ""

    async def bind_watcher(self, session: aiohttp.ClientSession, until: Any) -> None:
        """Watch every pod from now on; note when each is first seen with a node (bind latency)."""
        version = ""
        while not until():
            if not version:
                listed = await self._call(session, "watch-list", "GET", f"{self.url}/api/v1/pods?limit=1")
                version = listed["metadata"]["resourceVersion"] if listed else ""
                continue
            url = f"{self.url}/api/v1/pods?watch=1&resourceVersion={version}&timeoutSeconds=5"
            try:
                async with session.get(url, headers=self.headers, ssl=self.ssl) as resp:
                    async for line in resp.content:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        if event["type"] == "ERROR":
                            version = ""
                            break
                        obj = event["object"]
                        version = obj["metadata"]["resourceVersion"]
                        key = f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
                        if (obj.get("spec") or {}).get("nodeName") and key not in self.bound:
                            self.bound[key] = time.monotonic()
                        if until():
                            break
            except (aiohttp.ClientError, TimeoutError) as exc:
                self._error("bind-watch", repr(exc))
                version = ""

    async def add_nodes(self, session: aiohttp.ClientSession, count: int) -> None:
        for i in range(count):
            alloc = {"cpu": "256", "memory": "1Ti", "pods": "2000"}
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"load-node-{i}"},
                    "status": {"allocatable": alloc, "capacity": alloc,
                               "conditions": [{"type": "Ready", "status": "True"}]}}
            await self._call(session, "node", "POST", f"{self.url}/api/v1/nodes", node)

    def bind_summary(self, load_end: float, settled: float) -> dict[str, Any]:
        latencies = [self.bound[k] - t for k, t in self.created.items() if k in self.bound]
        alive = [k for k in self.created if k not in self.deleted]
        return {
            "pods_created": len(self.created),
            "bound": len(latencies),
            "bound_during_load": sum(1 for k in self.created if self.bound.get(k, math.inf) <= load_end),
            "unbound_after_settle": sum(1 for k in alive if self.bound.get(k, math.inf) > settled),
            "bind_p50_s": round(_percentile(latencies, 0.5), 2),
            "bind_p99_s": round(_percentile(latencies, 0.99), 2),
            "bind_max_s": round(max(latencies, default=0.0), 2),
        }

    async def run_control_plane(self, nodes: int, settle: float) -> dict[str, Any]:
        """The load, with a bind watcher running through it and ``settle`` seconds after it."""
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=None, sock_read=30)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            await self.add_nodes(session, nodes)
            stop_watching = asyncio.Event()
            watcher = asyncio.ensure_future(self.bind_watcher(session, stop_watching.is_set))
            summary = await self._load(session)
            load_end = time.monotonic()
            alive = [k for k in self.created if k not in self.deleted]
            settle_end = load_end + settle
            while time.monotonic() < settle_end and any(k not in self.bound for k in alive):
                await asyncio.sleep(0.2)
            settled = time.monotonic()
            stop_watching.set()
            await watcher
        summary["bind"] = self.bind_summary(load_end, settled)
        return summary

    async def run(self) -> dict[str, Any]:
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=None, sock_read=30)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            return await self._load(session)

    async def _load(self, session: aiohttp.ClientSession) -> dict[str, Any]:
        started = time.monotonic()
        self.deadline = started + self.duration
        tasks = [self.client(session, i) for i in range(self.clients)]
        tasks += [self.watcher(session, i) for i in range(self.watchers)]
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - started
        every = [v for op, values in self.latencies.items() if op != "watch-open" for v in values]
        ops = {
            op: {"count": len(values), "p50_ms": round(_percentile(values, 0.5) * 1000, 2),
                 "p99_ms": round(_percentile(values, 0.99) * 1000, 2)}
            for op, values in sorted(self.latencies.items())
        }
        return {
            "clients": self.clients,
            "watchers": self.watchers,
            "seconds": round(elapsed, 2),
            "requests": len(every),
            "throughput_rps": round(len(every) / elapsed, 1) if elapsed else 0.0,
            "p50_ms": round(_percentile(every, 0.5) * 1000, 2),
            "p99_ms": round(_percentile(every, 0.99) * 1000, 2),
            "mean_ms": round(statistics.fmean(every) * 1000, 2) if every else 0.0,
            "watch_events": self.watch_events,
            "errors": sum(self.errors.values()),
            "errors_by_op": dict(self.errors),
            "error_samples": self.error_samples,
            "ops": ops,
        }


def _print(summary: dict[str, Any]) -> None:
    print(f"{summary['clients']} clients + {summary['watchers']} watchers for {summary['seconds']} s: "
          f"{summary['requests']} requests, {summary['throughput_rps']} req/s, "
          f"p50 {summary['p50_ms']} ms, p99 {summary['p99_ms']} ms, "
          f"{summary['watch_events']} watch events, {summary['errors']} errors")
    for op, row in summary["ops"].items():
        print(f"  {op:<11} {row['count']:>7}  p50 {row['p50_ms']:>8} ms  p99 {row['p99_ms']:>8} ms")
    bind = summary.get("bind")
    if bind:
        print(f"  {'bind':<11} {bind['bound']:>7}  p50 {bind['bind_p50_s'] * 1000:>8.0f} ms  "
              f"p99 {bind['bind_p99_s'] * 1000:>8.0f} ms  (of {bind['pods_created']} pods created: "
              f"{bind['bound_during_load']} bound during the load, {bind['unbound_after_settle']} unbound "
              f"after settling; slowest {bind['bind_max_s']} s)")
    for sample in summary["error_samples"]:
        print(f"  error: {sample}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--watchers", type=int, default=5)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds (the bound in time)")
    parser.add_argument("--max-requests", type=int, default=200_000, help="the bound in count")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--control-plane", action="store_true",
                        help="the whole pumice up (scheduler, controllers, kubelets): adds bind latency")
    parser.add_argument("--nodes", type=int, default=50, help="with --control-plane: nodes to schedule on")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="with --control-plane: seconds to wait after the load for the last binds")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        (_serve_control_plane if args.control_plane else _serve)(args.serve, args.port)
        return 0
    with tempfile.TemporaryDirectory(prefix="pumice-load-") as tmp:
        from pumice.server import free_port

        mode = ["--control-plane"] if args.control_plane else []
        child = subprocess.Popen([sys.executable, __file__, "--serve", tmp, "--port", str(free_port()), *mode],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None
            ready = json.loads(child.stdout.readline())
            load = Load(ready["url"], ready["token"], ready["ca"], clients=args.clients, watchers=args.watchers,
                        duration=args.duration, max_requests=args.max_requests, seed=args.seed)
            summary = asyncio.run(load.run_control_plane(args.nodes, args.settle) if args.control_plane
                                  else load.run())
        finally:
            if child.stdin is not None:
                child.stdin.close()
            try:
                child.wait(15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    if args.json:
        print(json.dumps(summary))
    else:
        _print(summary)
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
