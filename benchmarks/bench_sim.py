"""The simulator end to end: the openb default trace (8,152 pods on 1,523 nodes) through ``run_scenario``.

    python benchmarks/bench_sim.py                       # the full trace, and its first 2,000 pods
    python benchmarks/bench_sim.py --limit 2000          # only that row
    python benchmarks/bench_sim.py --trace-dir DIR       # the folder of the openb CSVs

What ``pumice sim --trace openb`` runs, without the report. Each row runs in its own process, so that its
peak memory (max RSS) is its own. "events" is the number of store writes (every one a watch event).

The part columns split the wall time among the parts of the cluster (exclusive times: a part's own work,
store writes included, without the other parts it calls): the scheduler's cycles (``run_once``), the
scheduler's watch sync into its live cache, controllers, kubelets, the recorder, the lazy-status demand
tracker, the trace's own writes (arrivals, garbage collection of finished pods) and the rest (the event
loop, fragmentation samples). Timing them costs a few percent; ``--no-parts`` leaves them out.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE_DIR = REPO.parent / "shared" / "data" / "openb"
SMALL = 2000
PARTS = ("run_once", "sched sync", "controllers", "kubelet", "recorder", "demand", "trace", "other")


class _Parts:
    """Exclusive wall time per part, by wrapping one method per part (a stack subtracts nested parts)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(PARTS, 0.0)
        self._stack: list[float] = []
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, part: str) -> None:
        inner = getattr(owner, name)
        stack, seconds = self._stack, self.seconds

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            stack.append(0.0)
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                nested = stack.pop()
                seconds[part] += spent - nested
                if stack:
                    stack[-1] += spent

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, inner))

    def install(self) -> None:
        import pumice.sim.engine as engine
        from pumice.nodes.kubelet import SimulatedKubelet
        from pumice.runtime.demand import Demand
        from pumice.scheduler.loop import SchedulerLoop
        from pumice.sim.recorder import Recorder

        self.wrap(SchedulerLoop, "run_once", "run_once")
        self.wrap(SchedulerLoop, "sync", "sched sync")
        self.wrap(SimulatedKubelet, "sync", "kubelet")
        self.wrap(Recorder, "sync", "recorder")
        self.wrap(Demand, "sync", "demand")
        self.wrap(engine, "_act", "trace")
        self.wrap(engine, "_gc", "trace")
        try:
            from pumice.controllers.manager import ControllerManager
        except ImportError:  # pragma: no cover - a tree without controllers
            return
        self.wrap(ControllerManager, "sync", "controllers")

    def uninstall(self) -> None:
        for undo in reversed(self._undo):
            undo()


def run_one(trace_dir: Path, limit: int | None, parts: bool) -> dict[str, Any]:
    from pumice.sim import load_trace, run_scenario

    scenario = load_trace("openb", trace_dir, "default", limit=limit)
    pods = sum(1 for action in scenario.timeline for obj in action.objects if obj.get("kind") == "Pod")
    timer = _Parts() if parts else None
    if timer is not None:
        timer.install()
    start = time.perf_counter()
    result = run_scenario(scenario)
    wall = time.perf_counter() - start
    if timer is not None:
        timer.uninstall()
    row: dict[str, Any] = {
        "pods": pods, "nodes": len(scenario.nodes), "wall_s": wall, "cycles": result.cycles,
        "events": int(result.cluster.store.resource_version), "errors": len(result.errors),
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if timer is not None:
        timer.seconds["other"] = wall - sum(v for k, v in timer.seconds.items() if k != "other")
        row["parts"] = timer.seconds
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace-dir", type=Path, default=DEFAULT_TRACE_DIR, help="folder of the openb CSVs")
    parser.add_argument("--limit", type=int, default=None, help="only a row of the first N pods")
    parser.add_argument("--no-parts", action="store_true", help="no per-part times (a pure wall time)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # "all" or a limit: run one row here
    args = parser.parse_args()
    if not (args.trace_dir / "openb_pod_list_default.csv").is_file():
        parser.error(f"{args.trace_dir}: no openb_pod_list_default.csv there (use --trace-dir)")
    if args.one is not None:
        limit = None if args.one == "all" else int(args.one)
        print(json.dumps(run_one(args.trace_dir, limit, parts=not args.no_parts)))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="pumice sim: the openb default trace (virtual time, default Volcano conf)")
    cols = ["pods", "nodes", "wall s", "cycles", "events", "peak MiB"]
    if not args.no_parts:
        cols += [f"{p} s" for p in PARTS]
    for col in cols:
        table.add_column(col, justify="right")
    rows = [str(args.limit)] if args.limit is not None else ["all", str(SMALL)]
    for one in rows:
        cmd = [sys.executable, __file__, "--trace-dir", str(args.trace_dir), "--one", one,
               *(["--no-parts"] if args.no_parts else [])]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        cells = [f"{r['pods']:,}", f"{r['nodes']:,}", f"{r['wall_s']:.2f}", f"{r['cycles']:,}", f"{r['events']:,}",
                 f"{r['peak_mib']:.0f}"]
        if "parts" in r:
            cells += [f"{r['parts'][p]:.2f}" for p in PARTS]
        table.add_row(*cells)
    Console(width=max(Console().width, 160)).print(table)


if __name__ == "__main__":
    main()
