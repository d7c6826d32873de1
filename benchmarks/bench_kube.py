"""Pods bound per second on a real kube-apiserver v1.20: kube-scheduler v1.20.2 vs pumice's scheduler.

    python benchmarks/bench_kube.py                  # 1,000 nodes x 5,000 pods and 5,000 nodes x 10,000 pods
    python benchmarks/bench_kube.py --quick          # 200 nodes x 1,000 pods only
    python benchmarks/bench_kube.py --mode arriving  # one of the two ways pods come (default: both)

One kube-apiserver v1.20.2 + etcd (``../shared/tools/kube-1.20``, binaries from its build.sh) serves every
row. Per size, the same fake nodes (32 CPU, 128Gi, 110 pods, Ready; no kubelet) are created once; then each
contender gets the same pods (1 CPU, 1Gi), fresh ones each time, in two ways:

* **pending** — the pods are created while no scheduler runs, the scheduler is started as its own process,
  and the clock runs from its start (the first pending pod waits from then) to the last binding, seen
  through a watch of the pods: a scheduler (re)started on a backlog, its start-up included.
* **arriving** — the scheduler is started and warmed up first (one pod created and waited for until bound,
  then deleted), then the pods are created, 32 requests in flight, and the clock runs from the first pod's
  creation to the last binding: pods arriving at a running scheduler, which binds them while the API server
  also serves their creation.

* **bind ceiling** — the API server's own limit: a plain async client (aiohttp, 32 requests in flight)
  posts one ``pods/binding`` per pod, round robin over the nodes, as fast as the server answers (arriving:
  as its own process, binding each pod its watch sees created).
* **kube-scheduler** — the built ``kube-scheduler`` v1.20.2, ``--kube-api-qps 5000 --kube-api-burst 5000``.
* **pumice** — ``pumice run --components scheduler`` (Volcano's default configuration plus
  network-topology-aware); its pods are those of PodGroups of 10 (``minMember`` 10: gangs), as Volcano's
  scheduler only schedules pods of a PodGroup; the PodGroups are created before the pods. It runs as
  installed: from its bytecode cache, written before the clock starts (``installed_env``).

Every contender starts from the same server state (``settle``: the previous one's Events deleted, etcd compacted
and defragmented), and the ceiling is measured both first and last: "of ceiling" is of the mean of the two, and
the two rows show how much the server itself drifted over the run.

The machine is shared: the table says how busy it was (load average before and after).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PUMICE_SHARED", ROOT.parent / "shared"))
if not SHARED.is_dir():
    SHARED = Path("/work/shared")
TOOLS = SHARED / "tools" / "kube-1.20"
BIN = Path(os.environ.get("KUBE120_HOME", Path.home() / ".cache" / "kube-1.20.2")) / "bin"
SIZES = [(1000, 5000), (5000, 10_000)]
QUICK = [(200, 1000)]
IN_FLIGHT = 32
GANG = 10
TOKEN = "kube120-test-token"


def free_ports(n: int) -> list[int]:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + n >= 65535:
            continue
        socks: list[socket.socket] = []
        try:
            for p in range(base, base + n):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
        return list(range(base, base + n))
    raise RuntimeError("no free ports")


class Api:
    """A plain async JSON client of the API server (bearer token, TLS without verification: loopback)."""

    def __init__(self, url: str) -> None:
        self.url = url
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context, limit=IN_FLIGHT * 2),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            read_bufsize=1 << 22)

    async def call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201)) -> Any:
        for attempt in range(20):
            async with self.session.request(method, self.url + path,
                                            data=None if body is None else json.dumps(body)) as resp:
                raw = await resp.read()
                if resp.status in ok:
                    return json.loads(raw) if raw else None
                if resp.status in (429, 500, 503, 504):
                    await asyncio.sleep(0.05 * (attempt + 1))
                    continue
                raise RuntimeError(f"{method} {path}: {resp.status} {raw[:200]!r}")
        raise RuntimeError(f"{method} {path}: still failing")

    async def many(self, calls: list[tuple[str, str, Any]]) -> None:
        queue = list(reversed(calls))

        async def worker() -> None:
            while queue:
                method, path, body = queue.pop()
                await self.call(method, path, body)

        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))

    async def close(self) -> None:
        await self.session.close()


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    res = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "bench"}]}}


def pod(i: int, scheduler: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"pod-{i:05d}", "namespace": "bench"}
    if scheduler == "volcano":
        meta["annotations"] = {"scheduling.k8s.io/group-name": f"pg-{i // GANG:04d}"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}


def binding(name: str, target: str) -> tuple[str, str, dict[str, Any]]:
    """The request that binds pod ``name`` (namespace bench) to node ``target``, as ``Api.many`` takes it."""
    return ("POST", f"/api/v1/namespaces/bench/pods/{name}/binding",
            {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
             "target": {"apiVersion": "v1", "kind": "Node", "name": target}})


def podgroup(g: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": f"pg-{g:04d}", "namespace": "bench"},
            "spec": {"minMember": GANG, "queue": "default"}}


def crd(group: str, version: str, kind: str, plural: str, namespaced: bool) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced" if namespaced else "Cluster",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}},
                                   "subresources": {"status": {}}}]}}


CRDS = [crd("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", True),
        crd("scheduling.volcano.sh", "v1beta1", "Queue", "queues", False),
        crd("topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes", False),
        crd("batch.volcano.sh", "v1alpha1", "Job", "jobs", True),
        crd("bus.volcano.sh", "v1alpha1", "Command", "commands", True)]


async def watch_binds(api: Api, total: int, done: asyncio.Event, stamps: dict[str, float]) -> None:
    """Record when each pod of namespace bench is first seen bound."""
    listing = await api.call("GET", "/api/v1/namespaces/bench/pods")
    rv = listing["metadata"]["resourceVersion"]
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with api.session.get(f"{api.url}/api/v1/namespaces/bench/pods",
                               params={"watch": "1", "resourceVersion": rv}, timeout=timeout) as resp:
        while len(stamps) < total:
            line = await resp.content.readline()
            if not line:
                break
            ev = json.loads(line)
            obj = ev.get("object") or {}
            if (obj.get("spec") or {}).get("nodeName") and obj["metadata"]["name"].startswith("pod-"):
                stamps.setdefault(obj["metadata"]["name"], time.monotonic())
    done.set()


async def measure_arriving(api: Api, pods: int, scheduler: str, start: Any,
                           timeout: float) -> tuple[float, float, float]:
    """As ``measure``, with the scheduler started and warmed up first: the clock runs from the creation of the
    first pod to the last bind while the pods are created (32 in flight), as they arrive on a live cluster."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    stopper = await start()
    stamps: dict[str, float] = {}
    done = asyncio.Event()
    try:
        await warm_up(api, scheduler)
        await create_podgroups(api, pods, scheduler)  # as Volcano's job controller: the PodGroup before its pods
        watcher = asyncio.create_task(watch_binds(api, pods, done, stamps))
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        creator = asyncio.create_task(create_pods(api, pods, scheduler, groups=False))
        try:
            await _all_bound(done, timeout, stamps, pods)
        finally:
            watcher.cancel()
            await creator
    finally:
        if stopper is not None:
            stopper()
    return _rates(stamps, t0, pods, before)


async def plain_binder(url: str, nodes: int) -> None:
    """The bind ceiling for arriving pods, as its own process: watch namespace bench and post one
    ``pods/binding`` per new unbound pod, round robin over the nodes, 32 in flight."""
    api = Api(url)
    queue: asyncio.Queue[str] = asyncio.Queue()
    sent = 0

    async def worker() -> None:
        nonlocal sent
        while True:
            name = await queue.get()
            target = f"node-{sent % nodes:05d}"
            sent += 1
            await api.call(*binding(name, target), ok=(201, 409))

    workers = [asyncio.create_task(worker()) for _ in range(IN_FLIGHT)]
    listing = await api.call("GET", "/api/v1/namespaces/bench/pods")
    for item in listing["items"]:
        if not item["spec"].get("nodeName"):
            queue.put_nowait(item["metadata"]["name"])
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with api.session.get(f"{api.url}/api/v1/namespaces/bench/pods",
                               params={"watch": "1", "resourceVersion": listing["metadata"]["resourceVersion"]},
                               timeout=timeout) as resp:
        async for line in resp.content:
            ev = json.loads(line)
            obj = ev.get("object") or {}
            if ev.get("type") == "ADDED" and not (obj.get("spec") or {}).get("nodeName"):
                queue.put_nowait(obj["metadata"]["name"])
    for w in workers:
        w.cancel()
    await api.close()


async def clear_pods(api: Api) -> None:
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    await api.call("DELETE", "/api/v1/namespaces/bench/pods", body)
    await api.call("DELETE", "/apis/scheduling.volcano.sh/v1beta1/namespaces/bench/podgroups", None)
    while (await api.call("GET", "/api/v1/namespaces/bench/pods?limit=1"))["items"]:
        await asyncio.sleep(0.5)


async def settle(api: Api, etcd: str) -> None:
    """Every contender starts from the same server state: the Events the previous one wrote are deleted and
    etcd's history is compacted and defragmented (without it each contender runs on the garbage of those before
    it: deleted pods, thousands of Events, a growing database, and the later ones measured slower for it)."""
    await api.call("DELETE", "/api/v1/namespaces/bench/events", None)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.post(f"{etcd}/v3/kv/range", json={"key": "AA=="}) as resp:
            revision = (await resp.json())["header"]["revision"]
        for path, body in (("/v3/kv/compaction", {"revision": revision, "physical": True}),
                           ("/v3/maintenance/defragment", {})):
            async with session.post(etcd + path, json=body) as resp:
                if resp.status != 200:
                    raise RuntimeError(f"etcd {path}: {resp.status} {(await resp.text())[:200]}")
    await asyncio.sleep(2.0)


async def create_podgroups(api: Api, pods: int, scheduler: str) -> None:
    if scheduler == "volcano":
        await api.many([("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/bench/podgroups", podgroup(g))
                        for g in range((pods + GANG - 1) // GANG)])


async def create_pods(api: Api, pods: int, scheduler: str, *, groups: bool = True) -> None:
    if groups:
        await create_podgroups(api, pods, scheduler)
    await api.many([("POST", "/api/v1/namespaces/bench/pods", pod(i, scheduler)) for i in range(pods)])


async def warm_up(api: Api, scheduler: str, timeout: float = 120.0) -> None:
    """One pod of ``scheduler`` (in a PodGroup of one for volcano), created and waited for until bound, then
    deleted: the scheduler has started, listed the cluster and schedules."""
    meta: dict[str, Any] = {"name": "warm-up", "namespace": "bench"}
    if scheduler == "volcano":
        await api.call("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/bench/podgroups",
                       {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": "pg-warm-up", "namespace": "bench"},
                        "spec": {"minMember": 1, "queue": "default"}})
        meta["annotations"] = {"scheduling.k8s.io/group-name": "pg-warm-up"}
    body = pod(0, scheduler)
    body["metadata"] = meta
    await api.call("POST", "/api/v1/namespaces/bench/pods", body)
    deadline = time.monotonic() + timeout
    while not ((await api.call("GET", "/api/v1/namespaces/bench/pods/warm-up"))["spec"].get("nodeName")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{scheduler}: the warm-up pod was not bound within {timeout:.0f} s")
        await asyncio.sleep(0.05)
    await api.call("DELETE", "/api/v1/namespaces/bench/pods/warm-up",
                   {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})


async def _all_bound(done: asyncio.Event, timeout: float, stamps: dict[str, float], pods: int) -> None:
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except TimeoutError:
        print(f"  ... timed out with {len(stamps)}/{pods} bound", file=sys.stderr)


def _rates(stamps: dict[str, float], t0: float, pods: int, before: Any) -> tuple[float, float, float]:
    """(seconds from ``t0`` to the last bind, from the first bind to the last, both scaled to every pod when some
    were not bound in time; CPU seconds of the children since ``before``)."""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if not stamps:
        return float("nan"), float("nan"), cpu
    last, first = max(stamps.values()), min(stamps.values())
    return (last - t0) * pods / len(stamps), (last - first) * pods / len(stamps), cpu


async def measure(api: Api, pods: int, start: Any, timeout: float) -> tuple[float, float, float]:
    """(seconds from start to last bind, seconds from first to last bind, CPU seconds of the processes
    ``start`` spawned, until stopped); ``start`` begins the binding."""
    stamps: dict[str, float] = {}
    done = asyncio.Event()
    watcher = asyncio.create_task(watch_binds(api, pods, done, stamps))
    await asyncio.sleep(0.5)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    stopper = await start()
    try:
        await _all_bound(done, timeout, stamps, pods)
    finally:
        watcher.cancel()
        if stopper is not None:
            stopper()
    return _rates(stamps, t0, pods, before)


def installed_env() -> dict[str, str]:
    """The environment pumice runs in as installed: with its bytecode cache (``pip install`` compiles every
    module; a machine with ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile every module at each start,
    and a first run would compile what it imports late, the session's plugins), written once here, for the
    whole package, before any clock runs."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", "import compileall, os, pumice; "
                    "compileall.compile_dir(os.path.dirname(pumice.__file__), quiet=1)"], env=env, check=True)
    return env


def spawn(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> Any:
    out = open(log, "wb")  # noqa: SIM115 - closed by the stopper
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()

    return stop


CEILING, KUBE, PUMICE = "bind ceiling (plain async client)", "kube-scheduler v1.20.2", "pumice"
CEILING_AGAIN = "bind ceiling again (measured last)"
PENDING, ARRIVING = "pending", "arriving"


async def run_size(api: Api, url: str, etcd: str, kubeconfig: Path, work: Path, nodes: int, pods: int,
                   modes: list[str]) -> dict[tuple[str, str], tuple[float, float, float]]:
    print(f"{nodes} nodes x {pods} pods: creating nodes", file=sys.stderr, flush=True)
    existing = (await api.call("GET", "/api/v1/nodes"))["items"]
    have = {n["metadata"]["name"] for n in existing}
    await api.many([("POST", "/api/v1/nodes", node(i)) for i in range(nodes)
                    if node(i)["metadata"]["name"] not in have])
    extra = [n for n in have if int(n.split("-")[1]) >= nodes]
    await api.many([("DELETE", f"/api/v1/nodes/{n}", None) for n in extra])
    results: dict[tuple[str, str], tuple[float, float, float]] = {}
    env = installed_env()
    timeout = max(300.0, pods / 20)

    async def bind_all() -> None:
        await api.many([binding(f"pod-{i:05d}", f"node-{i % nodes:05d}") for i in range(pods)])

    async def start_ceiling_here() -> Any:
        task = asyncio.create_task(bind_all())
        return task.cancel

    async def start_binder() -> Any:
        return spawn([sys.executable, str(Path(__file__).resolve()), "--plain-binder", url, str(nodes)],
                     work / f"binder-{nodes}.log")

    async def start_kube() -> Any:
        return spawn([str(BIN / "kube-scheduler"), "--kubeconfig", str(kubeconfig), "--leader-elect=false",
                      "--kube-api-qps=5000", "--kube-api-burst=5000", "--port=0", "--secure-port=0", "-v=0"],
                     work / f"kube-scheduler-{nodes}.log")

    async def start_pumice() -> Any:
        return spawn([sys.executable, "-m", "pumice.cli.main", "run", "--kubeconfig", str(kubeconfig),
                      "--components", "scheduler"], work / f"pumice-{nodes}.log", env=env)

    contenders = [(CEILING, "none", start_ceiling_here, start_binder),
                  (KUBE, "default-scheduler", start_kube, start_kube),
                  (PUMICE, "volcano", start_pumice, start_pumice),
                  (CEILING_AGAIN, "none", start_ceiling_here, start_binder)]
    for mode in modes:
        for name, scheduler, start_pending, start_arriving in contenders:
            await settle(api, etcd)
            if mode == PENDING:
                await create_pods(api, pods, scheduler)
                result = await measure(api, pods, start_pending, timeout)
            else:
                result = await measure_arriving(api, pods, scheduler, start_arriving, timeout)
            results[(mode, name)] = result
            print(f"  {mode}: {name}: {pods / result[0]:.0f} pods/s", file=sys.stderr, flush=True)
            await clear_pods(api)
    return results


async def main_async(sizes: list[tuple[int, int]], work: Path, modes: list[str]
                     ) -> list[tuple[int, int, dict[tuple[str, str], tuple[float, float, float]]]]:
    port, etcd, _ = free_ports(3)
    env = {**os.environ, "KUBE120_TOKEN": TOKEN,
           "APISERVER_FLAGS": "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority"}
    state = work / "kube120"
    proc = subprocess.run(["bash", str(TOOLS / "start.sh"), str(state), str(port), str(etcd)],
                          capture_output=True, text=True, env=env, timeout=180)
    if proc.returncode != 0:
        raise SystemExit(f"kube-apiserver did not start: {proc.stderr.strip()[-500:]}")
    kubeconfig = Path(proc.stdout.strip().splitlines()[-1])
    url = f"https://127.0.0.1:{port}"
    api = Api(url)
    try:
        for c in CRDS:
            await api.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", c, ok=(201, 409))
        await api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "bench"}}, ok=(201, 409))
        for _ in range(100):
            try:
                await api.call("GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups")
                break
            except RuntimeError:
                await asyncio.sleep(0.2)
        out = []
        for nodes, pods in sizes:
            out.append((nodes, pods, await run_size(api, url, f"http://127.0.0.1:{etcd}", kubeconfig, work, nodes,
                                                    pods, modes)))
        return out
    finally:
        await api.close()
        subprocess.run(["bash", str(TOOLS / "stop.sh"), str(state)], capture_output=True, timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 nodes x 1,000 pods only")
    parser.add_argument("--mode", choices=[PENDING, ARRIVING, "both"], default="both",
                        help="pods pending before the scheduler starts, arriving at a running one, or both")
    parser.add_argument("--logs", type=Path, help="keep the schedulers' logs in this folder")
    parser.add_argument("--plain-binder", nargs=2, metavar=("URL", "NODES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_binder:
        asyncio.run(plain_binder(args.plain_binder[0], int(args.plain_binder[1])))
        return
    if not (BIN / "kube-apiserver").is_file() or not (BIN / "kube-scheduler").is_file():
        raise SystemExit(f"kube-apiserver/kube-scheduler 1.20 are not built in {BIN} ({TOOLS}/build.sh builds them)")
    modes = [PENDING, ARRIVING] if args.mode == "both" else [args.mode]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-kube-") as tmp:
        work = Path(tmp)
        if args.logs is not None:
            args.logs.mkdir(parents=True, exist_ok=True)
            work = args.logs
        rows = asyncio.run(main_async(QUICK if args.quick else SIZES, work, modes))
    load_after = os.getloadavg()[0]
    print(f"\npods bound per second on kube-apiserver v1.20.2 ({os.cpu_count()} cores; load average "
          f"{load_before:.1f} before, {load_after:.1f} after)\n")
    print(f"{'nodes x pods':>16} | {'pods':<8} | {'contender':<34} | {'pods/s':>7} | {'1st->last':>9} |"
          f" {'vs kube-sched':>13} | {'of ceiling':>10} | {'CPU s':>6}")
    print("-" * 126)
    for nodes, pods, results in rows:
        for mode in modes:
            ceiling = (pods / results[(mode, CEILING)][0] + pods / results[(mode, CEILING_AGAIN)][0]) / 2
            kube = pods / results[(mode, KUBE)][0]
            for name in (CEILING, CEILING_AGAIN, KUBE, PUMICE):
                span, first_last, cpu = results[(mode, name)]
                rate = pods / span
                used = f"{cpu:6.1f}" if cpu > 0 else f"{'-':>6}"
                print(f"{f'{nodes:,} x {pods:,}':>16} | {mode:<8} | {name:<34} | {rate:7.0f} |"
                      f" {pods / first_last:9.0f} | {rate / kube:12.1f}x | {rate / ceiling:9.0%} | {used}")
    print("\npods/s: pods / (last bind - clock start): pending: the clock starts with the scheduler, every pod "
          "already created;\narriving: the scheduler runs (a warm-up pod bound), the clock starts with the first "
          "pod's creation, pods are\ncreated 32 in flight; 1st->last: pods / (last bind - first bind); of ceiling: "
          "of the mean of the two\nceiling rows (measured first and last); CPU s: the scheduler process's user + "
          "system time from its\nstart until stopped after the last bind; before each row the Events of the one "
          "before are deleted and etcd\ncompacted and defragmented")


if __name__ == "__main__":
    main()
